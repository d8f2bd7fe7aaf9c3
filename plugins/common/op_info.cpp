#include "common/op_info.h"

#include "common/glue.h"
#include "common/op_table.h"
#include "common/type_traits.h"

namespace loom::common {

const char* op_name(int32_t op) { return op_facts(op).name; }

uint32_t op_abi_minor(int32_t op) { return op_facts(op).abi_minor; }

bool is_view_op(int32_t op) { return op_facts(op).view; }

bool plugin_knows_op(uint32_t plugin_abi_version, int32_t op) {
  return op >= 0 && op < LOOM_OP_COUNT && LOOM_ABI_MAJOR(plugin_abi_version) == LOOM_ABI_VERSION_MAJOR &&
         LOOM_ABI_MINOR(plugin_abi_version) >= op_abi_minor(op);
}

uint32_t op_form_abi_minor(const loom_tensor_t* node) {
  if (node->op == LOOM_OP_ROPE && node->src[2] != nullptr) return 2;  // frequency factors
  if (node->op == LOOM_OP_ATTENTION && (node->src[1]->type == LOOM_TYPE_Q8_0 || node->src[2]->type == LOOM_TYPE_Q8_0)) {
    return 6;  // an 8-bit KV cache
  }
  if (node->op == LOOM_OP_ATTENTION && node->op_params[1] == LOOM_ATTENTION_RANGES) return 4;  // [first, end) per query
  return 0;
}

bool plugin_knows_node_op(uint32_t plugin_abi_version, const loom_tensor_t* node) {
  return plugin_knows_op(plugin_abi_version, node->op) &&
         LOOM_ABI_MINOR(plugin_abi_version) >= op_form_abi_minor(node);
}

std::string describe_node(const loom_tensor_t* n) {
  std::string s = std::string("'") + n->name + "' (" + op_name(n->op);
  for (int i = 0; i < LOOM_MAX_SRC; ++i) {
    if (n->src[i] != nullptr) s += std::string(i == 0 ? " " : ", ") + type_name(n->src[i]->type);
  }
  return s + " -> " + type_name(n->type) + ")";
}

loom_status_t* check_node_memory(const char* where, const loom_tensor_t* node, int n_src) {
  for (int i = -1; i < n_src; ++i) {
    const loom_tensor_t* t = i < 0 ? node : node->src[i];
    if (t == nullptr || t->data != nullptr) continue;
    if (t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3] <= 0) continue;  // nothing to read or write
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       std::string("[") + where + "] node " + describe_node(node) + ": " +
                           (i < 0 ? std::string("result") : "src" + std::to_string(i)) + " has no memory");
  }
  return nullptr;
}

}  // namespace loom::common
