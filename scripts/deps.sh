#!/usr/bin/env bash
# Install (or name) the Debian packages loom needs to build and test.
# Usage: scripts/deps.sh [extra-package ...]
# As root with apt-get: installs what is missing. Otherwise: prints the exact
# command to run and exits 1.
set -euo pipefail

packages=(build-essential cmake libgtest-dev libopenblas-dev nlohmann-json3-dev "$@")
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all present (${packages[*]})"
  exit 0
fi

echo "deps: missing Debian packages: ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: apt-get not found; install the equivalents of: ${missing[*]}" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo apt-get update -q
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
else
  echo "deps: run as root: apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
