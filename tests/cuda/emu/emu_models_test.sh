#!/usr/bin/env bash
# Models on the emulated cuda0 (tests/cuda/emu: the cuda plugin's kernels
# run on the host): random-weight files of several architectures and weight
# types from tools/make_arch_gguf.py, each greedy for 12 tokens on cuda0 and
# on the cpu; the texts must be equal. The llama Q4_0 file also runs with
# each of the plugin's switches off (fusion, the split weight layout, the
# joined Q/K/V, CUDA graphs) and split across cuda0 and the cpu: every path
# the next GPU check measures gives the CPU's text first.
# Usage: emu_models_test.sh LOOM EMU_PLUGIN_DIR FAKE_LIBCUDA MODELS_DIR
set -euo pipefail
loom=$1 plugin_dir=$2 libcuda=$3 models=${LOOM_MODELS_DIR:-$4}
tok="$models/stories260K.gguf"
[ -f "$tok" ] || { echo "SKIP: $tok not found (set LOOM_MODELS_DIR)"; exit 77; }
/usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "SKIP: python3-numpy missing (tools/make_arch_gguf.py)"; exit 77; }
maker="$(cd "$(dirname "$0")/../../.." && pwd)/tools/make_arch_gguf.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The emulated plugin's environment.
emu_env=(env LOOM_PLUGIN_PATH="$plugin_dir" LOOM_PLUGINS_SELECT='cuda,cpu*' LOOM_CUDA_DRIVER="$libcuda"
  LOOM_FAKE_CUDA_INIT=0 LOOM_FAKE_CUDA_DEVICES=1 LOOM_CUDA_CUBLAS=off LOOM_CACHE_DIR="$work/cache")

# gen FILE DEVICES [ENV=VALUE...]: the greedy text.
gen() {
  local file=$1 devices=$2
  shift 2
  "${emu_env[@]}" "$@" "$loom" run -m "$file" --device "$devices" -p "Once upon a time" --temp 0 -n 12 \
    2>"$work/err" || { cat "$work/err" >&2; echo "(loom run failed)"; }
  grep -q "device $devices" "$work/err" || echo "(not run on $devices: $(tail -n 1 "$work/err"))"
}

fail=0
# model NAME ARGS...: make it, compare cuda0 with the cpu.
model() {
  local name=$1
  shift
  /usr/bin/python3 "$maker" --tokenizer-from "$tok" --seed 7 "$@" "$work/$name.gguf" > /dev/null
  want=$(gen "$work/$name.gguf" cpu)
  got=$(gen "$work/$name.gguf" cuda0)
  if [ "$got" == "$want" ]; then
    echo "ok: $name on cuda0"
  else
    printf 'FAIL: %s on cuda0\n  cpu:   %q\n  cuda0: %q\n' "$name" "$want" "$got"
    fail=1
  fi
}

model llama-q4_0 --arch llama --type q4_0 --dim 128 --layers 2 --heads 4 --kv-heads 2 --ffn 256
model llama-q8_0 --arch llama --type q8_0 --dim 128 --layers 2 --heads 4 --ffn 256
model llama-f16 --arch llama --type f16 --dim 128 --layers 2 --heads 4 --ffn 256
model mixtral-q4_0 --arch mixtral --type q4_0 --dim 64 --layers 2 --heads 4 --ffn 128 --experts 4 --experts-used 2
model qwen3-f32 --arch qwen3 --type f32 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128
model gemma2-f16 --arch gemma2 --type f16 --dim 64 --layers 2 --heads 4 --ffn 128
model phi3-q8_0 --arch phi3 --type q8_0 --dim 64 --layers 2 --heads 4 --ffn 128

q4="$work/llama-q4_0.gguf"
want=$(gen "$q4" cpu)
for e in LOOM_CUDA_FUSE=0 LOOM_CUDA_REPACK=0 LOOM_QKV_JOIN=0 LOOM_CUDA_GRAPHS=0; do
  got=$(gen "$q4" cuda0 "$e")
  if [ "$got" == "$want" ]; then echo "ok: llama-q4_0 on cuda0 with $e"; else echo "FAIL: llama-q4_0 with $e: $got"; fail=1; fi
done
got=$("${emu_env[@]}" "$loom" run -m "$q4" --device cuda0,cpu --n-gpu-layers 1 -p "Once upon a time" --temp 0 -n 12 \
  2>"$work/err" || true)
grep -q "devices cuda0,cpu; 1/2 layers on cuda0" "$work/err" || got="(not run on cuda0,cpu)"
if [ "$got" == "$want" ]; then echo "ok: llama-q4_0 on cuda0,cpu (1 layer on cuda0)"; else echo "FAIL: llama-q4_0 on cuda0,cpu: $got"; fail=1; fi
exit $fail
