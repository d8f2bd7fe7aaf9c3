// Type facts and conversions against hand-computed bytes: Q8_0 and Q4_0
// blocks, f16 and bf16 rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/op_info.h"
#include "loom/runtime/types.hpp"

namespace loom {
namespace {

uint16_t f16(float x) {
  uint16_t h;
  from_float(LOOM_TYPE_F16, &x, &h, 1);
  return h;
}
float from_f16(uint16_t h) {
  float x;
  to_float(LOOM_TYPE_F16, &h, &x, 1);
  return x;
}
uint16_t bf16(float x) {
  uint16_t h;
  from_float(LOOM_TYPE_BF16, &x, &h, 1);
  return h;
}
float from_bf16(uint16_t h) {
  float x;
  to_float(LOOM_TYPE_BF16, &h, &x, 1);
  return x;
}

TEST(Types, Facts) {
  EXPECT_STREQ(type_name(LOOM_TYPE_Q4_0), "q4_0");
  EXPECT_STREQ(type_name(5), "invalid");
  EXPECT_EQ(type_size(LOOM_TYPE_Q8_0), 34u);
  EXPECT_EQ(type_size(LOOM_TYPE_Q4_0), 18u);
  EXPECT_EQ(type_block_size(LOOM_TYPE_Q8_0), 32);
  EXPECT_EQ(type_size(LOOM_TYPE_BF16), 2u);
  EXPECT_EQ(type_row_size(LOOM_TYPE_Q4_0, 64), 36u);
  EXPECT_TRUE(type_is_float(LOOM_TYPE_BF16));
  EXPECT_FALSE(type_is_float(LOOM_TYPE_I32));
  EXPECT_TRUE(type_is_quantized(LOOM_TYPE_Q8_0));
  EXPECT_FALSE(type_is_valid(LOOM_TYPE_COUNT));
  EXPECT_EQ(*type_from_name("Q8_0"), LOOM_TYPE_Q8_0);
  EXPECT_FALSE(type_from_name("q8_k").ok());  // GGUF has it (a quantizer-internal type); loom does not
  // The message lists every type loom knows, from the one type table.
  const std::string m = type_from_name("q8_k").status().message();
  for (const char* t : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k",
                        "q6_k", "iq4_nl", "iq4_xs", "i32", "i64"}) {
    EXPECT_NE(m.find(t), std::string::npos) << t << " missing from: " << m;
  }
  EXPECT_STREQ(op_name(LOOM_OP_MUL_MAT), "MUL_MAT");
  EXPECT_STREQ(op_name(LOOM_OP_COUNT), "INVALID");
  EXPECT_STREQ(op_name(LOOM_OP_ATTENTION), "ATTENTION");
  // The ABI minor that added each op (host rule 15 of docs/plugin-abi.md).
  EXPECT_EQ(common::op_abi_minor(LOOM_OP_SUM_ROWS), 0u);
  EXPECT_EQ(common::op_abi_minor(LOOM_OP_ATTENTION), 1u);
  EXPECT_FALSE(common::plugin_knows_op(LOOM_ABI_MAKE_VERSION(1, 0), LOOM_OP_ATTENTION));
  EXPECT_TRUE(common::plugin_knows_op(LOOM_ABI_MAKE_VERSION(1, 0), LOOM_OP_SUM_ROWS));
  EXPECT_TRUE(common::plugin_knows_op(LOOM_ABI_MAKE_VERSION(1, 1), LOOM_OP_ATTENTION));
  EXPECT_FALSE(common::plugin_knows_op(LOOM_ABI_MAKE_VERSION(1, 1), LOOM_OP_COUNT));
  EXPECT_STREQ(op_name(LOOM_OP_MUL_MAT_SPARSE_ROWS), "MUL_MAT_SPARSE_ROWS");
  EXPECT_STREQ(op_name(LOOM_OP_MUL_MAT_SPARSE_COLS), "MUL_MAT_SPARSE_COLS");
  EXPECT_EQ(common::op_abi_minor(LOOM_OP_MUL_MAT_SPARSE_ROWS), 3u);
  EXPECT_EQ(common::op_abi_minor(LOOM_OP_MUL_MAT_SPARSE_COLS), 3u);
  EXPECT_FALSE(common::plugin_knows_op(LOOM_ABI_MAKE_VERSION(1, 2), LOOM_OP_MUL_MAT_SPARSE_ROWS));
  EXPECT_TRUE(common::plugin_knows_op(LOOM_ABI_MAKE_VERSION(1, 3), LOOM_OP_MUL_MAT_SPARSE_COLS));
  // Forms: ROPE's frequency factors (src2) are 1.2.
  loom_tensor_t rope{};
  loom_tensor_t ff{};
  rope.op = LOOM_OP_ROPE;
  EXPECT_EQ(common::op_form_abi_minor(&rope), 0u);
  EXPECT_TRUE(common::plugin_knows_node_op(LOOM_ABI_MAKE_VERSION(1, 0), &rope));
  rope.src[2] = &ff;
  EXPECT_EQ(common::op_form_abi_minor(&rope), 2u);
  EXPECT_FALSE(common::plugin_knows_node_op(LOOM_ABI_MAKE_VERSION(1, 1), &rope));
  EXPECT_TRUE(common::plugin_knows_node_op(LOOM_ABI_MAKE_VERSION(1, 2), &rope));
}

TEST(Types, Q8_0BlockByHand) {
  // x[i] = i - 16: amax = 16, d = 16/127 = 0.12598425 (f32), whose f16 is
  // 2^-3 * (1 + 8/1024) = 0.1259765625 = 0x3008. id = 1/d rounds to exactly
  // 7.9375 = 127/16, so q = round-half-away(x * 127/16):
  // -16 -> -127, -15 -> -119.06 -> -119, ..., -8 -> -63.5 -> -64, ...,
  // 8 -> 63.5 -> 64, 9 -> 71.44 -> 71, 15 -> 119.06 -> 119.
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16);
  const int8_t want_qs[32] = {-127, -119, -111, -103, -95, -87, -79, -71, -64, -56, -48,
                              -40,  -32,  -24,  -16,  -8,  0,   8,   16,  24,  32,  40,
                              48,   56,   64,   71,   79,  87,  95,  103, 111, 119};
  loom_block_q8_0_t b;
  from_float(LOOM_TYPE_Q8_0, x, &b, 32);
  uint8_t raw[34];
  std::memcpy(raw, &b, 34);
  EXPECT_EQ(raw[0], 0x08);  // d little-endian
  EXPECT_EQ(raw[1], 0x30);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(static_cast<int8_t>(raw[2 + i]), want_qs[i]) << i;
  float back[32];
  to_float(LOOM_TYPE_Q8_0, &b, back, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(back[i], 0.1259765625f * want_qs[i]) << i;

  // Exact case: amax 127 gives d = 1.0 (0x3C00) and q = x.
  x[0] = -127.0f;
  from_float(LOOM_TYPE_Q8_0, x, &b, 32);
  EXPECT_EQ(b.d, 0x3C00);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[31], 15);
  // All zeros: d = 0 and q = 0 (no division by zero).
  float z[32] = {};
  from_float(LOOM_TYPE_Q8_0, z, &b, 32);
  EXPECT_EQ(b.d, 0);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b.qs[i], 0);
}

TEST(Types, Q4_0BlockByHand) {
  // x[i] = i - 16: largest magnitude is x[0] = -16, so d = -16 / -8 = 2.0
  // (f16 0x4000), id = 0.5, q = min(15, int(x/2 + 8.5)) = min(15, (i+1)/2):
  // q = 0,1,1,2,2,...,15,15 for i = 0..30 and i = 31 -> 16 -> 15.
  // Byte j holds q[j] in the low nibble and q[j+16] in the high nibble.
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16);
  const uint8_t want_qs[16] = {0x80, 0x91, 0x91, 0xA2, 0xA2, 0xB3, 0xB3, 0xC4,
                               0xC4, 0xD5, 0xD5, 0xE6, 0xE6, 0xF7, 0xF7, 0xF8};
  loom_block_q4_0_t b;
  from_float(LOOM_TYPE_Q4_0, x, &b, 32);
  uint8_t raw[18];
  std::memcpy(raw, &b, 18);
  EXPECT_EQ(raw[0], 0x00);
  EXPECT_EQ(raw[1], 0x40);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(raw[2 + j], want_qs[j]) << j;
  // Back: 2 * (q - 8): even i are exact, odd i land one above.
  float back[32];
  to_float(LOOM_TYPE_Q4_0, &b, back, 32);
  for (int i = 0; i < 32; ++i) {
    int q = std::min(15, (i + 1) / 2);
    EXPECT_EQ(back[i], 2.0f * (q - 8)) << i;
  }
  EXPECT_EQ(back[0], -16.0f);
  EXPECT_EQ(back[31], 14.0f);
}

TEST(Types, QuantRowsOfSeveralBlocks) {
  std::vector<float> x(96);
  for (int i = 0; i < 96; ++i) x[i] = std::sin(0.3f * i) * (1 + i / 32);
  std::vector<uint8_t> q(3 * 34);
  from_float(LOOM_TYPE_Q8_0, x.data(), q.data(), 96);
  std::vector<float> y(96);
  to_float(LOOM_TYPE_Q8_0, q.data(), y.data(), 96);
  for (int i = 0; i < 96; ++i) EXPECT_NEAR(y[i], x[i], (1 + i / 32) / 127.0f) << i;
}

TEST(Types, F16KnownValues) {
  EXPECT_EQ(f16(1.0f), 0x3C00);
  EXPECT_EQ(f16(-2.0f), 0xC000);
  EXPECT_EQ(f16(0.5f), 0x3800);
  EXPECT_EQ(f16(65504.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(f16(65519.0f), 0x7BFF);  // below the halfway point to 65536
  EXPECT_EQ(f16(65520.0f), 0x7C00);  // halfway rounds to even = inf
  EXPECT_EQ(f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f16(-0.0f), 0x8000);
  EXPECT_EQ(f16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f16(std::ldexp(3.0f, -24)), 0x0003);
  EXPECT_EQ(f16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (0)
  EXPECT_EQ(f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: tie -> even (2)
  EXPECT_EQ(f16(std::ldexp(1.5f, -25)), 0x0001);  // above the tie
  // Ties between normals go to the even mantissa.
  EXPECT_EQ(f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  uint16_t nan = f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  EXPECT_TRUE(std::isnan(from_f16(nan)));

  EXPECT_EQ(from_f16(0x3C00), 1.0f);
  EXPECT_EQ(from_f16(0x7BFF), 65504.0f);
  EXPECT_EQ(from_f16(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(from_f16(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(from_f16(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(from_f16(0x7E00)));
  EXPECT_TRUE(std::signbit(from_f16(0x8000)));
  // Every finite half survives a round trip.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00) continue;
    ASSERT_EQ(f16(from_f16(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(Types, BF16KnownValues) {
  EXPECT_EQ(bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16(-2.0f), 0xC000);
  EXPECT_EQ(bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie -> even
  EXPECT_EQ(bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
  EXPECT_EQ(bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to inf
  uint16_t nan = bf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(from_bf16(nan)));
  // A NaN whose payload lives only in the low bits must not become inf.
  uint32_t bits = 0x7F800001u;
  float low_nan;
  std::memcpy(&low_nan, &bits, 4);
  EXPECT_TRUE(std::isnan(from_bf16(bf16(low_nan))));
  EXPECT_EQ(from_bf16(0x3F80), 1.0f);
  EXPECT_EQ(from_bf16(0x0001), std::ldexp(1.0f, -133));  // subnormal
}

TEST(Types, IntegerConversionsSaturate) {
  float in[4] = {1.9f, -2.9f, 3e9f, std::numeric_limits<float>::quiet_NaN()};
  int32_t out[4];
  from_float(LOOM_TYPE_I32, in, out, 4);
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], -2);
  EXPECT_EQ(out[2], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(out[3], 0);
}

}  // namespace
}  // namespace loom
