// IEEE half and bfloat16 <-> float conversion (round to nearest even),
// portable and header-only.
#pragma once

#include <cstdint>
#include <cstring>

namespace loom::common {

// Exact: the half's exponent and mantissa are placed in a float and scaled
// by 2^112 (normals and subnormals alike); inf and NaN (payload kept) set
// the float exponent directly. Branch-light and inline so row conversions
// vectorize.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7FFFu;
  uint32_t u = em << 13;
  float f;
  std::memcpy(&f, &u, 4);
  f *= 0x1p112f;
  std::memcpy(&u, &f, 4);
  if (em >= 0x7C00u) u = 0x7F800000u | (em << 13);  // inf / nan
  u |= sign;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_f16(float f);
inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_bf16(float f);  // round to nearest even; NaN stays NaN

}  // namespace loom::common
