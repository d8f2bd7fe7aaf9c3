#!/usr/bin/env bash
# scripts/check_layers.py must fail on each kind of upward arrow and pass a
# clean tree: a tree of a few files per case, checked one at a time.
set -u
check="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
# expect <want exit> <label> <file> <line>
expect() {
  rm -rf "$tmp/t" && mkdir -p "$tmp/t/$(dirname "$3")"
  mkdir -p "$tmp/t/runtime" "$tmp/t/include/loom/runtime"
  printf '#include "loom/runtime/graph.hpp"\n' > "$tmp/t/runtime/ok.cpp"
  printf '// graph\n' > "$tmp/t/include/loom/runtime/graph.hpp"
  printf '%s\n' "$4" >> "$tmp/t/$3"
  python3 "$check" "$tmp/t" > "$tmp/out" 2>&1
  got=$?
  if [ "$got" != "$1" ]; then
    echo "FAIL: $2: exit $got, wanted $1"; cat "$tmp/out"; fails=$((fails + 1))
  else
    echo "ok: $2"
  fi
}
expect 0 "a layer includes one below" sched/a.cpp '#include "loom/registry/registry.hpp"'
expect 1 "runtime includes llm" runtime/a.cpp '#include "llm/model/arch.hpp"'
expect 1 "runtime includes the registry's header" runtime/a.cpp '#include "loom/registry/buffer.hpp"'
expect 1 "registry includes sched" registry/a.cpp '#include "loom/sched/scheduler.hpp"'
expect 1 "llm includes capi" llm/model/a.cpp '#include "capi/handles.hpp"'
expect 1 "tools include capi (peers)" tools/loom/a.cpp '#include "capi/run_setup.hpp"'
expect 1 "a plugin includes the runtime" plugins/cpu/a.cpp '#include "loom/runtime/graph.hpp"'
expect 0 "a plugin includes the SDK" plugins/cpu/a.cpp '#include "common/glue.h"'
expect 1 "a flat loom/ header" sched/a.cpp '#include "loom/graph.hpp"'
expect 1 "sched calls a plugin table" sched/a.cpp '  b->iface->free(b);'
expect 0 "the registry calls a plugin table" registry/a.cpp '  b->iface->free(b);'
[ "$fails" = 0 ]
