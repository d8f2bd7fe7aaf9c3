// The CUDA kernels' arithmetic on the host (no GPU needed): the
// __host__ __device__ functions of plugins/cuda/ops/*.cuh compiled by the
// host compiler and checked against plugins/common (conversions,
// dequantization of every type, quantization: bit for bit) and against the
// CPU plugin running each op of the op set, with the kernels' reduction
// order replayed (launch.cuh). A wrong formula in a kernel header fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/fp16.h"
#include "common/quant.h"
#include "common/type_traits.h"
#include "conformance/reference.hpp"
#include "plugins/cuda/ops/attention.cuh"
#include "plugins/cuda/ops/dequant.cuh"
#include "plugins/cuda/ops/elementwise.cuh"
#include "plugins/cuda/ops/launch.cuh"
#include "plugins/cuda/ops/quantize.cuh"
#include "plugins/cuda/ops/reduce.cuh"
#include "plugins/cuda/ops/rope.cuh"
#include "plugins/cuda/ops/tensor.cuh"

namespace loom::optest {
namespace {

namespace cu = loom::cuda;
using conformance::is_weight_quant;
using conformance::random_weight_blocks;
using conformance::tol_for;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(CudaMath, HalfConversionsMatchCommonBitForBit) {
  for (uint32_t h = 0; h < 65536; ++h) {
    ASSERT_EQ(bits(cu::f16_to_f32(static_cast<uint16_t>(h))), bits(common::f16_to_f32(static_cast<uint16_t>(h))))
        << "f16 " << h;
    ASSERT_EQ(bits(cu::bf16_to_f32(static_cast<uint16_t>(h))), bits(common::bf16_to_f32(static_cast<uint16_t>(h))))
        << "bf16 " << h;
  }
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    float f;
    const uint32_t u = any(rng);
    std::memcpy(&f, &u, 4);
    ASSERT_EQ(cu::f32_to_f16(f), common::f32_to_f16(f)) << "bits " << u;
    ASSERT_EQ(cu::f32_to_bf16(f), common::f32_to_bf16(f)) << "bits " << u;
  }
}

const loom_type_t kQuantTypes[] = {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0,
                                   LOOM_TYPE_Q5_1, LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q2_K, LOOM_TYPE_Q3_K,
                                   LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_IQ4_XS};

// Random blocks of any quantized type: weight types from the op tests'
// generator, Q8_0 / Q4_0 by quantizing random floats.
std::vector<uint8_t> random_blocks(loom_type_t t, int64_t nblocks, std::mt19937& rng) {
  const common::TypeTraits& tr = common::type_traits(t);
  std::vector<uint8_t> out(static_cast<size_t>(nblocks) * tr.type_size);
  if (is_weight_quant(t)) {
    random_weight_blocks(t, nblocks, rng, out.data());
  } else {
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    std::vector<float> x(static_cast<size_t>(nblocks * tr.block_size));
    for (float& v : x) v = u(rng);
    common::from_float_row(t, x.data(), out.data(), static_cast<int64_t>(x.size()));
  }
  return out;
}

TEST(CudaMath, DequantizationOfEveryTypeMatchesCommonBitForBit) {
  std::mt19937 rng(12);
  for (loom_type_t t : kQuantTypes) {
    SCOPED_TRACE(common::type_name(t));
    const common::TypeTraits& tr = common::type_traits(t);
    const cu::BlockShape s = cu::block_shape(t);
    ASSERT_EQ(s.elems, tr.block_size);
    ASSERT_EQ(static_cast<size_t>(s.bytes), tr.type_size);
    const int64_t nblocks = 64;
    std::vector<uint8_t> blocks = random_blocks(t, nblocks, rng);
    const int64_t n = nblocks * tr.block_size;
    std::vector<float> want(static_cast<size_t>(n));
    common::to_float_row(t, blocks.data(), want.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float got = cu::row_elem(t, blocks.data(), i, 0);
      ASSERT_EQ(bits(got), bits(want[static_cast<size_t>(i)])) << "element " << i << ": " << got << " vs " << want[i];
    }
    // The GEMV step: block_dot against the dequantized block times x.
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(tr.block_size));
    for (int64_t b = 0; b < nblocks; ++b) {
      double ref = 0.0, mag = 0.0;
      for (float& v : x) v = u(rng);
      for (int64_t i = 0; i < tr.block_size; ++i) {
        ref += static_cast<double>(want[b * tr.block_size + i]) * x[i];
        mag += std::fabs(static_cast<double>(want[b * tr.block_size + i]) * x[i]);
      }
      const float got = cu::block_dot(t, blocks.data() + b * tr.type_size, x.data());
      EXPECT_NEAR(got, ref, tol_for(LOOM_TYPE_F32, ref, mag, tr.block_size)) << "block " << b;
    }
  }
}

TEST(CudaMath, PlainElementsLoadAndStoreLikeCommon) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-100.0f, 100.0f);
  for (int k = 0; k < 1000; ++k) {
    const float v = u(rng);
    alignas(8) uint8_t buf[8];
    cu::store_elem(LOOM_TYPE_F16, buf, v);
    EXPECT_EQ(bits(cu::load_elem(LOOM_TYPE_F16, buf)), bits(common::f16_to_f32(common::f32_to_f16(v))));
    cu::store_elem(LOOM_TYPE_BF16, buf, v);
    EXPECT_EQ(bits(cu::load_elem(LOOM_TYPE_BF16, buf)), bits(common::bf16_to_f32(common::f32_to_bf16(v))));
    cu::store_elem(LOOM_TYPE_F32, buf, v);
    EXPECT_EQ(bits(cu::load_elem(LOOM_TYPE_F32, buf)), bits(v));
    const int32_t i32 = static_cast<int32_t>(v);
    std::memcpy(buf, &i32, 4);
    EXPECT_EQ(cu::load_elem(LOOM_TYPE_I32, buf), static_cast<float>(i32));
  }
}

TEST(CudaMath, QuantizeQ8_0AndQ4_0MatchCommonByteForByte) {
  std::mt19937 rng(14);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  float x[32];
  for (int k = 0; k < 2000; ++k) {
    for (float& v : x) v = k % 50 == 0 ? 0.0f : u(rng);  // all-zero blocks too
    loom_block_q8_0_t want8;
    loom_block_q4_0_t want4;
    common::quantize_block_q8_0(x, &want8);
    common::quantize_block_q4_0(x, &want4);
    uint8_t got8[34], got4[18];
    ASSERT_TRUE(cu::quantize_block(LOOM_TYPE_Q8_0, x, got8));
    ASSERT_TRUE(cu::quantize_block(LOOM_TYPE_Q4_0, x, got4));
    ASSERT_EQ(std::memcmp(got8, &want8, 34), 0) << "q8_0 block " << k;
    ASSERT_EQ(std::memcmp(got4, &want4, 18), 0) << "q4_0 block " << k;
  }
  EXPECT_FALSE(cu::quantize_block(LOOM_TYPE_Q4_K, x, nullptr));
}

TEST(CudaMath, BlockShapesAgreeWithTypeTraits) {
  for (int32_t t = 0; t < LOOM_TYPE_COUNT; ++t) {
    const cu::BlockShape s = cu::block_shape(t);
    if (!common::type_is_valid(t)) {
      EXPECT_EQ(s.elems, 0) << t;
      continue;
    }
    EXPECT_EQ(s.elems, common::type_traits(t).block_size) << common::type_name(t);
    EXPECT_EQ(static_cast<size_t>(s.bytes), common::type_traits(t).type_size) << common::type_name(t);
  }
}

TEST(CudaMath, ReductionCombinesAreOrderFree) {
  // argmax: first index on ties, whatever the split.
  std::vector<float> v = {1, 5, 3, 5, -2, 5, 0, 4};
  for (int threads : {1, 2, 4, 8}) {
    std::vector<cu::ArgMax> p(static_cast<size_t>(threads), cu::argmax_init());
    for (size_t i = 0; i < v.size(); ++i) p[i % threads] = cu::argmax_step(p[i % threads], v[i], static_cast<int32_t>(i));
    const cu::ArgMax r = cu::tree_reduce(p.data(), threads, cu::argmax_combine);
    EXPECT_EQ(r.index, 1) << threads << " threads";
    EXPECT_EQ(r.value, 5.0f);
  }
  // softmax pair: -inf elements are skipped; an all -inf row gives zeros.
  cu::MaxSum a = cu::maxsum_step(cu::maxsum_init(), -INFINITY);
  EXPECT_EQ(cu::softmax_value(cu::maxsum_combine(a, cu::maxsum_init()), -INFINITY), 0.0f);
  cu::MaxSum b = cu::maxsum_step(cu::maxsum_step(cu::maxsum_init(), 2.0f), 0.0f);
  cu::MaxSum c = cu::maxsum_step(cu::maxsum_init(), 1.0f);
  const cu::MaxSum bc = cu::maxsum_combine(b, c), cb = cu::maxsum_combine(c, b);
  const double z = std::exp(2.0) + 1.0 + std::exp(1.0);
  EXPECT_NEAR(cu::softmax_value(bc, 2.0f), std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(cu::softmax_value(cb, 1.0f), std::exp(1.0) / z, 1e-6);
}

// The kernels' index helpers on a permuted, padded view: logical element e
// and row r land on the bytes the strides say.
TEST(CudaMath, TensorIndexHelpersFollowStrides) {
  loom_tensor_t t{};
  t.struct_size = sizeof t;
  t.type = LOOM_TYPE_F32;
  const int64_t ne[4] = {5, 3, 4, 2};
  // Rows padded to 7 floats, dims 1 and 2 swapped in memory.
  const size_t nb[4] = {4, 4 * 7 * 4, 4 * 7, 4 * 7 * 4 * 3};
  for (int d = 0; d < 4; ++d) {
    t.ne[d] = ne[d];
    t.nb[d] = nb[d];
  }
  t.data = reinterpret_cast<void*>(0x1000);
  const cu::TArg a = cu::targ(&t);
  EXPECT_EQ(a.nelements(), 120);
  EXPECT_EQ(a.nrows(), 24);
  int64_t e = 0;
  for (int64_t i3 = 0; i3 < ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < ne[1]; ++i1) {
        const int64_t r = (i3 * ne[2] + i2) * ne[1] + i1;
        EXPECT_EQ(a.row(r), a.data + i1 * nb[1] + i2 * nb[2] + i3 * nb[3]) << "row " << r;
        for (int64_t i0 = 0; i0 < ne[0]; ++i0, ++e) {
          int64_t i[4];
          a.index(e, i);
          ASSERT_TRUE(i[0] == i0 && i[1] == i1 && i[2] == i2 && i[3] == i3) << "element " << e;
          EXPECT_EQ(a.offset(i[0], i[1], i[2], i[3]), static_cast<int64_t>(i0 * nb[0] + i1 * nb[1] + i2 * nb[2] + i3 * nb[3]));
        }
      }
  EXPECT_EQ(cu::broadcast_index(7, 1), 0);
  EXPECT_EQ(cu::broadcast_index(7, 3), 1);
}

}  // namespace
}  // namespace loom::optest
