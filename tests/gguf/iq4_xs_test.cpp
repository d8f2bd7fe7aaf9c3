// IQ4_XS (type 23, ABI 1.4) on the host: its traits, the host rule 15 minor,
// the GGUF reader opening a tensor of it, and plugins/common's decoding of
// hand-built blocks whose every element is known (scales and nibbles chosen so
// each product is exact in f32), so a wrong bit of the layout shows.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/quant.h"
#include "common/type_traits.h"
#include "gguf_writer.hpp"
#include "loom/runtime/gguf.hpp"

namespace loom {
namespace {

const int kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// One block: d (f16 bits), the 8 six-bit sub-block scales ls[s] (stored
// value, the decoder subtracts 32) and qs; the scales packed by hand.
loom_block_iq4_xs_t make_block(uint16_t d, const int ls[8], const uint8_t qs[128]) {
  loom_block_iq4_xs_t b{};
  b.d = d;
  for (int s = 0; s < 8; ++s) {
    b.scales_l[s / 2] = static_cast<uint8_t>(b.scales_l[s / 2] | ((ls[s] & 0x0F) << (4 * (s % 2))));
    b.scales_h = static_cast<uint16_t>(b.scales_h | (((ls[s] >> 4) & 3) << (2 * s)));
  }
  std::memcpy(b.qs, qs, 128);
  return b;
}

TEST(Iq4Xs, TraitsAndAbiMinor) {
  EXPECT_EQ(sizeof(loom_block_iq4_xs_t), 136u);
  EXPECT_EQ(offsetof(loom_block_iq4_xs_t, scales_h), 2u);
  EXPECT_EQ(offsetof(loom_block_iq4_xs_t, scales_l), 4u);
  EXPECT_EQ(offsetof(loom_block_iq4_xs_t, qs), 8u);
  ASSERT_TRUE(common::type_is_valid(LOOM_TYPE_IQ4_XS));
  const common::TypeTraits& t = common::type_traits(LOOM_TYPE_IQ4_XS);
  EXPECT_STREQ(t.name, "iq4_xs");
  EXPECT_EQ(t.block_size, 256);
  EXPECT_EQ(t.type_size, 136u);
  EXPECT_TRUE(t.is_quantized);
  EXPECT_EQ(common::row_size(LOOM_TYPE_IQ4_XS, 1024), 4u * 136u);
  // Host rule 15: added in 1.4, never offered to a plugin built for 1.3.
  EXPECT_EQ(common::type_abi_minor(LOOM_TYPE_IQ4_XS), 4u);
  EXPECT_FALSE(common::plugin_knows_type(LOOM_ABI_MAKE_VERSION(1, 3), LOOM_TYPE_IQ4_XS));
  EXPECT_TRUE(common::plugin_knows_type(LOOM_ABI_MAKE_VERSION(1, 4), LOOM_TYPE_IQ4_XS));
  EXPECT_TRUE(common::plugin_knows_type(LOOM_ABI_MAKE_VERSION(1, 2), LOOM_TYPE_IQ4_NL));
  EXPECT_FALSE(common::can_quantize(LOOM_TYPE_IQ4_XS));  // read-only, like the 1.2 weight types
}

// Sub-block s: scale ls[s]; its byte j holds nibble j (element j) and 15 - j
// (element 16 + j). d = 0.5, so x = 0.5 * (ls - 32) * level, exact in f32.
TEST(Iq4Xs, KnownBlockDecodesElementForElement) {
  const int ls[8] = {0, 1, 31, 32, 33, 47, 63, 40};  // 6-bit: both high bits used (47, 63)
  uint8_t qs[128];
  for (int s = 0; s < 8; ++s)
    for (int j = 0; j < 16; ++j) qs[16 * s + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const loom_block_iq4_xs_t b = make_block(0x3800 /* 0.5 */, ls, qs);
  // The packed bytes, written out: a layout change shows here first.
  EXPECT_EQ(b.scales_l[0], 0x10);
  EXPECT_EQ(b.scales_l[1], 0x0F);
  EXPECT_EQ(b.scales_l[2], 0xF1);
  EXPECT_EQ(b.scales_l[3], 0x8F);
  EXPECT_EQ(b.scales_h, 0xBA90);  // s: 0 0, 1 0, 2 1, 3 2, 4 2, 5 2, 6 3, 7 2
  float y[256];
  common::to_float_row(LOOM_TYPE_IQ4_XS, &b, y, 256);
  for (int s = 0; s < 8; ++s) {
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(y[32 * s + j], 0.5f * static_cast<float>((ls[s] - 32) * kLevels[j])) << s << " " << j;
      EXPECT_EQ(y[32 * s + 16 + j], 0.5f * static_cast<float>((ls[s] - 32) * kLevels[15 - j])) << s << " " << j;
    }
  }
  // A few spelled out.
  EXPECT_EQ(y[0], 2032.0f);      // 0.5 * -32 * -127
  EXPECT_EQ(y[31], 2032.0f);     // high nibble 15 - 15 = 0
  EXPECT_EQ(y[47], -1751.5f);    // sub-block 1, element 15: 0.5 * -31 * 113
  EXPECT_EQ(y[96], 0.0f);        // sub-block 3: ls 32, scale 0
  EXPECT_EQ(y[128 + 8], 0.5f);   // sub-block 4: 0.5 * 1 * 1
  EXPECT_EQ(y[224 + 31], -508.0f);  // sub-block 7: 0.5 * 8 * -127
}

// A scale that is not a power of two and a negative d: dl = d * (ls - 32)
// rounds in f32 first, then dl * level (ggml's order).
TEST(Iq4Xs, RoundingOrderIsGgmls) {
  int ls[8];
  uint8_t qs[128];
  for (int s = 0; s < 8; ++s) ls[s] = 5 + 7 * s;
  for (int i = 0; i < 128; ++i) qs[i] = static_cast<uint8_t>((i * 37 + 11) & 0xFF);
  const uint16_t d = 0xB4CD;  // -0.300048828125
  const loom_block_iq4_xs_t b = make_block(d, ls, qs);
  float y[256];
  common::to_float_row(LOOM_TYPE_IQ4_XS, &b, y, 256);
  const float df = -0.300048828125f;
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32, j = i % 32;
    const int q = j < 16 ? (qs[16 * s + j] & 0x0F) : (qs[16 * s + j - 16] >> 4);
    const float dl = df * static_cast<float>(ls[s] - 32);
    EXPECT_EQ(y[i], dl * static_cast<float>(kLevels[q])) << i;
  }
}

TEST(Iq4Xs, GgufReaderOpensIt) {
  std::vector<uint8_t> data(2 * 136);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13);
  testing::GgufBuilder g;
  g.tensor("blk.0.ffn_up.weight", {256, 2}, 23u, data);
  const std::vector<uint8_t> img = g.build();
  auto f = GgufFile::parse(img.data(), img.size());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->tensors().size(), 1u);
  const auto& t = f->tensors()[0];
  EXPECT_EQ(t.type, uint32_t{LOOM_TYPE_IQ4_XS});
  EXPECT_EQ(t.nbytes, 272u);
  EXPECT_STREQ(gguf_tensor_type_name(t.type), "iq4_xs");
  EXPECT_EQ(std::memcmp(t.data, data.data(), data.size()), 0);
  // A row that is not whole super-blocks is refused with the reason.
  testing::GgufBuilder bad;
  bad.tensor("t", {128, 2}, 23u, std::vector<uint8_t>(136));
  const std::vector<uint8_t> img2 = bad.build();
  auto f2 = GgufFile::parse(img2.data(), img2.size());
  EXPECT_FALSE(f2.ok());
}

}  // namespace
}  // namespace loom
