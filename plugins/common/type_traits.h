// Element type facts shared by the runtime and every plugin: names, block
// sizes, bytes per block, row sizes. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/plugin.h"

namespace loom::common {

struct TypeTraits {
  const char* name;       // "f32", "q4_0", ...
  int64_t block_size;     // elements per block (1 for plain types)
  size_t type_size;       // bytes per block
  bool is_quantized;
  bool is_float;          // F32, F16, BF16
};

// Whether `type` is a type id this ABI version knows.
bool type_is_valid(int32_t type);
// Traits of a valid type (asserts validity; check type_is_valid first).
const TypeTraits& type_traits(int32_t type);
inline const char* type_name(int32_t type) { return type_is_valid(type) ? type_traits(type).name : "invalid"; }
// The ABI minor (of this major) that added type id `type` (0 for the 1.0
// types, 2 for Q4_1, Q5_0, Q5_1, IQ4_NL and the K-quants, 4 for IQ4_XS).
uint32_t type_abi_minor(int32_t type);
// Whether a plugin built for `plugin_abi_version` (packed) knows `type`
// (host rule 15 for types).
bool plugin_knows_type(uint32_t plugin_abi_version, int32_t type);
// Bytes of a row of n elements; n must be a multiple of the block size.
size_t row_size(int32_t type, int64_t n);

}  // namespace loom::common
