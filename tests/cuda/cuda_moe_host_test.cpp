// The ABI 1.5 ops' host-side arithmetic of the CUDA kernels, on a machine
// without a GPU: TOP_K's pick order (top_k.cuh) replayed as top_k.cu runs
// it (kRowThreads strided partials, then the halving tree, k times) against
// a stable sort, with ties, NaN and -inf; TANH's per-element function
// (elementwise.cuh) against std::tanh. MUL_MAT_ID's kernels run only on a
// GPU (tests/ops with LOOM_TEST_DEVICE=cuda0); their fault message is
// checked in cuda_support_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "loom/plugin.h"
#include "plugins/cuda/ops/elementwise.cuh"
#include "plugins/cuda/ops/launch.cuh"
#include "plugins/cuda/ops/top_k.cuh"

namespace loom::cuda {
namespace {

// top_k.cu's kernel for one row, sequentially.
std::vector<int32_t> replay_top_k(const std::vector<float>& x, int k) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<int32_t> out;
  TopKPick prev = topk_none();
  for (int j = 0; j < k; ++j) {
    std::vector<TopKPick> p;
    for (int t = 0; t < kRowThreads; ++t) {
      p.push_back(strided_fold(n, t, kRowThreads, topk_none(), [&](TopKPick c, int64_t i) {
        return topk_step(c, x[static_cast<size_t>(i)], static_cast<int32_t>(i), prev);
      }));
    }
    prev = tree_reduce(p.data(), kRowThreads, topk_combine);
    out.push_back(prev.index);
  }
  return out;
}

// The conformance suite's reference (moe_cases.cpp): a stable sort, NaN last.
std::vector<int32_t> reference(const std::vector<float>& x, int k) {
  std::vector<int32_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) {
    const float va = x[static_cast<size_t>(a)], vb = x[static_cast<size_t>(b)];
    if (std::isnan(va)) return false;
    return std::isnan(vb) || va > vb;
  });
  idx.resize(static_cast<size_t>(k));
  return idx;
}

TEST(CudaMoeHost, TopKPicksLikeAStableSort) {
  std::mt19937 rng(2901);
  for (int64_t n : {1, 2, 7, 33, 256, 300, 1000}) {
    for (bool ties : {false, true}) {
      std::vector<float> x;
      for (int64_t i = 0; i < n; ++i) {
        const int r = static_cast<int>(rng() % 10);
        if (ties) {
          x.push_back(r == 0 ? NAN : r == 1 ? -INFINITY : static_cast<float>(r % 4) * 0.5f);
        } else {
          x.push_back(std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng));
        }
      }
      for (int64_t k : {int64_t{1}, int64_t{2}, int64_t{8}, n}) {
        if (k > n) continue;
        EXPECT_EQ(replay_top_k(x, static_cast<int>(k)), reference(x, static_cast<int>(k)))
            << "n " << n << " k " << k << (ties ? " with ties" : "");
      }
    }
  }
}

TEST(CudaMoeHost, TopKOrderPutsNanLastAndMinusInfAboveIt) {
  EXPECT_TRUE(topk_before(-INFINITY, 5, NAN, 0));
  EXPECT_FALSE(topk_before(NAN, 0, -INFINITY, 5));
  EXPECT_TRUE(topk_before(NAN, 1, NAN, 2));
  EXPECT_TRUE(topk_before(0.0f, 1, -0.0f, 2));  // equal values: index order
  EXPECT_TRUE(topk_before(-0.0f, 1, 0.0f, 2));
  EXPECT_TRUE(topk_before(2.0f, 9, 1.0f, 0));
}

TEST(CudaMoeHost, TanhMatchesTheLibrary) {
  for (float x : {-30.0f, -9.5f, -1.0f, -0.01f, -1e-6f, 0.0f, 1e-6f, 0.3f, 0.9f, 2.5f, 30.0f}) {
    EXPECT_NEAR(unary_op(LOOM_OP_TANH, x, 1.0f, 0.0f), std::tanh(static_cast<double>(x)), 1e-7) << x;
  }
  EXPECT_EQ(unary_op(LOOM_OP_TANH, INFINITY, 1.0f, 0.0f), 1.0f);
  EXPECT_EQ(unary_op(LOOM_OP_TANH, -INFINITY, 1.0f, 0.0f), -1.0f);
  EXPECT_TRUE(std::signbit(unary_op(LOOM_OP_TANH, -0.0f, 1.0f, 0.0f)));
}

}  // namespace
}  // namespace loom::cuda
