// Element types for applications: names, sizes and row conversion. Thin
// layer over plugins/common so the runtime and plugins agree bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "loom/plugin.h"
#include "loom/runtime/status.hpp"

namespace loom {

bool type_is_valid(int32_t type);
const char* type_name(int32_t type);       // "f32", ..., "invalid"
int64_t type_block_size(int32_t type);     // elements per block
size_t type_size(int32_t type);            // bytes per block
bool type_is_quantized(int32_t type);
bool type_is_float(int32_t type);          // F32, F16, BF16
size_t type_row_size(int32_t type, int64_t n);
// Parse "f32", "q4_0", ... (case-insensitive).
StatusOr<loom_type_t> type_from_name(std::string_view name);

// Row conversions (see plugins/common/quant.h for the exact rounding).
void to_float(int32_t type, const void* src, float* dst, int64_t n);
void from_float(int32_t type, const float* src, void* dst, int64_t n);

const char* op_name(int32_t op);  // "ADD", ..., "INVALID"

}  // namespace loom
