// The plugins' inline half -> float conversion (plugins/common/fp16.h), used
// by every F16 kernel, on all 65536 bit patterns against a decoder written
// here from the IEEE definition.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "plugins/common/fp16.h"

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(Fp16, EveryHalfConvertsExactly) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = loom::common::f16_to_f32(static_cast<uint16_t>(h));
    const bool neg = (h & 0x8000u) != 0;
    const uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F) {
      // inf, or NaN with the payload in the top mantissa bits.
      const uint32_t want = (neg ? 0x80000000u : 0u) | 0x7F800000u | (m << 13);
      if (bits(got) != want && ++bad < 10) ADD_FAILURE() << std::hex << "half 0x" << h << " -> 0x" << bits(got);
      continue;
    }
    const double mag = e == 0 ? std::ldexp(static_cast<double>(m), -24)
                              : std::ldexp(1.0 + static_cast<double>(m) / 1024.0, static_cast<int>(e) - 15);
    const double want = neg ? -mag : mag;
    if ((static_cast<double>(got) != want || std::signbit(got) != neg) && ++bad < 10) {
      ADD_FAILURE() << std::hex << "half 0x" << h << std::dec << ": got " << got << " want " << want;
    }
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
