#include "common/thread_pool.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <exception>

namespace loom::common {

namespace {
// Guards against absurd LOOM_CPU_THREADS values that would exhaust the OS.
constexpr long kMaxThreads = 4096;
}  // namespace

ThreadPool::ThreadPool(int n_threads) { start(std::max(1, n_threads)); }

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::start(int n_threads) {
  n_threads_ = n_threads;
  quit_ = false;
  // Each worker records the current generation and then checks in through
  // pending_, so a run() issued right after start() is never missed.
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = n_threads - 1;
  }
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back(&ThreadPool::worker, this, i);
  std::unique_lock<std::mutex> lock(mu_);
  cv_done_.wait(lock, [this] { return pending_ == 0; });
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
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

void ThreadPool::run(const std::function<void(int ith, int nth)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    error_ = nullptr;
    pending_ = n_threads_ - 1;
    ++generation_;
  }
  cv_work_.notify_all();
  try {
    fn(0, n_threads_);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = std::current_exception();
  }
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::worker(int ith) {
  uint64_t seen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seen = generation_;
    if (--pending_ == 0) cv_done_.notify_all();
  }
  for (;;) {
    const std::function<void(int, int)>* job;
    int nth;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_work_.wait(lock, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
      job = job_;
      nth = n_threads_;
    }
    try {
      (*job)(ith, nth);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) cv_done_.notify_all();
    }
  }
}

int default_thread_count() {
  if (const char* env = std::getenv("LOOM_CPU_THREADS")) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(env, &end, 10);
    // Only a whole positive number counts; anything else falls back silently.
    if (errno == 0 && end != env && *end == '\0' && v >= 1 && v <= kMaxThreads) return static_cast<int>(v);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace loom::common
