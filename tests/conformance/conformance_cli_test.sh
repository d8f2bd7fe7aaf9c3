#!/bin/sh
# `loom conformance` as a user runs it, checked by its exit status and table.
#   conformance_cli_test.sh pass LOOM ARGS...   must exit 0 and say PASS
#   conformance_cli_test.sh pass-or-absent ...  the same, or 77 (skip) when the
#                                               device's plugin is unavailable here
#   conformance_cli_test.sh fail LOOM ARGS...   must exit 1 (not crash) with a
#                                               FAILED row and FAIL in the summary
#   conformance_cli_test.sh error LOOM ARGS...  must exit 1 or 2 with a message
#                                               (unknown device or file)
set -u
want=$1
loom=$2
shift 2
out=$("$loom" conformance "$@" 2>&1)
rc=$?
echo "$out"
case "$want" in
pass-or-absent)
  # The device's plugin reports its hardware or driver absent: a skip (77).
  # The plugin named like the device (vulkan0 -> libloom-vulkan*.so).
  dev=$(echo "$*" | sed -n 's/.*--device \([^ ]*\).*/\1/p')
  plugin=$(echo "$dev" | sed 's/[0-9]*$//')
  if [ $rc -eq 1 ] && echo "$out" | grep -q "no such device" &&
     echo "$out" | grep -q "/libloom-$plugin[-a-z0-9]*\.so: unavailable"; then
    echo "SKIP: the device is absent on this machine"; exit 77
  fi
  [ $rc -eq 0 ] || { echo "FAIL: exit $rc, want 0"; exit 1; }
  echo "$out" | grep -q -- "-> PASS" || { echo "FAIL: no PASS summary"; exit 1; }
  ;;
pass)
  [ $rc -eq 0 ] || { echo "FAIL: exit $rc, want 0"; exit 1; }
  echo "$out" | grep -q -- "-> PASS" || { echo "FAIL: no PASS summary"; exit 1; }
  echo "$out" | grep -q "FAILED" && { echo "FAIL: a FAILED row or case"; exit 1; }
  ;;
fail)
  [ $rc -eq 1 ] || { echo "FAIL: exit $rc, want 1 (a failing plugin)"; exit 1; }
  echo "$out" | grep -Eq "^\\| [A-Z_]+ .*FAILED" || { echo "FAIL: no FAILED row"; exit 1; }
  echo "$out" | grep -q -- "-> FAIL" || { echo "FAIL: no FAIL summary"; exit 1; }
  ;;
error)
  [ $rc -eq 1 ] || [ $rc -eq 2 ] || { echo "FAIL: exit $rc, want 1 or 2"; exit 1; }
  echo "$out" | grep -q "^conformance: " || { echo "FAIL: no error message"; exit 1; }
  ;;
esac
echo "ok"
