#!/bin/sh
# Builds an example application (examples/app-c, examples/app-cpp) from its
# own folder against an installed loom, as a user would (find_package(loom
# CONFIG) through CMAKE_PREFIX_PATH only), checks it links the prefix's
# libloom, then runs it with run_example.sh.
# usage: example_installed.sh APP_SOURCE_DIR PREFIX WORK_DIR MODELS_DIR
set -u
src=$1 prefix=$2 work=$3 models=$4
app=$(basename "$src")
fail() { echo "FAIL: $*" >&2; exit 1; }
# A sanitized loom (LOOM_TEST_SANITIZE, e.g. address,undefined) installs
# sanitized libraries: the application takes the same flags.
san=${LOOM_TEST_SANITIZE:-}
san_flags=${san:+-fsanitize=$san}
rm -rf "$work"
mkdir -p "$work" || fail "cannot make $work"
cmake -S "$src" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS="$san_flags" -DCMAKE_CXX_FLAGS="$san_flags" -DCMAKE_EXE_LINKER_FLAGS="$san_flags" \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configuring $src against $prefix"; }
cmake --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building $src"; }
bin=$work/build/$app
lib=$(ldd "$bin" | awk '/libloom\.so/ {print $3}')
[ "$lib" = "$prefix/lib/libloom.so.0" ] || fail "$app links '$lib', not $prefix/lib/libloom.so.0"
echo "$app built against $prefix (libloom: $lib)"
exec "$(dirname "$0")/run_example.sh" "$bin" "$prefix/bin/loom" "$models"
