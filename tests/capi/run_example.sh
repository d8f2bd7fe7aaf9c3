#!/bin/sh
# Runs an example application (examples/app-c, examples/app-cpp) on
# stories260K: its greedy text must be the model author's published text and
# byte-identical to `loom run`'s; a missing model file must fail with a
# message naming it. Exit 77 (skip) when the model is absent.
# usage: run_example.sh APP LOOM MODELS_DIR   ($LOOM_MODELS_DIR wins when set)
set -u
app=$1 loom=$2 model=${LOOM_MODELS_DIR:-$3}/stories260K.gguf
if [ ! -f "$model" ]; then
  echo "skip: model not found: $model"
  exit 77
fi
unset LOOM_DEVICES LOOM_PLUGINS_SELECT LOOM_PLUGINS_DISABLE LOOM_CPU_VARIANT LOOM_LOG
published='Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.'
out=$("$app" "$model" cpu "" 80) || { echo "FAIL: $app exited $?: $out"; exit 1; }
case "$out" in
  "$published"*) ;;
  *) echo "FAIL: not the published text: $out"; exit 1 ;;
esac
want=$("$loom" run -m "$model" -n 80 --device cpu 2>/dev/null) || { echo "FAIL: loom run failed"; exit 1; }
if [ "$out" != "$want" ]; then
  printf 'FAIL: differs from loom run\n app: %s\nloom: %s\n' "$out" "$want"
  exit 1
fi
err=$("$app" /nonexistent/model.gguf 2>&1 >/dev/null) && { echo "FAIL: a missing model succeeded"; exit 1; }
case "$err" in
  *"/nonexistent/model.gguf"*) ;;
  *) echo "FAIL: the error does not name the file: $err"; exit 1 ;;
esac
err=$("$app" "$model" nosuchdevice9 2>&1 >/dev/null) && { echo "FAIL: a bad device name succeeded"; exit 1; }
case "$err" in
  *nosuchdevice9*) ;;
  *) echo "FAIL: the error does not name the device: $err"; exit 1 ;;
esac
echo "$out"
