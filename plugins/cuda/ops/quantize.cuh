// Float -> Q8_0 / Q4_0 for one 32-element block (CPY and SET_ROWS into a
// quantized cache): ggml's rounding exactly as plugins/common/quant.cpp
// (Q8_0: d = amax / 127, q = round(x / d); Q4_0: d = max / -8 with max the
// signed value of largest magnitude, q = min(15, (int)(x / d + 8.5))).
#pragma once

#include "hd.cuh"

namespace loom::cuda {

LOOM_HD void quantize_q8_0(const float* x, uint8_t* out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = fmaxf(amax, fabsf(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t h = f32_to_f16(d);
  out[0] = static_cast<uint8_t>(h & 0xFF);
  out[1] = static_cast<uint8_t>(h >> 8);
  for (int j = 0; j < 32; ++j) out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(roundf(x[j] * id)));
}

LOOM_HD void quantize_q4_0(const float* x, uint8_t* out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < fabsf(x[j])) {
      amax = fabsf(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t h = f32_to_f16(d);
  out[0] = static_cast<uint8_t>(h & 0xFF);
  out[1] = static_cast<uint8_t>(h >> 8);
  for (int j = 0; j < 16; ++j) {
    int q0 = static_cast<int>(x[j] * id + 8.5f);
    int q1 = static_cast<int>(x[j + 16] * id + 8.5f);
    q0 = q0 < 15 ? q0 : 15;
    q1 = q1 < 15 ? q1 : 15;
    out[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

// Quantize one block of `type` (Q8_0 = 8 or Q4_0 = 2); false for others.
LOOM_HD bool quantize_block(int type, const float* x, uint8_t* out) {
  if (type == 8) {
    quantize_q8_0(x, out);
    return true;
  }
  if (type == 2) {
    quantize_q4_0(x, out);
    return true;
  }
  return false;
}

}  // namespace loom::cuda
