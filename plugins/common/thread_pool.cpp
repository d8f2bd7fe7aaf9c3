#include "common/thread_pool.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "common/env.h"
#include "common/glue.h"

#ifdef __linux__
#include <sched.h>
#endif

namespace loom::common {

namespace {
// Spin iterations before sleeping (~100 us with pause): longer than the gap
// between two nodes of a graph, so a busy graph never pays a futex wake-up.
constexpr int kSpinIterations = 4000;

// Spin until pred() holds or the budget runs out; true when it holds.
template <typename Pred>
bool spin_until(Pred pred) {
  for (int i = 1; i <= kSpinIterations; ++i) {
    if (pred()) return true;
    spin_pause(i);
  }
  return pred();
}
}  // namespace

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

void spin_pause(int iteration) {
  constexpr int kYieldEvery = 1024;
  if (iteration % kYieldEvery == 0) {
    std::this_thread::yield();
  } else {
    cpu_relax();
  }
}

ThreadPool::ThreadPool(int n_threads) { start(std::max(1, n_threads)); }

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::start(int n_threads) {
  n_threads_ = n_threads;
  quit_.store(false);
  // Each worker records the current generation and then checks in through
  // pending_, so a run() issued right after start() is never missed.
  pending_.store(n_threads - 1);
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back(&ThreadPool::worker, this);
  std::unique_lock<std::mutex> lock(mu_);
  cv_done_.wait(lock, [this] { return pending_.load() == 0; });
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_.store(true);
  }
  cv_work_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::resize(int n_threads) {
  n_threads = std::max(1, n_threads);
  if (n_threads == n_threads_) return;
  stop();
  start(n_threads);
}

void ThreadPool::run_slots(uint64_t gen) {
  const auto nth = static_cast<uint64_t>(n_threads_);
  uint64_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    if (s >> kSlotBits != gen) return;  // a later job: not ours to claim
    const uint64_t slot = s & ((uint64_t{1} << kSlotBits) - 1);
    if (slot >= nth) return;
    if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    // The slot is ours, so the caller is still inside run(): job_ is this
    // generation's.
    try {
      (*job_)(static_cast<int>(slot), static_cast<int>(nth));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<int>(nth)) {
      // Lock so the caller cannot check the predicate and sleep between our
      // increment and the notify.
      std::lock_guard<std::mutex> lock(mu_);
      cv_done_.notify_all();
    }
    s = state_.load(std::memory_order_acquire);
  }
}

void ThreadPool::run(const std::function<void(int ith, int nth)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  const int nth = n_threads_;
  job_ = &fn;
  done_.store(0, std::memory_order_relaxed);
  const uint64_t gen = ++generation_ & ((uint64_t{1} << (64 - kSlotBits)) - 1);
  {
    // Publishing under the lock means a worker about to sleep either sees
    // the new generation in its wait predicate or is already waiting: no
    // lost wake-up.
    std::lock_guard<std::mutex> lock(mu_);
    error_ = nullptr;
    state_.store(gen << kSlotBits, std::memory_order_release);
  }
  cv_work_.notify_all();
  run_slots(gen);
  // Every slot is claimed; wait for those still running on workers.
  if (!spin_until([&] { return done_.load(std::memory_order_acquire) == nth; })) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_done_.wait(lock, [&] { return done_.load(std::memory_order_acquire) == nth; });
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::worker() {
  uint64_t seen = state_.load(std::memory_order_acquire) >> kSlotBits;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.fetch_sub(1) == 1) cv_done_.notify_all();
  }
  for (;;) {
    auto has_work = [&] {
      return quit_.load(std::memory_order_acquire) ||
             state_.load(std::memory_order_acquire) >> kSlotBits != seen;
    };
    if (!spin_until(has_work)) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_work_.wait(lock, has_work);
    }
    if (quit_.load(std::memory_order_acquire)) return;
    seen = state_.load(std::memory_order_acquire) >> kSlotBits;
    run_slots(seen);
  }
}

int physical_core_count() {
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    std::set<std::pair<long, long>> cores;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &set)) continue;
      const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
      long pkg = -1, core = -1;
      std::ifstream p(dir + "physical_package_id"), c(dir + "core_id");
      if (!(p >> pkg) || !(c >> core)) {
        cores.clear();
        break;  // no topology: fall back below
      }
      cores.emplace(pkg, core);
    }
    if (!cores.empty()) return static_cast<int>(cores.size());
  }
#endif
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

int thread_count_from_env(const char* name) {
  if (const char* env = std::getenv(name)) {
    int64_t v = 0;
    if (parse_int(env, 1, kMaxThreads, &v)) return static_cast<int>(v);
    plugin_log(LOOM_LOG_LEVEL_WARN, "threads",
               std::string(name) + "=" + env + " is not a whole number in [1, " + std::to_string(kMaxThreads) +
                   "]; using " + std::to_string(physical_core_count()) + " (physical cores)");
  }
  static const int cores = physical_core_count();
  return cores;
}

loom_status_t* check_thread_count(const char* category, int32_t n_threads) {
  if (n_threads >= 1 && n_threads <= kMaxThreads) return nullptr;
  return make_status(LOOM_STATUS_INVALID_ARGUMENT, std::string("[") + category +
                                                       ".set_threads] n_threads must be in [1, " +
                                                       std::to_string(kMaxThreads) + "], got " +
                                                       std::to_string(n_threads));
}

}  // namespace loom::common
