#!/usr/bin/env bash
# Fuzz the GGUF reader with libFuzzer for a bounded time (default 60 s).
# Needs clang (apt-get install clang). Usage: scripts/fuzz.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
if ! command -v clang++ >/dev/null 2>&1; then
  scripts/deps.sh clang
fi
CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLOOM_BUILD_FUZZ=ON -DLOOM_BUILD_TESTS=OFF >/dev/null
cmake --build build/fuzz --target gguf_fuzz -j "${LOOM_JOBS:-$(nproc)}"
corpus=build/fuzz/corpus
mkdir -p "$corpus"
# Seeds: the valid files the GGUF tests write, plus the metadata of the tiny model.
if [ -x build/release/bin/test_gguf ]; then
  LOOM_GGUF_SEED_DIR="$corpus" build/release/bin/test_gguf --gtest_filter='*WriteFuzzSeeds*' >/dev/null || true
fi
model="${LOOM_MODELS_DIR:-../shared/models}/stories260K.gguf"
if [ -f "$model" ]; then head -c 16384 "$model" > "$corpus/stories260K-head.gguf"; fi
echo "fuzz: running gguf_fuzz for ${secs} s"
build/fuzz/bin/gguf_fuzz -max_total_time="$secs" -rss_limit_mb=2048 "$corpus"
