#!/usr/bin/env bash
# Install (or name) the Debian packages loom needs to build and test.
# Usage: scripts/deps.sh [extra-package ...]
# As root with apt-get: installs what is missing. Otherwise: prints the exact
# command to run and exits 1.
set -euo pipefail

# libcpp-httplib-dev: loom serve's HTTP library; nodejs and npm: the OpenAI
# Node client test of loom serve (tests/serve/node); openmpi-bin and
# libopenmpi-dev: the mpi plugin, `loom worker` and the mpirun tests (tests/mpi).
packages=(build-essential cmake libgtest-dev libopenblas-dev nlohmann-json3-dev libcpp-httplib-dev nodejs npm
  openmpi-bin libopenmpi-dev "$@")
missing=()
for p in "${packages[@]}"; do
  # A node installed otherwise (NodeSource's nodejs package carries its own
  # npm and conflicts with Debian's npm package) is as good.
  if [ "$p" = nodejs ] && command -v node >/dev/null 2>&1; then continue; fi
  if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
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
