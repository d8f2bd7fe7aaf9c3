// The common thread pool under its real use pattern: many short jobs back to
// back, resizing between jobs, an exception from one thread. Also the
// ThreadSanitizer pass's main target (scripts/tsan.sh).
#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "common/thread_pool.h"

namespace loom::common {
namespace {

TEST(ThreadPool, EveryThreadRunsEveryJobOnce) {
  ThreadPool pool(4);
  std::vector<int64_t> sums(4, 0);
  for (int job = 0; job < 2000; ++job) {
    pool.run([&](int ith, int nth) {
      ASSERT_EQ(nth, 4);
      sums[static_cast<size_t>(ith)] += job;  // each thread writes only its own slot
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

}  // namespace
}  // namespace loom::common
