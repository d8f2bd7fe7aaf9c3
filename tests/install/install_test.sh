#!/bin/sh
# The relocatable install, tried as a new user would: `cmake --install` into
# a fresh prefix that is not the configured one, then bin/loom from there.
#   install_test.sh install BUILD_DIR PREFIX     install (the fixture)
#   install_test.sh devices PREFIX               loom devices: cpu ready, from PREFIX
#   install_test.sh run PREFIX MODELS_DIR        loom run: the tiny model's text
#   install_test.sh pkgconfig PREFIX WORK       an application built with
#                                                `pkg-config --cflags --libs loom` lists cpu
#   install_test.sh example-build PREFIX SRC BUILD   configure and build examples/plugin
#                                                against PREFIX only (find_package)
#   install_test.sh example-mix BUILD            its mix_check: example0 next to cpu
#   install_test.sh example-conformance PREFIX BUILD   PREFIX/bin/loom conformance
#                                                --plugin BUILD/libloom-example.so
# Exit 77 (ctest SKIP_RETURN_CODE) when the model is absent, with the reason.
set -u
mode=$1
# A sanitized loom (LOOM_TEST_SANITIZE, e.g. address,undefined) installs
# sanitized libraries: what is built against it here takes the same flags.
san=${LOOM_TEST_SANITIZE:-}
san_flags=${san:+-fsanitize=$san}
fail() { echo "FAIL: $*" >&2; exit 1; }
# Only the prefix may provide plugins: no search path from the environment.
unset LOOM_PLUGIN_PATH LOOM_PLUGINS_SELECT LOOM_PLUGINS_DISABLE LOOM_DEVICES LOOM_MODEL

case "$mode" in
install)
  build=$2 prefix=$3
  rm -rf "$prefix"
  mkdir -p "$(dirname "$prefix")"
  cmake --install "$build" --prefix "$prefix" >"$prefix.log" 2>&1 || { cat "$prefix.log"; fail "cmake --install $build --prefix $prefix"; }
  for f in bin/loom lib/libloom.so lib/loom/libloom-cpu.so lib/loom/loom-probe include/loom/plugin.h \
           include/loom/sched/scheduler.hpp include/loom/sdk/loom/plugin.h include/loom/sdk/common/glue.h \
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
pkgconfig)
  prefix=$2 work=$3
  command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: pkg-config is not installed (apt-get install pkg-config)"; exit 77; }
  flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs loom) || fail "pkg-config loom"
  mkdir -p "$work"
  cat >"$work/pc_app.cpp" <<'APP'
#include <cstdio>
#include "loom/registry/registry.hpp"
#include "loom/sched/scheduler.hpp"
int main() {
  auto reg = loom::registry::Registry::load();
  for (auto* d : reg->devices()) std::printf("%s\n", d->name().c_str());
  return reg->device("cpu") != nullptr ? 0 : 1;
}
APP
  # shellcheck disable=SC2086
  c++ -std=c++17 $san_flags "$work/pc_app.cpp" $flags -o "$work/pc_app" || fail "an application did not build with pkg-config loom ($flags)"
  "$work/pc_app" || fail "the pkg-config application found no cpu device"
  echo "ok: built with pkg-config loom, found cpu"
  ;;
example-build)
  prefix=$2 src=$3 build=$4
  rm -rf "$build"
  mkdir -p "$(dirname "$build")"
  # Only the prefix: no loom source or build folder on any path.
  # The compiler that built loom (LOOM_TEST_CXX): a sanitized plugin runs in
  # loom's process, whose sanitizer runtime it must share.
  cmake -S "$src" -B "$build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    ${LOOM_TEST_CXX:+-DCMAKE_CXX_COMPILER="$LOOM_TEST_CXX"} \
    -DCMAKE_CXX_FLAGS="$san_flags" -DCMAKE_EXE_LINKER_FLAGS="$san_flags" -DCMAKE_MODULE_LINKER_FLAGS="$san_flags" \
    >"$build.log" 2>&1 &&
    cmake --build "$build" -j2 >>"$build.log" 2>&1 || { cat "$build.log"; fail "examples/plugin did not build against $prefix"; }
  [ -f "$build/libloom-example.so" ] || fail "no $build/libloom-example.so"
  echo "built $build/libloom-example.so against $prefix"
  ;;
example-mix)
  build=$2
  "$build/mix_check" "$build/libloom-example.so" || fail "mix_check"
  ;;
example-conformance)
  prefix=$2 build=$3
  "$prefix/bin/loom" conformance --plugin "$build/libloom-example.so" || fail "loom conformance failed the example plugin"
  ;;
*) fail "unknown mode $mode" ;;
esac
