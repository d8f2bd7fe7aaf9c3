#!/usr/bin/env bash
# Set up, build and run the whole test suite: a release build and the tests
# the ASan pass leaves out plus a check of the release kernels, a short run
# of the libFuzzer targets (when clang has libFuzzer), then the suite under
# AddressSanitizer + UndefinedBehaviorSanitizer, then a ThreadSanitizer pass
# over the thread pool, scheduler and registry tests (scripts/tsan.sh).
# Usage: scripts/test.sh [--no-asan] [--no-tsan]
set -euo pipefail
cd "$(dirname "$0")/.."

asan=1
tsan=1
for a in "$@"; do
  case "$a" in
    --no-asan) asan=0 ;;
    --no-tsan) tsan=0 ;;
    *) echo "test.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

# python3-numpy: synthetic-model tests; Vulkan headers, glslc and lavapipe
# (mesa-vulkan-drivers): the vulkan plugin is built and tested on the CPU.
# clang: the ASan and TSan passes (their presets compile with it) and the fuzz targets.
scripts/deps.sh python3-numpy libvulkan-dev glslc mesa-vulkan-drivers graphviz clang
jobs=${LOOM_JOBS:-$(nproc)}
# Each phase's line says how long the suite has run so far (CI has 30 minutes).
t0=$(date +%s)
phase() { echo "== $* (at $(( $(date +%s) - t0 )) s)"; }

# The official OpenAI Node client for loom serve's test (serve.openai_node_client),
# exactly as tests/serve/node/package-lock.json pins it.
phase "npm ci (tests/serve/node)"
(cd tests/serve/node && npm ci --no-audit --no-fund)

# LOOM_CUDA_ARCHS (e.g. 90-virtual) narrows the cuda plugin's architectures
# (.ci/run: CI has no GPU); unset, the plugin's default.
cmake --preset release ${LOOM_CUDA_ARCHS:+-DLOOM_CUDA_ARCHS="$LOOM_CUDA_ARCHS"}
if [ "$asan" = 1 ]; then
  # Only the programs the release pass below runs (the CLI, every plugin,
  # the kernel, model and conformance test programs: the build preset
  # release-beside-asan); the ASan build compiles the rest.
  phase "release build (what runs beside ASan)"
  cmake --build --preset release-beside-asan -j "$jobs"
else
  phase "release build"
  cmake --build --preset release -j "$jobs"
fi
# With the ASan pass to follow, the release build runs what that pass leaves
# out (the mpirun runs, the Vulkan shader variants, whole models on
# lavapipe) and a check of what users run at -O3: every CPU variant's op
# suite, conformance, the stories text, every weight type and architecture,
# the Node client (CMakePresets.json: release-beside-asan). Every test runs
# at least once; the rest of the suite runs once, under ASan. Without the
# ASan pass: the whole suite here.
if [ "$asan" = 1 ]; then
  phase "release tests (what the ASan pass leaves out, and the release kernels)"
  ctest --preset release-beside-asan -j "$jobs"
else
  phase "release tests"
  ctest --preset release -j "$jobs"
fi

# The libFuzzer targets (GGUF reader, tokenizer, serve request parser) for a short time each, when
# this machine's clang has libFuzzer (scripts/fuzz.sh runs them longer).
fuzz_secs=${LOOM_FUZZ_SECONDS:-15}
if command -v clang++ >/dev/null 2>&1 &&
   echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
     clang++ -fsanitize=fuzzer -x c++ - -o /dev/null >/dev/null 2>&1; then
  phase "fuzzing (${fuzz_secs} s per target)"
  LOOM_JOBS="$jobs" scripts/fuzz.sh --no-install "$fuzz_secs"
else
  echo "== fuzzing skipped: clang++ with libFuzzer not found (apt-get install clang; then scripts/fuzz.sh)"
fi

if [ "$asan" = 1 ]; then
  phase "ASan + UBSan build"
  # The AVX-512 variant's tests skip on a CPU without AVX-512 F/BW/DQ/VL/VNNI:
  # there the ASan build leaves that variant out (the release pass built it).
  skip_variants=""
  for f in avx512f avx512bw avx512dq avx512vl avx512_vnni; do
    grep -qw "$f" /proc/cpuinfo 2>/dev/null || skip_variants="avx512"
  done
  cmake --preset asan -DLOOM_CPU_SKIP_VARIANTS="$skip_variants"
  cmake --build --preset asan -j "$jobs"
  phase "ASan + UBSan tests"
  # Tests that run kernels on the vulkan plugin compile pipelines in Mesa's
  # lavapipe, whose blocks (referenced from LLVM JIT memory LSan does not
  # scan) read as leaks: the asan test preset sets LSAN_OPTIONS to
  # tests/lsan.supp, which suppresses frames inside the driver only (and
  # inside Open MPI's libraries). The mpirun tests (mpi.cli.*) run in the
  # release pass only, to keep Open MPI's launcher and runtime (not built
  # for ASan) out of this pass; the worker's request checks, where
  # malformed input meets loom's own code (mpi.WorkerServerTest), run here.
  # The vulkan runs that only pick other shaders (vulkan_matmul.,
  # vulkan_int8plain., vulkan_nosplit., vulkan_untiled., vulkan_moe.,
  # vulkan_ungrouped., vulkan_int8_model., vulkan_coopmat_emu., and
  # Vulkan/Coopmat.: the emulated cooperative-matrix kernel) run in the release pass only: what
  # they change runs inside lavapipe, which ASan does not see. So do the
  # runs whose time goes to lavapipe's kernels on loom host code the pass
  # covers elsewhere: conformance.vulkan (the op cases vulkan. runs),
  # vulkan_fallback.'s matmul and attention cases (its copy, binary, rows,
  # ... cases keep the staging path here), and the whole models on vulkan0
  # (VulkanQuantFiles., VulkanBench., one case each of SwaCache.,
  # QuantModels., SparseFfn.: VulkanStories. and the rest stay). About 170
  # CPU-seconds of a 870 s pass (CI's 30 minutes). So does
  # ConformanceIsolation.ChildrenReportWhatOneProcessReports (the cpu op
  # suite again, case by case in children: 24 s under ASan); the isolation
  # cases that crash, hang or lose a context run here. The emulated cuda
  # plugin's op suite runs here (the kernels' memory accesses under ASan:
  # ~120 CPU-seconds); its model runs (cuda_emu.models, cuda_emu.serve,
  # cuda_emu.CudaStories.: ~200 CPU-seconds under ASan) and its two longest
  # op cases (LongRowsOfWeightTypes, DecodeOverLongRows: ~60) in the
  # release pass only.
  ctest --preset asan -j "$jobs"
fi
if [ "$tsan" = 1 ]; then
  phase "ThreadSanitizer"
  LOOM_JOBS="$jobs" scripts/tsan.sh
fi
phase "all tests passed"
