// Row conversion between float and every loom type (quantize/dequantize),
// block layouts exactly GGUF's (see loom/plugin.h). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/plugin.h"

namespace loom::common {

// Convert n contiguous elements of `type` at src to float. For quantized
// types n is a multiple of the block size. I32/I64 convert by value.
void to_float_row(int32_t type, const void* src, float* dst, int64_t n);
// Convert n floats to n contiguous elements of `type` (quantizes blocks;
// n a multiple of the block size for quantized types).
void from_float_row(int32_t type, const float* src, void* dst, int64_t n);

// One block each, the reference quantizers (ggml's rounding: Q8_0 d = amax/127,
// q = round(x/d); Q4_0 d = max/-8 where max is the signed value of largest
// magnitude, q = min(15, (int)(x/d + 8.5))).
void quantize_block_q8_0(const float* x, loom_block_q8_0_t* out);
void quantize_block_q4_0(const float* x, loom_block_q4_0_t* out);
void dequantize_block_q8_0(const loom_block_q8_0_t* b, float* out);
void dequantize_block_q4_0(const loom_block_q4_0_t* b, float* out);

// The ABI 1.2 types (quant_k.cpp): one block each, ggml's exact decoding.
void dequantize_block_q4_1(const loom_block_q4_1_t* b, float* out);
void dequantize_block_q5_0(const loom_block_q5_0_t* b, float* out);
void dequantize_block_q5_1(const loom_block_q5_1_t* b, float* out);
void dequantize_block_iq4_nl(const loom_block_iq4_nl_t* b, float* out);
void dequantize_block_q2_k(const loom_block_q2_k_t* b, float* out);
void dequantize_block_q3_k(const loom_block_q3_k_t* b, float* out);
void dequantize_block_q4_k(const loom_block_q4_k_t* b, float* out);
void dequantize_block_q5_k(const loom_block_q5_k_t* b, float* out);
void dequantize_block_q6_k(const loom_block_q6_k_t* b, float* out);
// ABI 1.4 (quant_k.cpp): IQ4_XS, ggml's exact decoding.
void dequantize_block_iq4_xs(const loom_block_iq4_xs_t* b, float* out);
// IQ4_XS: the 6-bit scale of sub-block s (0..7), not yet minus 32.
int iq4_xs_scale(const loom_block_iq4_xs_t* b, int s);
// IQ4_NL's 16 levels.
extern const int8_t kIq4nlValues[16];
// Q4_K / Q5_K: the 6-bit scale and min of sub-block j (0..7) from the
// 12 packed bytes.
void k_scale_min(int j, const uint8_t* packed, uint8_t* scale, uint8_t* min);
// Q3_K: the 16 signed scales (already minus 32) from the 12 packed bytes.
void q3_k_scales(const uint8_t packed[12], int8_t out[16]);
// Whether from_float_row can write `type` (F32/F16/BF16, Q8_0, Q4_0,
// I32/I64; the ABI 1.2 weight types are read-only here).
bool can_quantize(int32_t type);

}  // namespace loom::common
