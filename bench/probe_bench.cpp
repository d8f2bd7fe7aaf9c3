// loom bench's host bandwidth probe against a plain vectorized sum (issue 34:
// "the probe must read at least what a plain vectorized sum does"). The two
// alternate in one process over buffers of the same size, so the host's
// bandwidth, which swings with its other tenants, is the same for both; each
// reports its best pass. Part of loom_ops_bench (bench/cpu_targets.py prints
// the row).
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "measure/bandwidth_probe.hpp"

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The loop anybody would write, vectorized by the compiler for this CPU (as
// `-O3 -march=native` would), one clone per ISA.
__attribute__((target_clones("avx512f", "avx2", "default"), noinline)) uint64_t plain_sum(const uint64_t* p,
                                                                                           size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i) s += p[i];
  return s;
}

// range(0) threads; range(1) rounds, each one probe pass then one plain pass.
void BM_probe_vs_plain(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int rounds = static_cast<int>(state.range(1));
  loom::cli::BandwidthProbe probe;  // sized from the last-level cache, as in loom bench
  if (!probe.ok()) {
    state.SkipWithError("probe buffer not allocated");
    return;
  }
  const size_t bytes = probe.bytes();
  const size_t n = bytes / sizeof(uint64_t);
  auto* buf = static_cast<uint64_t*>(std::aligned_alloc(size_t{2} << 20, bytes));
  if (buf == nullptr) {
    state.SkipWithError("plain buffer not allocated");
    return;
  }
#ifdef MADV_HUGEPAGE
  (void)::madvise(buf, bytes, MADV_HUGEPAGE);
#endif
  for (size_t i = 0; i < n; ++i) buf[i] = i;
  double best_probe = 0, best_plain = 0;
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
  for (auto _ : state) {
    for (int r = 0; r < rounds; ++r) {
      best_probe = std::max(best_probe, probe.measure(threads, 1).gb_per_s);
      const double t0 = seconds_now();
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          const size_t lo = n * static_cast<size_t>(t) / static_cast<size_t>(threads);
          const size_t hi = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
          sums[static_cast<size_t>(t) * 8] += plain_sum(buf + lo, hi - lo);
        });
      }
      for (auto& th : pool) th.join();
      best_plain = std::max(best_plain, static_cast<double>(bytes) / (seconds_now() - t0) / 1e9);
    }
  }
  benchmark::DoNotOptimize(sums.data());
  std::free(buf);
  state.counters["probe_GB/s"] = best_probe;
  state.counters["plain_GB/s"] = best_plain;
  state.counters["buffer_MiB"] = static_cast<double>(bytes) / (1 << 20);
  state.SetLabel(probe.describe(threads));
}

}  // namespace

BENCHMARK(BM_probe_vs_plain)->Args({2, 12})->Args({1, 6})->Iterations(1)->Unit(benchmark::kMillisecond);
