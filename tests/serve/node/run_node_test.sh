#!/usr/bin/env bash
# ctest serve.openai_node_client: the OpenAI Node client against `loom serve`
# (openai_client_test.mjs). Exit 77 (ctest: skipped) with the reason when
# node, the installed `openai` package (npm ci here) or the model is absent.
# Usage: run_node_test.sh LOOM_BINARY MODEL.gguf
set -u
here=$(cd "$(dirname "$0")" && pwd)
loom=${1:?usage: run_node_test.sh LOOM_BINARY MODEL.gguf}
model=${2:?usage: run_node_test.sh LOOM_BINARY MODEL.gguf}
# LOOM_MODELS_DIR overrides the folder at run time, as for the other tests.
if [ -n "${LOOM_MODELS_DIR:-}" ]; then model="$LOOM_MODELS_DIR/$(basename "$model")"; fi
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node not found (apt-get install nodejs npm, then 'npm ci' in $here)"
  exit 77
fi
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 18 ]; then
  echo "SKIP: node $(node --version) is older than 18 (node:test and fetch are needed)"
  exit 77
fi
if [ ! -f "$here/node_modules/openai/package.json" ]; then
  echo "SKIP: the openai package is not installed: run 'npm ci' in $here (scripts/test.sh does)"
  exit 77
fi
if [ ! -f "$model" ]; then
  echo "SKIP: model $model not found (set LOOM_MODELS_DIR or put stories260K.gguf in ../shared/models)"
  exit 77
fi
exec node "$here/openai_client_test.mjs" "$loom" "$model"
