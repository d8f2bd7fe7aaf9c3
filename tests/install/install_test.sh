#!/bin/sh
# The relocatable install, tried as a new user would: `cmake --install` into
# a fresh prefix that is not the configured one, then bin/loom from there.
#   install_test.sh install BUILD_DIR PREFIX     install (the fixture)
#   install_test.sh devices PREFIX               loom devices: cpu ready, from PREFIX
#   install_test.sh run PREFIX MODELS_DIR        loom run: the tiny model's text
# Exit 77 (ctest SKIP_RETURN_CODE) when the model is absent, with the reason.
set -u
mode=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
# Only the prefix may provide plugins: no search path from the environment.
unset LOOM_PLUGIN_PATH LOOM_PLUGINS_SELECT LOOM_PLUGINS_DISABLE LOOM_DEVICES LOOM_MODEL

case "$mode" in
install)
  build=$2 prefix=$3
  rm -rf "$prefix"
  cmake --install "$build" --prefix "$prefix" >"$prefix.log" 2>&1 || { cat "$prefix.log"; fail "cmake --install $build --prefix $prefix"; }
  for f in bin/loom lib/libloom.so lib/loom/libloom-cpu.so lib/loom/loom-probe include/loom/plugin.h \
           include/loom/scheduler.hpp include/loom/sdk/loom/plugin.h include/loom/sdk/common/glue.h \
           lib/cmake/loom/loomConfig.cmake lib/pkgconfig/loom.pc lib/libloom_plugin_common.a; do
    [ -e "$prefix/$f" ] || fail "$f is not installed under $prefix"
  done
  [ ! -e "$prefix/lib/loom/libloom-null.so" ] || fail "the null test skeleton was installed"
  echo "installed into $prefix"
  ;;
devices)
  prefix=$2
  out=$("$prefix/bin/loom" devices 2>&1) || { echo "$out"; fail "$prefix/bin/loom devices exited $?"; }
  echo "$out"
  echo "$out" | grep -Eq "^ *cpu[-a-z0-9]* +ready +$prefix/lib/loom/libloom-cpu" || fail "the cpu plugin of $prefix/lib/loom is not ready"
  echo "$out" | grep -q "libloom-null" && fail "a null plugin file was found"
  # Every plugin file listed lives in the prefix (nothing from the build tree).
  stray=$(echo "$out" | grep -o "/[^ ]*/libloom-[^ ]*\.so" | grep -v "^$prefix/lib/loom/")
  [ -z "$stray" ] || fail "plugin files from outside $prefix: $stray"
  echo "ok: cpu ready from $prefix/lib/loom"
  ;;
run)
  prefix=$2 models=${LOOM_MODELS_DIR:-$3}
  model=$models/stories260K.gguf
  if [ ! -f "$model" ]; then echo "SKIP: $model is absent (set LOOM_MODELS_DIR)"; exit 77; fi
  out=$("$prefix/bin/loom" run -m "$model" -n 40 --device cpu 2>"$prefix.run.err") || { cat "$prefix.run.err"; fail "loom run exited $?"; }
  echo "$out"
  case "$out" in
    "Once upon a time, there was a little girl named Lily."*) echo "ok: the published text" ;;
    *) fail "loom run from $prefix did not print the model's published text" ;;
  esac
  ;;
*) fail "unknown mode $mode" ;;
esac
