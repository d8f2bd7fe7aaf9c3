// A persistent thread pool: run(fn) calls fn(i, n) once for every slot i in
// [0, n), n = size(), and returns when all slots are done. Slots are claimed
// by whichever pool thread is free first — the caller included — so a
// worker that the OS has not scheduled (another process holds its core)
// costs nothing: the caller runs its slot itself instead of waiting a time
// slice for it. Hence slots must never wait for each other (no barriers
// inside fn); one thread may run several slots, one after another. Between
// jobs workers spin briefly (a graph issues one job per node, microseconds
// apart) and then sleep on a condition variable. One run at a time per pool
// (callers serialise).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "loom/plugin.h"

namespace loom::common {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // Grow or shrink to n >= 1 threads (waits for idle workers).
  void resize(int n_threads);
  // fn(ith, nth) for every slot ith (see above); exceptions thrown by fn are
  // caught and the first is rethrown in the caller after all slots finished.
  void run(const std::function<void(int ith, int nth)>& fn);

 private:
  void start(int n_threads);
  void stop();
  void worker();
  // Claim and run slots of job `gen` until none is left; slots run here.
  void run_slots(uint64_t gen);

  int n_threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_work_;
  std::condition_variable cv_done_;
  // state_ = generation << kSlotBits | next unclaimed slot. job_ is written
  // before a new generation is published (release) and read only by a
  // thread whose claim (CAS on state_) of a slot of that generation
  // succeeded; the caller does not return — and so never rewrites job_ —
  // before every slot it published is done.
  static constexpr int kSlotBits = 16;  // > log2(kMaxThreads)
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> state_{0};
  uint64_t generation_ = 0;  // the caller's count of runs
  std::atomic<int> done_{0};     // slots of the current job finished
  std::atomic<int> pending_{0};  // workers yet to check in after start()
  std::atomic<bool> quit_{false};
  std::exception_ptr error_;  // guarded by mu_
};

// A spin-wait hint (pause on x86).
void cpu_relax();

// One step of a spin-wait, `iteration` counting from 1: a pause, and every
// 1024th step a yield, so that when another process holds our core the
// thread being waited for gets it sooner.
void spin_pause(int iteration);

// Split [0, n) into nth near-equal ranges; range of thread ith.
inline void split_range(int64_t n, int ith, int nth, int64_t* begin, int64_t* end) {
  int64_t per = (n + nth - 1) / nth;
  *begin = per * ith < n ? per * ith : n;
  *end = *begin + per < n ? *begin + per : n;
}

// Physical cores this process may run on: distinct (package, core) pairs
// of the CPUs in its affinity mask, from sysfs topology; the number of
// hardware threads when that cannot be read. SMT siblings share one core's
// execution units and memory bandwidth, so kernels gain nothing from both.
int physical_core_count();

// Thread count from the environment variable `env` (a whole number in
// [1, kMaxThreads]), else physical_core_count().
int thread_count_from_env(const char* env);

// Default thread count of the CPU device: LOOM_CPU_THREADS, else physical
// cores.
inline int default_thread_count() { return thread_count_from_env("LOOM_CPU_THREADS"); }

// The most threads a device takes (absurd counts would exhaust the OS).
constexpr int32_t kMaxThreads = 4096;

// NULL when 1 <= n_threads <= kMaxThreads, else an INVALID_ARGUMENT status
// "[<category>.set_threads] ..." owned by the caller.
loom_status_t* check_thread_count(const char* category, int32_t n_threads);

}  // namespace loom::common
