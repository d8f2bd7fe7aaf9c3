#!/usr/bin/env bash
# Set up, build (release) and run loom: list the devices and run a graph on
# the CPU device (or the device named in LOOM_DEVICES).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
echo
./build/release/bin/loom devices
echo
./build/release/bin/loom check --device "${LOOM_DEVICES:-cpu}"
