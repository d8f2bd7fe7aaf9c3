#!/usr/bin/env bash
# What the cuda plugin asks of a GPU per decode step, counted without one:
# the plugin's objects linked against tests/cuda/fake_runtime/fake_cudart.cpp (kernels
# counted, not run; host memory) with tests/cuda/fake_libcuda.c as the
# driver. stories260K greedy on cuda0 for 8 and for 24 tokens: the
# difference is 16 decode steps. With CUDA graphs (the default) a step must
# be one graph launch, no eager kernel, no allocation, no new capture, one
# stream synchronisation and one blocking copy (the logits); without
# graphs it launches exactly the kernels the capture recorded, and
# LOOM_CUDA_FUSE=0 launches one kernel more for every fused norm.
# Usage: fake_runtime_test.sh LOOM FAKE_PLUGIN_DIR FAKE_LIBCUDA MODELS_DIR
set -euo pipefail
loom=$1 plugin_dir=$2 libcuda=$3 models=${LOOM_MODELS_DIR:-$4}
model="$models/stories260K.gguf"
[ -f "$model" ] || { echo "SKIP: $model not found (set LOOM_MODELS_DIR)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# counts N [ENV=VALUE...]: the fake runtime's counters after N tokens.
counts() {
  local n=$1
  shift
  rm -f "$work/log"
  if ! env LOOM_PLUGIN_PATH="$plugin_dir" LOOM_PLUGINS_SELECT='cuda,cpu*' LOOM_CUDA_DRIVER="$libcuda" \
      LOOM_FAKE_CUDA_INIT=0 LOOM_FAKE_CUDA_DEVICES=1 LOOM_FAKE_CUDART_LOG="$work/log" LOOM_CUDA_CUBLAS=off \
      LOOM_CACHE_DIR="$work/cache" "$@" "$loom" run -m "$model" --device cuda0 -p "Once upon a time" --temp 0 \
      -n "$n" > "$work/out" 2>&1; then
    cat "$work/out"
    echo "FAIL: loom run on the fake runtime failed" >&2
    exit 1
  fi
  grep -q "device cuda0" "$work/out" || { cat "$work/out"; echo "FAIL: not run on cuda0" >&2; exit 1; }
  # The last line is loom's own (the registry's probe children load the
  # plugin too, and exit first).
  tail -n 1 "$work/log"
}

# get KEY LINE
get() { sed -E "s/.*(^| )$1=([0-9]+).*/\2/" <<< "$2"; }

fail=0
# check WHAT GOT WANT: equality
check() {
  if [ "$2" != "$3" ]; then
    echo "FAIL: $1: $2 per 16 steps, expected $3"
    fail=1
  else
    echo "ok: $1: $2 per 16 steps"
  fi
}
# at_most WHAT GOT MAX
at_most() {
  if [ "$2" -gt "$3" ]; then
    echo "FAIL: $1: $2 per 16 steps, expected at most $3"
    fail=1
  else
    echo "ok: $1: $2 per 16 steps (at most $3)"
  fi
}

a=$(counts 8)
b=$(counts 24)
echo "graphs on,  8 tokens: $a"
echo "graphs on, 24 tokens: $b"
d() { echo $(( $(get "$1" "$b") - $(get "$1" "$a") )); }
check "eager kernel launches (graphs on)" "$(d launches)" 0
check "kernels captured (a capture per step would show here)" "$(d captured)" 0
check "graph instantiations" "$(d instantiations)" 0
check "graph launches" "$(d graph_launches)" 16
check "allocations" "$(d allocs)" 0
check "frees" "$(d frees)" 0
check "device synchronisations" "$(d device_syncs)" 0
check "event synchronisations" "$(d event_syncs)" 0
at_most "stream synchronisations" "$(d stream_syncs)" 16
check "queued device-to-host copies (the fault word, read at synchronize)" "$(d copies_d2h)" 16
# The step's inputs are queued on the stream (the scheduler's set_input:
# cudaMemcpyAsync from memory the run holds); the one blocking copy left is
# the logits' read (get_tensor).
check "blocking copies (the logits)" "$(d copies_sync)" 16
captured=$(get captured "$a")
[ "$captured" -gt 0 ] || { echo "FAIL: the first run captured no kernels"; fail=1; }

c=$(counts 8 LOOM_CUDA_GRAPHS=0)
e=$(counts 24 LOOM_CUDA_GRAPHS=0)
echo "graphs off,  8 tokens: $c"
echo "graphs off, 24 tokens: $e"
launches=$(( $(get launches "$e") - $(get launches "$c") ))
check "eager kernel launches (graphs off: the captured graph's $captured per step)" "$launches" $(( 16 * captured ))
check "graph launches (graphs off)" "$(( $(get graph_launches "$e") - $(get graph_launches "$c") ))" 0
check "allocations (graphs off)" "$(( $(get allocs "$e") - $(get allocs "$c") ))" 0

# Fusion (plugins/cuda/ops/fusion.h): each norm and its MUL by the weight
# run as one kernel, each residual ADD runs in the store of the GEMV before
# it, gate and up run in one GEMV grid, and Q's and K's ROPEs run in one
# kernel that also stores K and V into the cache (one kernel for the two
# ROPEs and the two SET_ROWS), and the split ATTENTION's last block combines
# (no combine kernel). stories260K has 5 layers: per step 2 norms a layer
# and the output norm (11), one grid for gate and up (5), three kernels of
# the four RoPE and store nodes a layer (15) and the combine (5), so
# LOOM_CUDA_FUSE=0 launches 36 more kernels a step. No residual
# ADD fuses here: the FFN's down projection (K = 172 not a multiple of 8)
# runs on the exact kernel, which has no fused store, and the allocator
# gives the sum after the attention output the memory of that product's B
# (the attention's result, dead after it), which the float GEMV reads while
# other blocks would write the sum (fused, it garbled the text on the
# emulated plugin; a quantized A's GEMV reads B's 8-bit copy and keeps the
# fused ADD). (Its weights are F32: no rounding of B to move.)
f=$(counts 8 LOOM_CUDA_GRAPHS=0 LOOM_CUDA_FUSE=0)
g=$(counts 24 LOOM_CUDA_GRAPHS=0 LOOM_CUDA_FUSE=0)
unfused=$(( $(get launches "$g") - $(get launches "$f") ))
check "kernels saved by fusion (36 per step)" "$(( unfused - launches ))" $(( 16 * 36 ))

# Where the weights go (the llama loader with the plugin's loom.weight_layout
# and the joined Q, K and V), on cuda0 alone and with a cpu host
# (every layer offloaded): a random-weight Q4_0 llama from
# tools/make_arch_gguf.py, its Q4_0 matrices in cuda0_weights either way.
maker="$(cd "$(dirname "$0")/../../.." && pwd)/tools/make_arch_gguf.py"
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  q4="$work/tiny-q4_0.gguf"
  /usr/bin/python3 "$maker" --arch llama --tokenizer-from "$model" --type q4_0 --dim 64 --layers 2 --heads 4 \
    --ffn 128 "$q4" > /dev/null
  for devices in cuda0 cuda0,cpu; do
    out=$(env LOOM_PLUGIN_PATH="$plugin_dir" LOOM_PLUGINS_SELECT='cuda,cpu*' LOOM_CUDA_DRIVER="$libcuda" \
      LOOM_FAKE_CUDA_INIT=0 LOOM_FAKE_CUDA_DEVICES=1 LOOM_CUDA_CUBLAS=off LOOM_CACHE_DIR="$work/cache" \
      LOOM_LOG=llm:debug "$loom" run -m "$q4" --device "$devices" -p "Once" -n 2 2>&1) || { echo "$out"; fail=1; }
    # 2 joined Q, K, V + 2 x (output, gate, up, down) + the output head.
    if grep -q "11 weights (.*) in cuda0_weights, cuda0's own layout" <<< "$out" &&
       grep -q "2 layers' Q, K and V joined" <<< "$out"; then
      echo "ok: --device $devices: Q4_0 matrices in cuda0_weights, Q, K and V joined"
    else
      echo "$out" | grep "llm" ; echo "FAIL: --device $devices: weights not in cuda0's own layout or not joined"
      fail=1
    fi
  done
else
  echo "skipped: where the weights go (python3-numpy missing for tools/make_arch_gguf.py)"
fi
exit $fail
