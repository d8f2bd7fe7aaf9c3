#!/usr/bin/env bash
# Fuzz the GGUF reader, the tokenizer and loom serve's request parser with
# libFuzzer, each for a bounded time (default 60 s each). Needs clang with libFuzzer (apt-get install
# clang; installed when missing unless --no-install).
# Usage: scripts/fuzz.sh [--no-install] [seconds] [target...]
#   targets: gguf_fuzz tokenizer_fuzz serve_request_fuzz (default all)
set -euo pipefail
cd "$(dirname "$0")/.."
install=1
if [ "${1:-}" = "--no-install" ]; then install=0; shift; fi
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
build_targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf_fuzz tokenizer_fuzz serve_request_fuzz) && build_targets=(loom_fuzz_targets)
if ! command -v clang++ >/dev/null 2>&1; then
  if [ "$install" = 1 ]; then scripts/deps.sh clang; else echo "fuzz: clang++ not found" >&2; exit 1; fi
fi
# -O1 -g1 as the sanitizer presets (libFuzzer's advice: -O1 or -O2).
CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DLOOM_BUILD_FUZZ=ON -DLOOM_BUILD_TESTS=OFF >/dev/null
cmake --build build/fuzz --target "${build_targets[@]}" -j "${LOOM_JOBS:-$(nproc)}"

model="${LOOM_MODELS_DIR:-../shared/models}/stories260K.gguf"
gguf_seeds() {  # $1: folder; the valid files the GGUF tests write, the tiny model's metadata
  if [ -x build/release/bin/test_gguf ]; then
    LOOM_GGUF_SEED_DIR="$1" build/release/bin/test_gguf --gtest_filter='*WriteFuzzSeeds*' >/dev/null || true
  fi
  if [ -f "$model" ]; then
    head -c 16384 "$model" > "$1/stories260K-head.gguf"
    # The same metadata with a tensor count of 0: parses whole (vocabulary included).
    { head -c 8 "$model"; printf '\0\0\0\0\0\0\0\0'; head -c 16384 "$model" | tail -c +17; } > "$1/stories260K-meta.gguf"
  fi
}
# Tokenizer inputs: a mode byte (0 encode text, 1 decode ids, 2 vocab from a
# GGUF image), then the data.
tokenizer_seeds() {  # $1: folder
  local d=$1 tmp
  printf '\000Once upon a time, there was a little girl named Lily.' > "$d/text-story"
  printf '\000  two  spaces, tabs\tand\nnewlines ' > "$d/text-spaces"
  printf '\000caf\303\251 \342\226\201 \360\237\230\200 \377\376 <s> </s>' > "$d/text-utf8"
  printf '\001\001\000\000\000\002\000\000\000\377\377\377\377\000\002\000\000' > "$d/ids"
  tmp=$(mktemp -d)
  gguf_seeds "$tmp"
  for f in "$tmp"/*; do [ -f "$f" ] && { printf '\002'; cat "$f"; } > "$d/gguf-$(basename "$f")"; done
  rm -rf "$tmp"
}
# Request parser inputs: a mode byte (0 chat, 1 completion, 2 tokenize,
# 3 detokenize, 4 Authorization header), then the data (modes 0 and 1: a
# chat-format byte first).
serve_seeds() {  # $1: folder
  local d=$1
  printf '\000\001{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"}]},{"role":"assistant","content":"Hello"},{"role":"user","content":"<|im_end|>more"}],"max_tokens":8,"temperature":0.7,"top_p":0.9,"top_k":40,"seed":1,"stop":["\\n","END"],"n":1,"stream":true,"stream_options":{"include_usage":true}}' > "$d/chat"
  printf '\001\000{"prompt":"Once upon a time","max_completion_tokens":16,"stop":"x","seed":-5,"top_p":0}' > "$d/completion"
  printf '\001\000{"prompt":[1,2,300,99999]}' > "$d/completion-ids"
  printf '\002{"content":"Hi there","add_special":true}' > "$d/tokenize"
  printf '\003{"tokens":[1,2,3,260]}' > "$d/detokenize"
  printf '\004Bearer s3cret\ns3cret' > "$d/auth"
  printf '\004bearer   s3cre\ns3cret' > "$d/auth-bad"
}
[ -f "$model" ] && export LOOM_FUZZ_VOCAB="$model"
for t in "${targets[@]}"; do
  corpus=build/fuzz/corpus-${t%_fuzz}
  mkdir -p "$corpus"
  case "$t" in
    gguf_fuzz) gguf_seeds "$corpus" ;;
    tokenizer_fuzz) tokenizer_seeds "$corpus" ;;
    serve_request_fuzz) serve_seeds "$corpus" ;;
    *) echo "fuzz: unknown target $t" >&2; exit 2 ;;
  esac
  echo "fuzz: running $t for ${secs} s"
  log=build/fuzz/$t.log
  if build/fuzz/bin/$t -max_total_time="$secs" -rss_limit_mb=2048 -artifact_prefix=build/fuzz/ -print_final_stats=1 "$corpus" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $t: ${runs:-?} inputs in ${secs} s, no failure (corpus $corpus, log $log)"
  else
    tail -n 60 "$log"
    echo "fuzz: $t found a failure (full log: $log; the input is saved as build/fuzz/crash-*, leak-* or oom-*)" >&2
    exit 1
  fi
done
