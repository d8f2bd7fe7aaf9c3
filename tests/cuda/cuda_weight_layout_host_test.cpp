// The cuda plugin's split weight layout on the host (plugins/cuda/
// weight_layout.h, plugins/cuda/ops/gemv_split.cuh), no GPU needed:
// - canonical blocks to quants + scales and back, whole and in pieces, and
//   which tensors the layout holds;
// - the split GEMV's per-lane arithmetic (whole blocks per lane, integer
//   sums) against the suite's reference with B rounded, for Q8_0 and Q4_0,
//   rows of one block to many, including fewer blocks than lanes;
// - the other readers (cuBLAS's dequantization, the exact kernel) give what
//   they give over GGUF's blocks, bit for bit;
// - supports_op: a split tensor is read only as a whole MUL_MAT src0.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "common/type_traits.h"
#include "conformance/check.hpp"
#include "conformance/harness.hpp"
#include "conformance/matmul_ref.hpp"
#include "ops/test_device.hpp"
#include "plugins/cuda/ops/act_quant.cuh"
#include "plugins/cuda/ops/gemv.cuh"
#include "plugins/cuda/ops/gemv_split.cuh"
#include "plugins/cuda/ops/launch.cuh"
#include "plugins/cuda/ops/support.h"
#include "plugins/cuda/weight_layout.h"

namespace loom::optest {
namespace {

namespace cu = loom::cuda;
using namespace conformance;  // NOLINT(google-build-using-namespace): the harness's fixture
                              // vocabulary

// Random canonical blocks: a finite f16 scale, random quant bytes.
std::vector<uint8_t> random_blocks(const cu::SplitShape& s, size_t count, std::mt19937& rng) {
  std::vector<uint8_t> out(count * static_cast<size_t>(s.block_bytes));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : out) b = static_cast<uint8_t>(byte(rng));
  for (size_t i = 0; i < count; ++i)
    out[i * static_cast<size_t>(s.block_bytes) + 1] &= 0x3B;  // |d| < 1, finite
  return out;
}

// The whole tensor's split image: quants, then scales.
std::vector<uint8_t> split_image(const cu::SplitShape& s, const std::vector<uint8_t>& canonical) {
  const size_t n = canonical.size() / static_cast<size_t>(s.block_bytes),
               q = static_cast<size_t>(s.quant_bytes);
  std::vector<uint8_t> img(canonical.size());
  cu::split_blocks(s, canonical.data(), n, img.data(), img.data() + n * q);
  return img;
}

TEST(CudaWeightLayout, BlocksSplitAndJoinBackExactlyWholeAndInPieces) {
  std::mt19937 rng(2811);
  for (int32_t type : {LOOM_TYPE_Q4_0, LOOM_TYPE_Q8_0}) {
    cu::SplitShape s{};
    ASSERT_TRUE(cu::split_shape(type, &s));
    EXPECT_EQ(s.block_bytes, s.quant_bytes + 2);
    EXPECT_EQ(static_cast<size_t>(s.block_bytes), common::type_traits(type).type_size);
    const size_t n = 37, q = static_cast<size_t>(s.quant_bytes);
    const std::vector<uint8_t> canonical = random_blocks(s, n, rng);
    const std::vector<uint8_t> img = split_image(s, canonical);
    // Block i's quants at i * Q, its scale at n * Q + 2 i.
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* b = canonical.data() + i * static_cast<size_t>(s.block_bytes);
      ASSERT_EQ(std::memcmp(img.data() + i * q, b + 2, q), 0) << "quants of block " << i;
      ASSERT_EQ(std::memcmp(img.data() + n * q + 2 * i, b, 2), 0) << "scale of block " << i;
      EXPECT_EQ(cu::split_quant_bytes(type), s.quant_bytes);
    }
    // In pieces (as set_tensor writes a range): the same image.
    std::vector<uint8_t> pieces(img.size(), 0xEE);
    for (size_t first = 0; first < n; first += 5) {
      const size_t count = std::min<size_t>(5, n - first);
      cu::split_blocks(s, canonical.data() + first * static_cast<size_t>(s.block_bytes), count,
                       pieces.data() + first * q, pieces.data() + n * q + 2 * first);
    }
    EXPECT_EQ(pieces, img);
    std::vector<uint8_t> back(canonical.size());
    cu::join_blocks(s, img.data(), img.data() + n * q, n, back.data());
    EXPECT_EQ(back, canonical);
  }
  cu::SplitShape s{};
  EXPECT_FALSE(cu::split_shape(LOOM_TYPE_Q4_K, &s));
  EXPECT_FALSE(cu::split_shape(LOOM_TYPE_F16, &s));
}

loom_tensor_t matrix(int32_t type, int64_t k, int64_t m) {
  loom_tensor_t t{};
  t.type = type;
  t.struct_size = sizeof t;
  t.ne[0] = k, t.ne[1] = m, t.ne[2] = 1, t.ne[3] = 1;
  t.nb[0] = common::type_traits(type).type_size;
  t.nb[1] = common::row_size(type, k);
  t.nb[2] = t.nb[3] = t.nb[1] * static_cast<size_t>(m);
  std::snprintf(t.name, sizeof t.name, "w");
  return t;
}

TEST(CudaWeightLayout, HoldsWholeDenseQ8AndQ4MatricesOnly) {
  loom_tensor_t t = matrix(LOOM_TYPE_Q4_0, 96, 24);
  EXPECT_EQ(cu::weight_layout_unsupported(&t), nullptr);
  t = matrix(LOOM_TYPE_Q8_0, 4096, 7);
  EXPECT_EQ(cu::weight_layout_unsupported(&t), nullptr);
  EXPECT_EQ(cu::split_block_count(&t, {32, 34, 32}), static_cast<size_t>(4096 / 32 * 7));
  t = matrix(LOOM_TYPE_Q4_K, 256, 8);
  EXPECT_NE(cu::weight_layout_unsupported(&t), nullptr);
  t = matrix(LOOM_TYPE_F16, 256, 8);
  EXPECT_NE(cu::weight_layout_unsupported(&t), nullptr);
  t = matrix(LOOM_TYPE_Q4_0, 96, 24);
  t.ne[2] = 4;  // a stack of experts (MUL_MAT_ID reads it)
  EXPECT_NE(cu::weight_layout_unsupported(&t), nullptr);
  t = matrix(LOOM_TYPE_Q4_0, 96, 24);
  loom_tensor_t base = t;
  t.view_src = &base;
  EXPECT_NE(cu::weight_layout_unsupported(&t), nullptr);
  t = matrix(LOOM_TYPE_Q4_0, 96, 24);
  t.nb[1] += 18;  // rows apart
  EXPECT_NE(cu::weight_layout_unsupported(&t), nullptr);
  EXPECT_NE(cu::weight_layout_unsupported(nullptr), nullptr);
}

class CudaSplitOnHost : public ::testing::Test, public OpTest {
 protected:
  void SetUp() override {
    dev_ = test_device();
    ASSERT_NE(dev_, nullptr) << "cpu plugin not loaded" << registry_report();
  }
};

float warp_sum(const std::function<float(int)>& lane_sum) {
  float lanes[cu::kWarp];
  for (int lane = 0; lane < cu::kWarp; ++lane) lanes[lane] = lane_sum(lane);
  return cu::tree_reduce(lanes, cu::kWarp, [](float p, float q) { return p + q; });
}

template <int T>
void check_split_product(CudaSplitOnHost* f, int64_t k, int64_t m) {
  const loom_type_t t = static_cast<loom_type_t>(T);
  SCOPED_TRACE(type_str(t) + " K " + std::to_string(k) + " M " + std::to_string(m));
  cu::SplitShape s{};
  ASSERT_TRUE(cu::split_shape(T, &s));
  const int64_t n = 3, nblk = k / 32, total = nblk * m;
  Operand a = f->input(t, {k, m, 1, 1});
  Operand b = f->input(LOOM_TYPE_F32, {k, n, 1, 1});
  const std::vector<uint8_t>& canonical = a.h.base->bytes;
  const std::vector<uint8_t> img = split_image(s, canonical);
  const uint8_t* q = img.data();
  const uint8_t* sc = img.data() + static_cast<size_t>(total * s.quant_bytes);
  const std::vector<double> av = a.h.values();
  std::vector<double> got, ref, tol;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<float> col(static_cast<size_t>(k));
    for (int64_t kk = 0; kk < k; ++kk)
      col[static_cast<size_t>(kk)] = static_cast<float>(b.h.at(kk, j));
    // B's 8-bit blocks as quantize_b writes them (16-byte aligned quants).
    std::vector<int8_t> xq(static_cast<size_t>(k) + 16);
    int8_t* xqa = xq.data() + (16 - reinterpret_cast<uintptr_t>(xq.data()) % 16) % 16;
    std::vector<float> xd(static_cast<size_t>(nblk));
    for (int64_t k0 = 0; k0 < k; k0 += 32)
      xd[static_cast<size_t>(k0 / 32)] = cu::quantize_act_block(col.data() + k0, 32, xqa + k0);
    const std::vector<double> bq = q8_column(b.h, j, 0, 0, 32);
    for (int64_t i = 0; i < m; ++i) {
      got.push_back(warp_sum([&](int lane) {
        return cu::split_lane_sum<T>(q, sc, i * nblk, nblk, xqa, xd.data(), lane);
      }));
      double sum = 0.0, mag = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double p = av[static_cast<size_t>(i * k + kk)] * bq[static_cast<size_t>(kk)];
        sum += p;
        mag += std::fabs(p);
      }
      ref.push_back(sum);
      tol.push_back(tol_for(LOOM_TYPE_F32, sum, mag, k));
      // The exact kernel over rebuilt blocks: gemv_lane_sum's result over
      // the canonical row, bit for bit.
      const size_t rb = common::row_size(T, k);
      const float exact = warp_sum([&](int lane) {
        return cu::split_exact_lane_sum(T, img.data(), total, i * nblk, nblk, col.data(), lane);
      });
      const float canon = warp_sum([&](int lane) {
        return cu::gemv_lane_sum(T, canonical.data() + static_cast<size_t>(i) * rb, s.block_bytes,
                                 k, col.data(), lane);
      });
      ASSERT_EQ(std::memcmp(&exact, &canon, 4), 0) << "exact kernel row " << i << " column " << j;
    }
  }
  expect_close(got, ref, tol, {m, n, 1, 1}, "split gemv " + type_str(t));
  // cuBLAS's A: every element as dequant.cuh gives it from GGUF's block.
  for (int64_t e = 0; e < k * m; ++e) {
    const float want = cu::row_elem(T, canonical.data(), e, s.block_bytes);
    const float have = cu::split_elem(T, img.data(), total, e);
    ASSERT_EQ(std::memcmp(&want, &have, 4), 0) << "element " << e;
  }
}

TEST_F(CudaSplitOnHost, ProductsMatchTheSuitesReferenceAndOtherReadersTheCanonicalBits) {
  seed(2812);
  // One block a row (31 lanes idle), fewer blocks than lanes, a row of
  // whole steps, and steps plus a rest.
  for (int64_t k : {32, 96, 1024, 1056 + 32 * 7}) {
    check_split_product<LOOM_TYPE_Q8_0>(this, k, 5);
    check_split_product<LOOM_TYPE_Q4_0>(this, k, 5);
  }
}

TEST(CudaWeightLayout, SplitTensorsAreReadOnlyAsAWholeMulMatSrc0) {
  static const loom_buffer_type_iface_t weights_iface{};  // stands for the plugin's weights type
  static const loom_buffer_type_iface_t plain_iface{};
  cu::set_weights_type_iface(&weights_iface);
  loom_buffer_type_t wbt{sizeof(loom_buffer_type_t), &weights_iface, nullptr, nullptr};
  loom_buffer_type_t pbt{sizeof(loom_buffer_type_t), &plain_iface, nullptr, nullptr};
  loom_buffer_t wbuf{};
  wbuf.buffer_type = &wbt;
  loom_buffer_t pbuf{};
  pbuf.buffer_type = &pbt;
  alignas(256) static uint8_t mem[1 << 16];
  // A matrix in buffer buf (every tensor at mem: only the layout matters here).
  auto placed = [&](int32_t type, int64_t k, int64_t m, loom_buffer_t* buf) {
    loom_tensor_t t = matrix(type, k, m);
    t.buffer = buf;
    t.data = mem;
    return t;
  };
  loom_tensor_t w = placed(LOOM_TYPE_Q4_0, 256, 8, &wbuf);
  loom_tensor_t plain = placed(LOOM_TYPE_Q4_0, 256, 8, &pbuf);
  EXPECT_TRUE(cu::is_split(&w));
  EXPECT_FALSE(cu::is_split(&plain));
  loom_tensor_t x = placed(LOOM_TYPE_F32, 256, 2, &pbuf);
  loom_tensor_t out = placed(LOOM_TYPE_F32, 8, 2, &pbuf);
  out.op = LOOM_OP_MUL_MAT;
  out.src[0] = &w;
  out.src[1] = &x;
  EXPECT_EQ(cu::unsupported_reason(&out), nullptr);
  out.src[0] = &plain;
  EXPECT_EQ(cu::unsupported_reason(&out), nullptr);
  // GET_ROWS of a split table is declined (it would read quants as blocks).
  loom_tensor_t idx = placed(LOOM_TYPE_I32, 2, 1, &pbuf);
  loom_tensor_t rows = placed(LOOM_TYPE_F32, 256, 2, &pbuf);
  rows.op = LOOM_OP_GET_ROWS;
  rows.src[0] = &w;
  rows.src[1] = &idx;
  const char* why = cu::unsupported_reason(&rows);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("split layout"), std::string::npos) << why;
  rows.src[0] = &plain;
  EXPECT_EQ(cu::unsupported_reason(&rows), nullptr);
  // A view of a split matrix as MUL_MAT's A: declined too.
  loom_tensor_t view = w;
  view.view_src = &w;
  out.src[0] = &view;
  EXPECT_NE(cu::unsupported_reason(&out), nullptr);
  cu::set_weights_type_iface(nullptr);
}

}  // namespace
}  // namespace loom::optest
