#include "common/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/fp16.h"

namespace loom::common {

void quantize_block_q8_0(const float* x, loom_block_q8_0_t* out) {
  float amax = 0.0f;
  for (int j = 0; j < LOOM_QK8_0; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  out->d = f32_to_f16(d);
  for (int j = 0; j < LOOM_QK8_0; ++j) out->qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
}

void quantize_block_q4_0(const float* x, loom_block_q4_0_t* out) {
  // ggml keeps the sign of the largest-magnitude value so it maps to -8 exactly.
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < LOOM_QK4_0; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  out->d = f32_to_f16(d);
  constexpr int kHalf = LOOM_QK4_0 / 2;
  for (int j = 0; j < kHalf; ++j) {
    const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
    const int q1 = std::min(15, static_cast<int>(x[j + kHalf] * id + 8.5f));
    out->qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

void dequantize_block_q8_0(const loom_block_q8_0_t* b, float* out) {
  const float d = f16_to_f32(b->d);
  for (int j = 0; j < LOOM_QK8_0; ++j) out[j] = d * static_cast<float>(b->qs[j]);
}

void dequantize_block_q4_0(const loom_block_q4_0_t* b, float* out) {
  const float d = f16_to_f32(b->d);
  constexpr int kHalf = LOOM_QK4_0 / 2;
  for (int j = 0; j < kHalf; ++j) {
    out[j] = d * static_cast<float>((b->qs[j] & 0x0F) - 8);
    out[j + kHalf] = d * static_cast<float>((b->qs[j] >> 4) - 8);
  }
}

namespace {

// float -> integer by value without UB for NaN or out-of-range inputs.
template <typename I>
I float_to_int(float v) {
  if (std::isnan(v)) return 0;
  const double lo = static_cast<double>(std::numeric_limits<I>::min());
  const double hi = static_cast<double>(std::numeric_limits<I>::max());
  const double d = static_cast<double>(v);
  if (d <= lo) return std::numeric_limits<I>::min();
  if (d >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(d);
}

}  // namespace

void to_float_row(int32_t type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case LOOM_TYPE_F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
    case LOOM_TYPE_F16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      break;
    }
    case LOOM_TYPE_BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      break;
    }
    case LOOM_TYPE_Q8_0: {
      const auto* b = static_cast<const loom_block_q8_0_t*>(src);
      for (int64_t i = 0; i < n / LOOM_QK8_0; ++i) dequantize_block_q8_0(b + i, dst + i * LOOM_QK8_0);
      break;
    }
    case LOOM_TYPE_Q4_0: {
      const auto* b = static_cast<const loom_block_q4_0_t*>(src);
      for (int64_t i = 0; i < n / LOOM_QK4_0; ++i) dequantize_block_q4_0(b + i, dst + i * LOOM_QK4_0);
      break;
    }
#define LOOM_DEQUANT_CASE(TYPE, block_t, QK, fn)                                             \
  case TYPE: {                                                                               \
    const auto* b = static_cast<const block_t*>(src);                                        \
    for (int64_t i = 0; i < n / (QK); ++i) fn(b + i, dst + i * (QK));                        \
    break;                                                                                   \
  }
      LOOM_DEQUANT_CASE(LOOM_TYPE_Q4_1, loom_block_q4_1_t, LOOM_QK4_1, dequantize_block_q4_1)
      LOOM_DEQUANT_CASE(LOOM_TYPE_Q5_0, loom_block_q5_0_t, LOOM_QK5_0, dequantize_block_q5_0)
      LOOM_DEQUANT_CASE(LOOM_TYPE_Q5_1, loom_block_q5_1_t, LOOM_QK5_1, dequantize_block_q5_1)
      LOOM_DEQUANT_CASE(LOOM_TYPE_IQ4_NL, loom_block_iq4_nl_t, LOOM_QK4_NL, dequantize_block_iq4_nl)
      LOOM_DEQUANT_CASE(LOOM_TYPE_Q2_K, loom_block_q2_k_t, LOOM_QK_K, dequantize_block_q2_k)
      LOOM_DEQUANT_CASE(LOOM_TYPE_Q3_K, loom_block_q3_k_t, LOOM_QK_K, dequantize_block_q3_k)
      LOOM_DEQUANT_CASE(LOOM_TYPE_Q4_K, loom_block_q4_k_t, LOOM_QK_K, dequantize_block_q4_k)
      LOOM_DEQUANT_CASE(LOOM_TYPE_Q5_K, loom_block_q5_k_t, LOOM_QK_K, dequantize_block_q5_k)
      LOOM_DEQUANT_CASE(LOOM_TYPE_Q6_K, loom_block_q6_k_t, LOOM_QK_K, dequantize_block_q6_k)
      LOOM_DEQUANT_CASE(LOOM_TYPE_IQ4_XS, loom_block_iq4_xs_t, LOOM_QK_K, dequantize_block_iq4_xs)
#undef LOOM_DEQUANT_CASE
    case LOOM_TYPE_I32: {
      const auto* s = static_cast<const int32_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      break;
    }
    case LOOM_TYPE_I64: {
      const auto* s = static_cast<const int64_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      break;
    }
    default:
      break;  // invalid type: callers validate types first
  }
}

bool can_quantize(int32_t type) {
  switch (type) {
    case LOOM_TYPE_F32: case LOOM_TYPE_F16: case LOOM_TYPE_BF16: case LOOM_TYPE_Q8_0:
    case LOOM_TYPE_Q4_0: case LOOM_TYPE_I32: case LOOM_TYPE_I64:
      return true;
    default:
      return false;
  }
}

void from_float_row(int32_t type, const float* src, void* dst, int64_t n) {
  switch (type) {
    case LOOM_TYPE_F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
    case LOOM_TYPE_F16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      break;
    }
    case LOOM_TYPE_BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      break;
    }
    case LOOM_TYPE_Q8_0: {
      auto* b = static_cast<loom_block_q8_0_t*>(dst);
      for (int64_t i = 0; i < n / LOOM_QK8_0; ++i) quantize_block_q8_0(src + i * LOOM_QK8_0, b + i);
      break;
    }
    case LOOM_TYPE_Q4_0: {
      auto* b = static_cast<loom_block_q4_0_t*>(dst);
      for (int64_t i = 0; i < n / LOOM_QK4_0; ++i) quantize_block_q4_0(src + i * LOOM_QK4_0, b + i);
      break;
    }
    case LOOM_TYPE_I32: {
      auto* d = static_cast<int32_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_int<int32_t>(src[i]);
      break;
    }
    case LOOM_TYPE_I64: {
      auto* d = static_cast<int64_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_int<int64_t>(src[i]);
      break;
    }
    default:
      break;
  }
}

}  // namespace loom::common
