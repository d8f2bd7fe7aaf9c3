// The sparse products' (ABI 1.3) host-side arithmetic of the CUDA kernels,
// on a machine without a GPU: sparse.cuh's activity rule (F32, F16 and
// BF16 scores, strided, NaN inactive) and MUL_MAT_SPARSE_COLS's block
// replayed as sparse.cu runs it (kColsGroups partial sums over the active
// neurons, combined in order) against the dense product of W^T and the
// masked activations, for every weight type the kernels read. The
// row-sparse kernels are the GEMVs' arithmetic (cuda_gemv_host_test.cpp)
// behind the same activity rule; both run on a GPU in the conformance suite
// (conformance/sparse_cases.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "common/type_traits.h"
#include "loom/plugin.h"
#include "plugins/cuda/ops/dequant.cuh"
#include "plugins/cuda/ops/quantize.cuh"
#include "plugins/cuda/ops/sparse.cuh"

namespace loom::cuda {
namespace {

TArg targ2(uint8_t* data, int32_t type, int64_t ne0, int64_t ne1, int64_t nb0, int64_t nb1) {
  TArg t{};
  t.data = data;
  t.type = type;
  t.ne[0] = ne0, t.ne[1] = ne1, t.ne[2] = 1, t.ne[3] = 1;
  t.nb[0] = nb0, t.nb[1] = nb1, t.nb[2] = nb1 * ne1, t.nb[3] = t.nb[2];
  return t;
}

TEST(CudaSparseHost, ScoresAboveTheThresholdAreActiveAndNaNIsNot) {
  for (int32_t type : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    const int64_t size = type == LOOM_TYPE_F32 ? 4 : 2;
    const float values[] = {0.5f, 0.25f, -1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f, 0.2509765625f};
    // 3 scores per column, 2 columns, every element 2 slots apart (strided).
    std::vector<uint8_t> mem(static_cast<size_t>(size * 2 * 3 * 2 + 64));
    const TArg s = targ2(mem.data(), type, 3, 2, 2 * size, 2 * size * 3 + 8);
    for (int64_t n = 0; n < 2; ++n) {
      for (int64_t j = 0; j < 3; ++j) store_elem(type, s.data + j * s.nb[0] + n * s.nb[1], values[n * 3 + j]);
    }
    for (int64_t n = 0; n < 2; ++n) {
      for (int64_t j = 0; j < 3; ++j) {
        const float stored = load_elem(type, s.data + j * s.nb[0] + n * s.nb[1]);
        EXPECT_EQ(score_active(s, j, n, 0.25f), stored > 0.25f) << "type " << type << " (" << j << ", " << n << ")";
      }
    }
    EXPECT_TRUE(score_active(s, 0, 0, 0.25f));
    EXPECT_FALSE(score_active(s, 1, 0, 0.25f)) << "equal to the threshold is inactive";
    EXPECT_FALSE(score_active(s, 0, 1, 0.25f)) << "NaN is inactive";
    EXPECT_FALSE(score_active(s, 0, 1, -std::numeric_limits<float>::infinity())) << "NaN is inactive";
  }
}

// W [M, K] of `type` with random values (quantized: float rows quantized by
// quantize_block when the type has a writer, else random bytes with a small
// values), neuron k's row padded by 32 bytes.
struct Weights {
  std::vector<uint8_t> mem;
  TArg w;
};
Weights make_weights(int32_t type, int64_t m, int64_t k, std::mt19937* rng) {
  const common::TypeTraits& tr = common::type_traits(type);
  const int64_t row = static_cast<int64_t>(tr.type_size) * (m / static_cast<int64_t>(tr.block_size)) + 32;
  Weights out;
  out.mem.assign(static_cast<size_t>(row * k), 0);
  out.w = targ2(out.mem.data(), type, m, k, tr.is_quantized ? 0 : static_cast<int64_t>(tr.type_size), row);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t r = 0; r < k; ++r) {
    uint8_t* p = out.mem.data() + r * row;
    if (!tr.is_quantized) {
      for (int64_t i = 0; i < m; ++i) store_elem(type, p + i * static_cast<int64_t>(tr.type_size), u(*rng));
      continue;
    }
    for (int64_t b = 0; b < m / static_cast<int64_t>(tr.block_size); ++b) {
      uint8_t* blk = p + b * static_cast<int64_t>(tr.type_size);
      float x[256];
      for (int i = 0; i < static_cast<int>(tr.block_size); ++i) x[i] = u(*rng);
      if (quantize_block(type, x, blk)) continue;
      // No writer for this type: random bytes until every element is a
      // finite, moderate value (the block's f16 scales are random too).
      for (bool ok = false; !ok;) {
        for (size_t i = 0; i < tr.type_size; ++i) blk[i] = static_cast<uint8_t>(byte(*rng));
        ok = true;
        for (int i = 0; i < static_cast<int>(tr.block_size); ++i) ok = ok && std::fabs(dq_block(type, blk, i)) < 1e3f;
      }
    }
  }
  return out;
}

TEST(CudaSparseHost, ColsBlockEqualsTheDenseProductOfTheActiveNeurons) {
  std::mt19937 rng(2801);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int32_t types[] = {LOOM_TYPE_F32,  LOOM_TYPE_F16,  LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0,
                           LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q2_K,
                           LOOM_TYPE_Q3_K, LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_IQ4_XS};
  for (int32_t type : types) {
    const int64_t m = common::type_traits(type).block_size == 256 ? 256 : 64, k = 37, n_cols = 3;
    Weights wt = make_weights(type, m, k, &rng);
    // H [K, N] with a padded column, scores F16 [K, N].
    std::vector<float> hmem(static_cast<size_t>((k + 3) * n_cols));
    std::vector<uint16_t> smem(static_cast<size_t>(k * n_cols));
    const TArg h = targ2(reinterpret_cast<uint8_t*>(hmem.data()), LOOM_TYPE_F32, k, n_cols, 4, 4 * (k + 3));
    const TArg s = targ2(reinterpret_cast<uint8_t*>(smem.data()), LOOM_TYPE_F16, k, n_cols, 2, 2 * k);
    for (float& v : hmem) v = u(rng);
    for (uint16_t& v : smem) v = f32_to_f16(u(rng));
    const float t = 0.3f;
    int64_t active = 0;
    for (int64_t n = 0; n < n_cols; ++n) {
      for (int64_t j = 0; j < k; ++j) active += score_active(s, j, n, t);
      for (int64_t i = 0; i < m; ++i) {
        float part[kColsGroups];
        for (int g = 0; g < kColsGroups; ++g) part[g] = cols_partial(type, wt.w, h, s, t, i, n, g);
        const float got = cols_combine(part);
        double ref = 0.0, mag = 0.0;
        for (int64_t j = 0; j < k; ++j) {
          if (!(f16_to_f32(smem[static_cast<size_t>(n * k + j)]) > t)) continue;
          const double p = static_cast<double>(hmem[static_cast<size_t>(n * (k + 3) + j)]) *
                           row_elem(type, wt.w.data + j * wt.w.nb[1], i, wt.w.nb[0]);
          ref += p;
          mag += std::fabs(p);
        }
        ASSERT_NEAR(got, ref, 1e-5 * (mag + 1e-3)) << "type " << type << " output " << i << " column " << n;
      }
    }
    EXPECT_GT(active, 0);
    EXPECT_LT(active, k * n_cols) << "some neurons must be inactive";
  }
}

TEST(CudaSparseHost, NoActiveNeuronGivesZero) {
  std::mt19937 rng(2802);
  Weights wt = make_weights(LOOM_TYPE_Q4_0, 64, 5, &rng);
  std::vector<float> hmem(5, 1.0f), smem(5, -1.0f);
  const TArg h = targ2(reinterpret_cast<uint8_t*>(hmem.data()), LOOM_TYPE_F32, 5, 1, 4, 20);
  const TArg s = targ2(reinterpret_cast<uint8_t*>(smem.data()), LOOM_TYPE_F32, 5, 1, 4, 20);
  for (int64_t i = 0; i < 64; ++i) {
    float part[kColsGroups];
    for (int g = 0; g < kColsGroups; ++g) part[g] = cols_partial(LOOM_TYPE_Q4_0, wt.w, h, s, 0.0f, i, 0, g);
    EXPECT_EQ(cols_combine(part), 0.0f);
  }
}

}  // namespace
}  // namespace loom::cuda
