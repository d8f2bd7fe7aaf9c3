#include "loom/runtime/types.hpp"

#include <cctype>
#include <string>

#include "common/op_info.h"
#include "common/quant.h"
#include "common/type_traits.h"

namespace loom {

bool type_is_valid(int32_t type) { return common::type_is_valid(type); }
const char* type_name(int32_t type) { return common::type_name(type); }
int64_t type_block_size(int32_t type) { return type_is_valid(type) ? common::type_traits(type).block_size : 0; }
size_t type_size(int32_t type) { return type_is_valid(type) ? common::type_traits(type).type_size : 0; }
bool type_is_quantized(int32_t type) { return type_is_valid(type) && common::type_traits(type).is_quantized; }
bool type_is_float(int32_t type) { return type_is_valid(type) && common::type_traits(type).is_float; }
size_t type_row_size(int32_t type, int64_t n) { return type_is_valid(type) ? common::row_size(type, n) : 0; }

StatusOr<loom_type_t> type_from_name(std::string_view name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string known;
  for (int32_t t = 0; t < LOOM_TYPE_COUNT; ++t) {
    if (!type_is_valid(t)) continue;
    if (lower == common::type_traits(t).name) return static_cast<loom_type_t>(t);
    known += (known.empty() ? "" : ", ") + std::string(common::type_traits(t).name);
  }
  return invalid_argument("[types.parse] unknown type name '" + std::string(name) + "' (known: " + known + ")");
}

void to_float(int32_t type, const void* src, float* dst, int64_t n) { common::to_float_row(type, src, dst, n); }
void from_float(int32_t type, const float* src, void* dst, int64_t n) { common::from_float_row(type, src, dst, n); }

// The op names are one table, shared with the plugins (common/op_info.h).
const char* op_name(int32_t op) { return common::op_name(op); }

}  // namespace loom
