// The host's memory read bandwidth, measured on memory, not on cache: the
// probe's buffer is sized from the cache hierarchy (at least 4x the last-level
// cache the OS reports), read with the widest vector loads the CPU has, by
// threads pinned one per CPU as the decode threads are. `loom bench` takes its
// generation bound from it. Not thread-safe: one probe, one caller.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace loom::cli {

// Seconds on the steady clock (for the probes' timings).
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The last-level cache the OS reports (sysfs, else sysconf); 0 bytes when
// neither says.
struct LastLevelCache {
  size_t bytes = 0;
  int level = 0;       // 3 for an L3
  std::string source;  // "sysfs", "sysconf", "unknown"
};
LastLevelCache last_level_cache();

// The probe's buffer size for a cache of `llc_bytes`: 4x it, at least
// 256 MiB, at most a quarter of `available_bytes` (when known, > 0), rounded
// up to 2 MiB.
size_t probe_buffer_bytes(size_t llc_bytes, size_t available_bytes);

struct Bandwidth {
  double gb_per_s = 0;
  size_t bytes = 0;  // the buffer read per pass
  int threads = 0;
  int passes = 0;
  uint64_t checksum = 0;
};

class BandwidthProbe {
 public:
  // A buffer of probe_buffer_bytes(last_level_cache(), MemAvailable), or of
  // `bytes` when non-zero; allocated (transparent huge pages asked for, as
  // the cpu plugin's buffers) and written once.
  explicit BandwidthProbe(size_t bytes = 0);
  ~BandwidthProbe();
  BandwidthProbe(const BandwidthProbe&) = delete;
  BandwidthProbe& operator=(const BandwidthProbe&) = delete;

  bool ok() const { return n_ != 0; }
  size_t bytes() const { return n_ * sizeof(uint64_t); }
  const LastLevelCache& cache() const { return llc_; }
  // Best of `passes` timed passes (after one untimed) of `threads` pinned
  // threads each summing its slice with vector loads.
  Bandwidth measure(int threads, int passes);
  // How the probe reads, for the report: "vector sum (avx512), threads
  // pinned, 1.00 GiB buffer = 4.0x the 256.00 MiB L3 (sysfs)".
  std::string describe(int threads) const;

 private:
  void run(int threads, bool fill);

  std::unique_ptr<uint64_t, void (*)(void*)> buf_{nullptr, nullptr};
  size_t n_ = 0;
  LastLevelCache llc_;
  uint64_t checksum_ = 0;
};

}  // namespace loom::cli
