// IEEE half and bfloat16 <-> float conversion (round to nearest even),
// portable and header-only.
#pragma once

#include <cstdint>
#include <cstring>

namespace loom::common {

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_bf16(float f);  // round to nearest even; NaN stays NaN

}  // namespace loom::common
