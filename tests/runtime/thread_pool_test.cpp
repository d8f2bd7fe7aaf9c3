// The common thread pool under its real use pattern: many short jobs back to
// back, resizing between jobs, an exception from one thread. Also the
// ThreadSanitizer pass's main target (scripts/tsan.sh).
#include <gtest/gtest.h>

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/thread_pool.h"

namespace loom::common {
namespace {

TEST(ThreadPool, EverySlotRunsEveryJobOnce) {
  ThreadPool pool(4);
  std::vector<int64_t> sums(4, 0);
  for (int job = 0; job < 2000; ++job) {
    pool.run([&](int ith, int nth) {
      ASSERT_EQ(nth, 4);
      sums[static_cast<size_t>(ith)] += job;  // each slot writes only its own entry
    });
  }
  const int64_t want = 1999LL * 2000 / 2;
  for (int64_t s : sums) EXPECT_EQ(s, want);
}

TEST(ThreadPool, SplitWorkCoversTheRangeAcrossResizes) {
  ThreadPool pool(1);
  for (int n : {1, 3, 2, 4, 1, 2}) {
    pool.resize(n);
    ASSERT_EQ(pool.size(), n);
    std::vector<int> hit(1000, 0);
    pool.run([&](int ith, int nth) {
      int64_t b = 0, e = 0;
      split_range(static_cast<int64_t>(hit.size()), ith, nth, &b, &e);
      for (int64_t i = b; i < e; ++i) hit[static_cast<size_t>(i)]++;
    });
    EXPECT_EQ(std::accumulate(hit.begin(), hit.end(), 0), 1000);
    for (int h : hit) ASSERT_EQ(h, 1);
  }
}

TEST(ThreadPool, AnExceptionReachesTheCallerAfterAllThreadsFinish) {
  ThreadPool pool(3);
  std::atomic<int> finished{0};
  EXPECT_THROW(pool.run([&](int ith, int) {
    finished++;
    if (ith == 2) throw std::runtime_error("thread 2 failed");
  }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 3);
  // The pool is still usable.
  std::atomic<int> again{0};
  pool.run([&](int, int) { again++; });
  EXPECT_EQ(again.load(), 3);
}

// A worker the OS does not run (another process holds its core) must not
// stall a run: the slots it would have taken are run by the threads that
// are there, the caller included. The worker is "descheduled" for real: a
// signal parks it in its handler until the test lets it go. The previous
// pool waited for every worker to run its own share, so this test hung
// (and failed on its deadline) there.
sem_t g_parked_release;
std::atomic<int> g_parked{0};
void park_in_handler(int) {
  g_parked.fetch_add(1);
  while (sem_wait(&g_parked_release) != 0) {
  }
}

TEST(ThreadPool, AWorkerThatDoesNotRunCostsNoWaiting) {
  ThreadPool pool(2);
  // Find the worker thread: the one running a slot that is not ours.
  const pthread_t caller = pthread_self();
  std::mutex mu;
  std::set<pthread_t> others;
  for (int i = 0; i < 2000 && others.empty(); ++i) {
    pool.run([&](int, int) {
      if (!pthread_equal(pthread_self(), caller)) {
        std::lock_guard<std::mutex> lock(mu);
        others.insert(pthread_self());
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    });
  }
  ASSERT_EQ(others.size(), 1u) << "the worker never took a slot";
  const pthread_t worker = *others.begin();

  // Let the worker get back to waiting for work (it may still be
  // notifying the caller under the pool's lock), then park it.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(sem_init(&g_parked_release, 0, 0), 0);
  struct sigaction sa = {}, old = {};
  sa.sa_handler = park_in_handler;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  ASSERT_EQ(pthread_kill(worker, SIGUSR1), 0);
  while (g_parked.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  // With the worker parked, every job still runs both slots — on the caller.
  std::atomic<bool> finished{false};
  std::atomic<int> slots_by_caller{0};
  std::vector<int> hits(200 * 2, 0);
  std::thread runner([&] {
    for (int job = 0; job < 200; ++job) {
      pool.run([&](int ith, int nth) {
        hits[static_cast<size_t>(job * nth + ith)]++;
        if (!pthread_equal(pthread_self(), worker)) slots_by_caller.fetch_add(1);
      });
    }
    finished.store(true);
  });
  for (int ms = 0; ms < 10000 && !finished.load(); ++ms) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool done_while_parked = finished.load();
  sem_post(&g_parked_release);  // let the worker go in every case
  runner.join();
  sigaction(SIGUSR1, &old, nullptr);
  sem_destroy(&g_parked_release);
  EXPECT_TRUE(done_while_parked) << "runs waited for a worker that was not running";
  for (int h : hits) ASSERT_EQ(h, 1);
  EXPECT_EQ(slots_by_caller.load(), 400);
  // The pool is whole again afterwards.
  std::atomic<int> again{0};
  pool.run([&](int, int) { again++; });
  EXPECT_EQ(again.load(), 2);
}

}  // namespace
}  // namespace loom::common
