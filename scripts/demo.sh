#!/usr/bin/env bash
# Set up, build (release) and run loom's main job: list the devices, then
# generate text with the tiny llama model (../shared/models/stories260K.gguf,
# or $LOOM_MODEL) on the CPU device (or the device named in LOOM_DEVICES).
# Extra arguments go to `loom run`, e.g. scripts/demo.sh -p "Once upon" -n 50
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "${LOOM_JOBS:-$(nproc)}"
echo
./build/release/bin/loom devices
echo
model="${LOOM_MODEL:-${LOOM_MODELS_DIR:-../shared/models}/stories260K.gguf}"
if [ ! -f "$model" ]; then
  echo "demo: no model at $model" >&2
  echo "demo: put stories260K.gguf (https://huggingface.co/ggml-org/models, tinyllamas/stories260K.gguf)" >&2
  echo "demo: in ../shared/models, or set LOOM_MODEL=/path/to/model.gguf" >&2
  exit 1
fi
echo "== loom run -m $model --device ${LOOM_DEVICES:-cpu} -n 120 $*"
./build/release/bin/loom run -m "$model" --device "${LOOM_DEVICES:-cpu}" -n 120 "$@"
