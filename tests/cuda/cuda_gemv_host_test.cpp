// The decode GEMV's arithmetic on the host (plugins/cuda/ops/gemv_lane.cuh,
// act_quant.cuh), no GPU needed:
// - every lane word of every quantized weight type decodes, element by
//   element, bit for bit to plugins/common's dequantization (the scale, the
//   offset and the element positions each lane uses);
// - B's 8-bit blocks are the conformance suite's rounding rule exactly
//   (conformance/matmul_ref.hpp's q8_column, blocks of 32 and 256);
// - a whole product in the kernel's lane order and warp tree matches the
//   suite's reference with B rounded (quantized A) or exact (float A) within
//   the suite's f32 tolerance, for every weight type, A made and read back
//   through the cpu plugin.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "common/quant.h"
#include "common/type_traits.h"
#include "conformance/check.hpp"
#include "conformance/harness.hpp"
#include "conformance/matmul_ref.hpp"
#include "loom/runtime/ops.hpp"
#include "ops/test_device.hpp"
#include "plugins/cuda/ops/act_cache.h"
#include "plugins/cuda/ops/act_quant.cuh"
#include "plugins/cuda/ops/gemv_grid.cuh"
#include "plugins/cuda/ops/gemv_lane.cuh"
#include "plugins/cuda/ops/launch.cuh"

namespace loom::optest {
namespace {

namespace cu = loom::cuda;
using namespace conformance;  // NOLINT(google-build-using-namespace): the harness's fixture vocabulary

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

template <int T>
void check_lane_words(std::mt19937& rng) {
  using L = cu::Lane<T>;
  SCOPED_TRACE(common::type_name(T));
  ASSERT_EQ(L::kElems, common::type_traits(T).block_size);
  ASSERT_EQ(static_cast<size_t>(L::kBytes), common::type_traits(T).type_size);
  const int64_t nblocks = 48;
  std::vector<uint8_t> blocks(static_cast<size_t>(nblocks) * L::kBytes);
  if (is_weight_quant(static_cast<loom_type_t>(T))) {
    random_weight_blocks(static_cast<loom_type_t>(T), nblocks, rng, blocks.data());
  } else {  // Q8_0 / Q4_0: quantized random floats
    std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
    std::vector<float> x(static_cast<size_t>(nblocks * L::kElems));
    for (float& v : x) v = dist(rng);
    common::from_float_row(T, x.data(), blocks.data(), nblocks * L::kElems);
  }
  std::vector<float> want(static_cast<size_t>(nblocks * L::kElems));
  common::to_float_row(T, blocks.data(), want.data(), nblocks * L::kElems);
  for (int64_t b = 0; b < nblocks; ++b) {
    std::multiset<int> seen;
    for (int u = 0; u < L::kElems / 32; ++u) {
      for (int p = 0; p < cu::kLanesPerUnit; ++p) {
        const cu::LaneWords w = L::get(blocks.data() + b * L::kBytes, u, p);
        for (int k = 0; k < 2; ++k) {
          if (!L::kMin) {
            ASSERT_EQ(w.m[k], 0.0f);
          }
          for (int i = 0; i < 4; ++i) {
            const int e = w.pos[k] + i;
            seen.insert(e);
            const float q = static_cast<float>(static_cast<int8_t>(w.w[k] >> (8 * i)));
            const float got = w.d[k] * q - w.m[k];
            ASSERT_EQ(float_bits(got), float_bits(want[static_cast<size_t>(b * L::kElems + e)]))
                << "block " << b << " unit " << u << " part " << p << " word " << k << " element "
                << e << ": " << got << " vs " << want[static_cast<size_t>(b * L::kElems + e)];
          }
        }
      }
    }
    // The lanes cover every element of the block once.
    ASSERT_EQ(seen.size(), static_cast<size_t>(L::kElems));
    for (int e = 0; e < L::kElems; ++e) ASSERT_EQ(seen.count(e), 1u) << "element " << e;
  }
}

TEST(CudaGemv, LaneWordsDecodeEveryElementLikeCommonBitForBit) {
  std::mt19937 rng(2801);
  check_lane_words<LOOM_TYPE_Q8_0>(rng);
  check_lane_words<LOOM_TYPE_Q4_0>(rng);
  check_lane_words<LOOM_TYPE_Q4_1>(rng);
  check_lane_words<LOOM_TYPE_Q5_0>(rng);
  check_lane_words<LOOM_TYPE_Q5_1>(rng);
  check_lane_words<LOOM_TYPE_IQ4_NL>(rng);
  check_lane_words<LOOM_TYPE_Q2_K>(rng);
  check_lane_words<LOOM_TYPE_Q3_K>(rng);
  check_lane_words<LOOM_TYPE_Q4_K>(rng);
  check_lane_words<LOOM_TYPE_Q5_K>(rng);
  check_lane_words<LOOM_TYPE_Q6_K>(rng);
  check_lane_words<LOOM_TYPE_IQ4_XS>(rng);
}

TEST(CudaGemv, IntegerDotAndByteHelpers) {
  // dp4a: signed bytes; sub_bytes: per byte, no borrow between bytes.
  EXPECT_EQ(cu::dp4a_hd(0x80FF0102u, 0x7F020304u, 5), 5 + (-128 * 127) + (-1 * 2) + 1 * 3 + 2 * 4);
  EXPECT_EQ(cu::sub_bytes(0x000F0800u, 0x08080808u), 0xF80700F8u);
  EXPECT_EQ(cu::spread_bit4(0xFu), 0x10101010u);
  EXPECT_EQ(cu::spread_bit4(0x5u), 0x00100010u);
}

// Every launch, block and warp of a GEMV grid (gemv_grid.cuh) with a tiny
// y / z limit so launches split: every result (m, n, z) is written exactly
// once and its column of B's 8-bit blocks (n + N * z) is in range.
TEST(CudaGemv, GridWritesEveryResultOnce) {
  struct Case { int64_t m, n, b2, b3, limit; };
  for (const Case& c : {Case{13, 1, 1, 1, 65535}, Case{13, 3, 2, 3, 2}, Case{5, 20, 2, 3, 2}, Case{9, 8, 5, 1, 3},
                        Case{4, 17, 1, 1, 1}}) {
    const int64_t mats = c.b2 * c.b3, nc = cu::gemv_nc(c.n);
    std::vector<int> hits(static_cast<size_t>(c.m * c.n * mats), 0);
    int launches = 0;
    cu::for_gemv_launches<bool>(c.m, c.n, mats, [&](const cu::GemvLaunch& l) {
      ++launches;
      for (int64_t bx = 0; bx < l.gx; ++bx) {
        for (int64_t by = 0; by < l.gy; ++by) {
          for (int64_t bz = 0; bz < l.gz; ++bz) {
            for (int w = 0; w < cu::kGemvWarps; ++w) {
              cu::GemvCell cell;
              if (!cu::gemv_cell(bx, by, bz, w, c.m, c.n, c.b2, l.n0, l.z0, static_cast<int>(nc), &cell)) {
                continue;
              }
              EXPECT_EQ(cell.i2 + c.b2 * cell.i3, cell.z);
              for (int k = 0; k < cell.ncols; ++k) {
                const int64_t n = cell.c0 + k, col = n + c.n * cell.z;
                EXPECT_LT(col, c.n * mats);
                ++hits[static_cast<size_t>((cell.z * c.n + n) * c.m + cell.m)];
              }
            }
          }
        }
      }
      return false;
    }, c.limit);
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], 1) << "result " << i << " of case m " << c.m << " n " << c.n;
    if (c.limit < 65535) {
      EXPECT_GT(launches, 1);
    }
  }
}

// B's 8-bit blocks are reused only for the same B (memory, shape, strides,
// block size) in an unchanged buffer, and forgotten when a node writes any
// byte of that B.
// A grid of products over one B (gemv_grid.cuh's group): each member's rows
// in their own x blocks, every (member, row) owned by exactly one warp.
TEST(CudaGemv, GroupGridsGiveEveryMembersRowsOnce) {
  const int64_t rows[cu::kGemvGroupMax] = {40, 7, 24};
  for (int count = 1; count <= cu::kGemvGroupMax; ++count) {
    int64_t first[cu::kGemvGroupMax + 1];
    cu::gemv_group_first(rows, count, first);
    std::vector<std::vector<int>> seen(static_cast<size_t>(count));
    for (int g = 0; g < count; ++g) seen[static_cast<size_t>(g)].assign(static_cast<size_t>(rows[g]), 0);
    for (int64_t bx = 0; bx < first[count]; ++bx) {
      int64_t local = -1;
      const int g = cu::gemv_member(first, count, bx, &local);
      ASSERT_GE(g, 0);
      ASSERT_LT(g, count);
      for (int w = 0; w < cu::kGemvWarps; ++w) {
        cu::GemvCell c{};
        if (!cu::gemv_cell(local, 0, 0, w, rows[g], 1, 1, 0, 0, 1, &c)) continue;
        ++seen[static_cast<size_t>(g)][static_cast<size_t>(c.m)];
      }
    }
    for (int g = 0; g < count; ++g) {
      for (int64_t m = 0; m < rows[g]; ++m) EXPECT_EQ(seen[static_cast<size_t>(g)][static_cast<size_t>(m)], 1) << g << " " << m;
    }
  }
}

TEST(CudaGemv, ActivationCacheKeepsBlocksOnlyWhileBIsUnchanged) {
  alignas(16) static float mem[4096];
  loom_tensor_t b{};
  b.type = LOOM_TYPE_F32;
  b.data = mem + 256;
  b.ne[0] = 64, b.ne[1] = 3, b.ne[2] = 1, b.ne[3] = 1;
  b.nb[0] = 4, b.nb[1] = 64 * 4 + 32, b.nb[2] = b.nb[1] * 3, b.nb[3] = b.nb[2];
  int8_t qs[8];
  float d[2];
  const cu::ActQ8 act{qs, d};
  cu::ActCache cache;
  cu::ActQ8 got{};
  EXPECT_FALSE(cache.find(&b, 32, 7, &got));
  cache.store(&b, 32, 7, act);
  ASSERT_TRUE(cache.find(&b, 32, 7, &got));
  EXPECT_EQ(got.qs, qs);
  EXPECT_FALSE(cache.find(&b, 256, 7, &got)) << "another block size";
  EXPECT_FALSE(cache.find(&b, 32, 8, &got)) << "the buffer was reallocated";
  loom_tensor_t other = b;
  other.nb[1] = 64 * 4;
  EXPECT_FALSE(cache.find(&other, 32, 7, &got)) << "other strides";
  // B spans mem[256] .. the last element of row 2: (2 * 288 + 63 * 4 + 4) bytes.
  const cu::ByteSpan span = cu::tensor_span(&b);
  EXPECT_EQ(span.hi - span.lo, 2u * 288 + 64 * 4);
  loom_tensor_t w{};
  w.type = LOOM_TYPE_F32;
  w.ne[0] = 64, w.ne[1] = 1, w.ne[2] = 1, w.ne[3] = 1;
  w.nb[0] = 4, w.nb[1] = 256, w.nb[2] = 256, w.nb[3] = 256;
  w.data = mem;  // mem[0 .. 64): before B
  cache.note_write(&w);
  EXPECT_TRUE(cache.find(&b, 32, 7, &got));
  w.data = reinterpret_cast<uint8_t*>(mem + 256) + 2 * 288 + 63 * 4;  // B's last element
  cache.note_write(&w);
  EXPECT_FALSE(cache.find(&b, 32, 7, &got));
  // Quantized spans count whole blocks.
  loom_tensor_t q{};
  q.type = LOOM_TYPE_Q4_0;
  q.data = mem;
  q.ne[0] = 64, q.ne[1] = 2, q.ne[2] = 1, q.ne[3] = 1;
  q.nb[0] = 18, q.nb[1] = 36, q.nb[2] = 72, q.nb[3] = 72;
  EXPECT_EQ(cu::tensor_span(&q).hi - cu::tensor_span(&q).lo, 72u);
}

class CudaGemvOnHost : public ::testing::Test, public OpTest {
 protected:
  void SetUp() override {
    dev_ = test_device();
    ASSERT_NE(dev_, nullptr) << "cpu plugin not loaded" << registry_report();
  }
};

// B's 8-bit blocks against the suite's rounding rule, bit for bit (d and q
// both: q8_column's d * q in double).
TEST_F(CudaGemvOnHost, ActivationBlocksAreTheSuitesRoundingRule) {
  seed(2802);
  const int64_t k = 512, n = 3;
  Operand b = input(LOOM_TYPE_F32, {k, n, 1, 1}, -3.0f, 3.0f);
  const std::vector<double> bv = b.h.values();
  std::vector<float> x(bv.begin(), bv.end());
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // a zero block: d = 0, every q = 0
  for (int64_t j = 32; j < 64; ++j) b.h.base->values[static_cast<size_t>(j)] = 0.0;
  // Ties: d = 1 exactly, so x * (1 / d) = 2.5, -3.5, 0.5 round to even.
  const float ties[] = {127.0f, 2.5f, -3.5f, 0.5f, -0.5f, 1.5f};
  for (size_t j = 0; j < 6; ++j) {
    x[64 + j] = ties[j];
    b.h.base->values[64 + j] = ties[j];
  }
  for (int block : {32, 256}) {
    for (int64_t c = 0; c < n; ++c) {
      const std::vector<double> want = q8_column(b.h, c, 0, 0, block);
      for (int64_t k0 = 0; k0 < k; k0 += block) {
        int8_t q[256];
        const float d = cu::quantize_act_block(x.data() + c * k + k0, block, q);
        for (int i = 0; i < block; ++i) {
          ASSERT_EQ(static_cast<double>(d) * q[i], want[static_cast<size_t>(k0 + i)])
              << "block " << block << " column " << c << " element " << k0 + i;
        }
      }
    }
  }
  EXPECT_EQ(cu::act_block_elems(LOOM_TYPE_Q4_K), 256);
  EXPECT_EQ(cu::act_block_elems(LOOM_TYPE_Q4_0), 32);
  const float nan_block[32] = {NAN};
  int8_t q[32];
  EXPECT_TRUE(std::isnan(cu::quantize_act_block(nan_block, 32, q)));
}

// The product of one row and column as the kernel computes it: 32 lane
// sums, then the warp's halving tree.
template <typename LaneSum>
float warp_sum(LaneSum lane_sum) {
  float lanes[cu::kWarp];
  for (int lane = 0; lane < cu::kWarp; ++lane) lanes[lane] = lane_sum(lane);
  return cu::tree_reduce(lanes, cu::kWarp, [](float p, float q) { return p + q; });
}

template <int T>
float emulate(const uint8_t* arow, int64_t k, const std::vector<float>& bcol) {
  if constexpr (T != LOOM_TYPE_F32 && T != LOOM_TYPE_F16 && T != LOOM_TYPE_BF16) {
    const int block = cu::act_block_elems(T);
    std::vector<int8_t> xq(static_cast<size_t>(k));
    std::vector<float> xd(static_cast<size_t>(k / block));
    for (int64_t k0 = 0; k0 < k; k0 += block) {
      xd[static_cast<size_t>(k0 / block)] = cu::quantize_act_block(bcol.data() + k0, block, xq.data() + k0);
    }
    return warp_sum([&](int lane) { return cu::quant_lane_sum<T>(arow, k, xq.data(), xd.data(), lane); });
  } else {
    return warp_sum([&](int lane) { return cu::float_lane_sum<T>(arow, k, bcol.data(), lane); });
  }
}

template <int T>
void check_product(CudaGemvOnHost* f) {
  const loom_type_t t = static_cast<loom_type_t>(T);
  SCOPED_TRACE(type_str(t));
  const bool quant = common::type_traits(T).is_quantized;
  const int64_t k = block_elems(t) == 256 ? 768 : 352, m = 5, n = 3;
  Operand a = f->input(t, {k, m, 1, 1});
  Operand b = f->input(LOOM_TYPE_F32, {k, n, 1, 1});
  const size_t rb = row_bytes(t, k);
  const std::vector<double> av = a.h.values();
  std::vector<double> got, ref, tol;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<float> col(static_cast<size_t>(k));
    for (int64_t kk = 0; kk < k; ++kk) col[static_cast<size_t>(kk)] = static_cast<float>(b.h.at(kk, j));
    const std::vector<double> bq = quant ? q8_column(b.h, j, 0, 0, act_block(t)) : std::vector<double>();
    for (int64_t i = 0; i < m; ++i) {
      got.push_back(emulate<T>(a.h.base->bytes.data() + i * rb, k, col));
      double s = 0.0, mag = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double p = av[static_cast<size_t>(i * k + kk)] * (quant ? bq[static_cast<size_t>(kk)] : b.h.at(kk, j));
        s += p;
        mag += std::fabs(p);
      }
      ref.push_back(s);
      tol.push_back(tol_for(LOOM_TYPE_F32, s, mag, k));
    }
  }
  expect_close(got, ref, tol, {m, n, 1, 1}, "gemv " + type_str(t));
}

TEST_F(CudaGemvOnHost, ProductsOfEveryWeightTypeMatchTheSuitesReference) {
  seed(2803);
  check_product<LOOM_TYPE_F32>(this);
  check_product<LOOM_TYPE_F16>(this);
  check_product<LOOM_TYPE_BF16>(this);
  check_product<LOOM_TYPE_Q8_0>(this);
  check_product<LOOM_TYPE_Q4_0>(this);
  check_product<LOOM_TYPE_Q4_1>(this);
  check_product<LOOM_TYPE_Q5_0>(this);
  check_product<LOOM_TYPE_Q5_1>(this);
  check_product<LOOM_TYPE_IQ4_NL>(this);
  check_product<LOOM_TYPE_Q2_K>(this);
  check_product<LOOM_TYPE_Q3_K>(this);
  check_product<LOOM_TYPE_Q4_K>(this);
  check_product<LOOM_TYPE_Q5_K>(this);
  check_product<LOOM_TYPE_Q6_K>(this);
  check_product<LOOM_TYPE_IQ4_XS>(this);
}

}  // namespace
}  // namespace loom::optest
