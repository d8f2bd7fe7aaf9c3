#!/usr/bin/env bash
# ThreadSanitizer pass over the code that runs threads: the common thread
# pool, the scheduler (async streams, events, the sim plugin's worker
# threads), the registry (probe children, plugin lifetimes). Builds only
# those test targets (build/tsan, compiled by clang) and runs them.
# scripts/test.sh runs it; by hand: scripts/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null 2>&1 || scripts/deps.sh clang
jobs=${LOOM_JOBS:-$(nproc)}
echo "== ThreadSanitizer build and tests (thread pool, scheduler, registry)"
cmake --preset tsan
cmake --build --preset tsan -j "$jobs"
ctest --preset tsan -j "$jobs"
