#include "measure/bandwidth_probe.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

namespace loom::cli {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// "32K", "1024K", "36M" -> bytes (0 when unreadable).
size_t parse_cache_size(const std::string& s) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return 0;
  size_t mult = 1;
  if (*end == 'K') mult = size_t{1} << 10;
  if (*end == 'M') mult = size_t{1} << 20;
  if (*end == 'G') mult = size_t{1} << 30;
  return static_cast<size_t>(v) * mult;
}

size_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  unsigned long long kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit) {
    if (key == "MemAvailable:") return static_cast<size_t>(kb) * 1024;
  }
  return 0;
}

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

// Sums n words with vectors of W bytes, four accumulators to keep loads in
// flight. Defined once per ISA with the vector width that ISA has: a 64-byte
// generic vector in an AVX2 function is split through the stack (GCC), and
// read a fifth to a quarter less than a plain loop on Zen 3, which made
// every bound there that much too low.
#define LOOM_PROBE_SUM(NAME, ATTR, W)                                    \
  ATTR __attribute__((noinline)) uint64_t NAME(const uint64_t* p, size_t n) { \
    typedef uint64_t vec __attribute__((vector_size(W)));               \
    constexpr size_t kLanes = (W) / sizeof(uint64_t);                    \
    vec a0 = {}, a1 = {}, a2 = {}, a3 = {};                              \
    size_t i = 0;                                                        \
    for (; i + 4 * kLanes <= n; i += 4 * kLanes) {                       \
      vec x0, x1, x2, x3;                                                \
      std::memcpy(&x0, p + i, W);                                        \
      std::memcpy(&x1, p + i + kLanes, W);                               \
      std::memcpy(&x2, p + i + 2 * kLanes, W);                           \
      std::memcpy(&x3, p + i + 3 * kLanes, W);                           \
      a0 += x0;                                                          \
      a1 += x1;                                                          \
      a2 += x2;                                                          \
      a3 += x3;                                                          \
    }                                                                    \
    const vec a = a0 + a1 + a2 + a3;                                     \
    uint64_t s = 0;                                                      \
    for (size_t k = 0; k < kLanes; ++k) s += a[k];                       \
    for (; i < n; ++i) s += p[i];                                        \
    return s;                                                            \
  }
#if defined(__x86_64__) || defined(__i386__)
LOOM_PROBE_SUM(sum_words_avx512, __attribute__((target("avx512f"))), 64)
LOOM_PROBE_SUM(sum_words_avx2, __attribute__((target("avx2"))), 32)
LOOM_PROBE_SUM(sum_words_sse2, , 16)

const char* vector_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2")) return "avx2";
  return "sse2";
}

uint64_t sum_words(const uint64_t* p, size_t n) {
  static const auto fn = [] {
    const std::string isa = vector_isa();
    return isa == "avx512" ? sum_words_avx512 : isa == "avx2" ? sum_words_avx2 : sum_words_sse2;
  }();
  return fn(p, n);
}
#else
LOOM_PROBE_SUM(sum_words, , 16)
const char* vector_isa() { return "16-byte vectors"; }
#endif
#undef LOOM_PROBE_SUM

std::string human(double bytes) {
  char buf[32];
  if (bytes >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024));
  }
  return buf;
}

}  // namespace

LastLevelCache last_level_cache() {
  LastLevelCache out;
  // sysfs: the highest data/unified level of cpu0, times its distinct
  // instances over the online CPUs (one per socket or CCD).
  const std::string base = "/sys/devices/system/cpu/";
  int best_index = -1;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = base + "cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = read_line(dir + "level");
    if (level.empty()) continue;
    if (read_line(dir + "type") == "Instruction") continue;
    const int lv = std::atoi(level.c_str());
    if (lv > out.level) {
      out.level = lv;
      best_index = i;
    }
  }
  if (best_index >= 0) {
    const std::string idx = "/cache/index" + std::to_string(best_index) + "/";
    const size_t each = parse_cache_size(read_line(base + "cpu0" + idx + "size"));
    std::set<std::string> instances;
    const long n_cpus = std::max(1L, sysconf(_SC_NPROCESSORS_CONF));
    for (long c = 0; c < n_cpus; ++c) {
      const std::string shared = read_line(base + "cpu" + std::to_string(c) + idx + "shared_cpu_list");
      if (!shared.empty()) instances.insert(shared);
    }
    if (each > 0) {
      out.bytes = each * std::max<size_t>(1, instances.size());
      out.source = "sysfs";
      return out;
    }
  }
  for (const auto& [name, lv] : {std::pair<int, int>{_SC_LEVEL3_CACHE_SIZE, 3}, {_SC_LEVEL2_CACHE_SIZE, 2}}) {
    const long v = sysconf(name);
    if (v > 0) {
      out.bytes = static_cast<size_t>(v);
      out.level = lv;
      out.source = "sysconf";
      return out;
    }
  }
  out.level = 0;
  out.source = "unknown";
  return out;
}

size_t probe_buffer_bytes(size_t llc_bytes, size_t available_bytes) {
  size_t want = std::max(size_t{256} << 20, 4 * llc_bytes);
  if (available_bytes > 0) want = std::min(want, std::max(size_t{64} << 20, available_bytes / 4));
  return (want + kHugePage - 1) / kHugePage * kHugePage;
}

BandwidthProbe::BandwidthProbe(size_t bytes) : llc_(last_level_cache()) {
  if (bytes == 0) bytes = probe_buffer_bytes(llc_.bytes, mem_available_bytes());
  bytes = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  buf_ = std::unique_ptr<uint64_t, void (*)(void*)>(static_cast<uint64_t*>(std::aligned_alloc(kHugePage, bytes)),
                                                   std::free);
  if (!buf_) return;
#ifdef MADV_HUGEPAGE
  (void)::madvise(buf_.get(), bytes, MADV_HUGEPAGE);
#endif
  n_ = bytes / sizeof(uint64_t);
  run(1, true);
}

BandwidthProbe::~BandwidthProbe() = default;

Bandwidth BandwidthProbe::measure(int threads, int passes) {
  Bandwidth bw;
  if (!buf_) return bw;
  threads = std::max(1, threads);
  run(threads, false);
  double best = 0;
  for (int p = 0; p < passes; ++p) {
    const double t0 = now_s();
    run(threads, false);
    const double dt = now_s() - t0;
    if (dt > 0) best = std::max(best, static_cast<double>(bytes()) / dt);
  }
  bw.checksum = checksum_;  // keeps the sums observable
  bw.gb_per_s = best / 1e9;
  bw.bytes = bytes();
  bw.threads = threads;
  bw.passes = passes;
  return bw;
}

std::string BandwidthProbe::describe(int threads) const {
  std::string s = std::string("vector sum (") + vector_isa() + "), " + std::to_string(std::max(1, threads)) +
                  " pinned threads, " + human(static_cast<double>(bytes())) + " buffer";
  if (llc_.bytes > 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " = %.1fx the %s L%d (%s)", static_cast<double>(bytes()) / llc_.bytes,
                  human(static_cast<double>(llc_.bytes)).c_str(), llc_.level, llc_.source.c_str());
    s += buf;
  } else {
    s += " (last-level cache unknown)";
  }
  return s;
}

void BandwidthProbe::run(int threads, bool fill) {
  const std::vector<int> cpus = allowed_cpus();
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8, 0);  // one cache line each
  auto slice = [&](int t) {
    if (!cpus.empty()) {
      // Pinned as the decode threads are: thread t on the t-th allowed CPU.
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[static_cast<size_t>(t) % cpus.size()], &one);
      (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    }
    const size_t lo = n_ * static_cast<size_t>(t) / static_cast<size_t>(threads);
    const size_t hi = n_ * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
    uint64_t* p = buf_.get();
    if (fill) {
      for (size_t i = lo; i < hi; ++i) p[i] = i;
      return;
    }
    sums[static_cast<size_t>(t) * 8] = sum_words(p + lo, hi - lo);
  };
  // Every slice on a thread of its own, so the caller's affinity is untouched.
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    try {
      pool.emplace_back(slice, t);
    } catch (const std::system_error&) {
      // No thread to be had: read that slice here, unpinned.
      const size_t lo = n_ * static_cast<size_t>(t) / static_cast<size_t>(threads);
      const size_t hi = n_ * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
      uint64_t* p = buf_.get();
      if (fill) {
        for (size_t i = lo; i < hi; ++i) p[i] = i;
      } else {
        sums[static_cast<size_t>(t) * 8] = sum_words(p + lo, hi - lo);
      }
    }
  }
  for (auto& th : pool) th.join();
  for (uint64_t v : sums) checksum_ += v;
}

}  // namespace loom::cli
