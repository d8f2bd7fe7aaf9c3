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

}  // namespace loom::common
