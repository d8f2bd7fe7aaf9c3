#include "common/type_traits.h"

#include <cassert>

namespace loom::common {

namespace {

// Indexed by type id; ids this ABI does not define have name == nullptr.
struct TraitsTable {
  TypeTraits entries[LOOM_TYPE_COUNT] = {};
  TraitsTable() {
    entries[LOOM_TYPE_F32] = {"f32", 1, 4, false, true};
    entries[LOOM_TYPE_F16] = {"f16", 1, 2, false, true};
    entries[LOOM_TYPE_BF16] = {"bf16", 1, 2, false, true};
    entries[LOOM_TYPE_Q8_0] = {"q8_0", LOOM_QK8_0, sizeof(loom_block_q8_0_t), true, false};
    entries[LOOM_TYPE_Q4_0] = {"q4_0", LOOM_QK4_0, sizeof(loom_block_q4_0_t), true, false};
    entries[LOOM_TYPE_Q4_1] = {"q4_1", LOOM_QK4_1, sizeof(loom_block_q4_1_t), true, false};
    entries[LOOM_TYPE_Q5_0] = {"q5_0", LOOM_QK5_0, sizeof(loom_block_q5_0_t), true, false};
    entries[LOOM_TYPE_Q5_1] = {"q5_1", LOOM_QK5_1, sizeof(loom_block_q5_1_t), true, false};
    entries[LOOM_TYPE_IQ4_NL] = {"iq4_nl", LOOM_QK4_NL, sizeof(loom_block_iq4_nl_t), true, false};
    entries[LOOM_TYPE_IQ4_XS] = {"iq4_xs", LOOM_QK_K, sizeof(loom_block_iq4_xs_t), true, false};
    entries[LOOM_TYPE_Q2_K] = {"q2_k", LOOM_QK_K, sizeof(loom_block_q2_k_t), true, false};
    entries[LOOM_TYPE_Q3_K] = {"q3_k", LOOM_QK_K, sizeof(loom_block_q3_k_t), true, false};
    entries[LOOM_TYPE_Q4_K] = {"q4_k", LOOM_QK_K, sizeof(loom_block_q4_k_t), true, false};
    entries[LOOM_TYPE_Q5_K] = {"q5_k", LOOM_QK_K, sizeof(loom_block_q5_k_t), true, false};
    entries[LOOM_TYPE_Q6_K] = {"q6_k", LOOM_QK_K, sizeof(loom_block_q6_k_t), true, false};
    entries[LOOM_TYPE_I32] = {"i32", 1, 4, false, false};
    entries[LOOM_TYPE_I64] = {"i64", 1, 8, false, false};
  }
};

const TraitsTable& table() {
  static const TraitsTable kTable;
  return kTable;
}

}  // namespace

bool type_is_valid(int32_t type) {
  return type >= 0 && type < LOOM_TYPE_COUNT && table().entries[type].name != nullptr;
}

const TypeTraits& type_traits(int32_t type) {
  assert(type_is_valid(type) && "type_traits: invalid type id");
  if (!type_is_valid(type)) return table().entries[LOOM_TYPE_F32];  // release builds: never UB
  return table().entries[type];
}

uint32_t type_abi_minor(int32_t type) {
  switch (type) {
    case LOOM_TYPE_Q4_1: case LOOM_TYPE_Q5_0: case LOOM_TYPE_Q5_1: case LOOM_TYPE_IQ4_NL:
    case LOOM_TYPE_Q2_K: case LOOM_TYPE_Q3_K: case LOOM_TYPE_Q4_K: case LOOM_TYPE_Q5_K:
    case LOOM_TYPE_Q6_K:
      return 2;
    case LOOM_TYPE_IQ4_XS:
      return 4;
    default:
      return 0;
  }
}

bool plugin_knows_type(uint32_t plugin_abi_version, int32_t type) {
  return type_is_valid(type) && LOOM_ABI_MAJOR(plugin_abi_version) == LOOM_ABI_VERSION_MAJOR &&
         LOOM_ABI_MINOR(plugin_abi_version) >= type_abi_minor(type);
}

size_t row_size(int32_t type, int64_t n) {
  const TypeTraits& t = type_traits(type);
  return t.type_size * static_cast<size_t>(n / t.block_size);
}

}  // namespace loom::common
