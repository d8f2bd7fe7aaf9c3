// The BLAS support table and node dispatch: MUL_MAT with A in F32, F16, BF16,
// Q8_0 or Q4_0, B and the result F32, broadcast over dims 2 and 3; views and
// leafs are no-ops (as on the CPU plugin); everything else is refused.
#include <limits>
#include <new>
#include <string>

#include <cblas.h>

#include "common/glue.h"
#include "common/type_traits.h"
#include "ops/ops.h"

namespace loom::blas {

namespace {

bool is_a_type(int32_t t) {
  return t == LOOM_TYPE_F32 || t == LOOM_TYPE_F16 || t == LOOM_TYPE_BF16 || t == LOOM_TYPE_Q8_0 ||
         t == LOOM_TYPE_Q4_0;
}

bool shape_is(const loom_tensor_t* t, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
  return t->ne[0] == n0 && t->ne[1] == n1 && t->ne[2] == n2 && t->ne[3] == n3;
}

// Known type, non-negative extents, whole blocks, quantized blocks contiguous.
bool tensor_ok(const loom_tensor_t* t) {
  if (t == nullptr || !common::type_is_valid(t->type)) return false;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (t->ne[d] < 0) return false;
  }
  const common::TypeTraits& tr = common::type_traits(t->type);
  return t->ne[0] % tr.block_size == 0 && (!tr.is_quantized || t->nb[0] == tr.type_size);
}

const char* check_mul_mat(const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  if (!is_a_type(a->type) || b->type != LOOM_TYPE_F32 || n->type != LOOM_TYPE_F32) return "types";
  if (a->ne[0] != b->ne[0] || !shape_is(n, a->ne[1], b->ne[1], b->ne[2], b->ne[3]) ||
      a->ne[2] <= 0 || a->ne[3] <= 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) {
    return "shapes";
  }
  if (a->ne[0] > kMaxBlasInt || a->ne[1] > kMaxBlasInt || b->ne[1] > kMaxBlasInt) {
    return "extents beyond the BLAS integer range";
  }
  return nullptr;
}

int64_t nelements(const loom_tensor_t* t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

}  // namespace

const char* unsupported_reason(const loom_tensor_t* node) {
  if (node == nullptr) return "null node";
  if (node->op == LOOM_OP_NONE || is_view_op(node->op)) return nullptr;
  if (node->op != LOOM_OP_MUL_MAT) return "op";
  if (!tensor_ok(node)) return "result type or shape";
  for (int i = 0; i < 2; ++i) {
    if (node->src[i] == nullptr) return "missing source";
    if (!tensor_ok(node->src[i])) return "source type or shape";
  }
  return check_mul_mat(node);
}

loom_status_t* run_node(Workspace& ws, const loom_tensor_t* node) {
  if (node == nullptr)
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT, "[blas.compute] null node");
  if (node->op == LOOM_OP_NONE || is_view_op(node->op)) return nullptr;
  if (const char* why = unsupported_reason(node)) {
    return common::make_status(
        LOOM_STATUS_UNIMPLEMENTED,
        "[blas.compute] unsupported node " + describe_node(node) + ": " + why);
  }
  if (nelements(node) == 0) return nullptr;
  if (loom_status_t* st = common::check_node_memory("blas.mul_mat", node, 2)) return st;
  try {
    mul_mat(node, ws);
  } catch (const KernelError& e) {
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT,
                               "[blas.mul_mat] node " + describe_node(node) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return common::make_status(
        LOOM_STATUS_RESOURCE_EXHAUSTED,
        "[blas.mul_mat] node " + describe_node(node) + ": out of host memory for scratch");
  } catch (const std::exception& e) {
    return common::make_status(LOOM_STATUS_INTERNAL,
                               "[blas.mul_mat] node " + describe_node(node) + ": " + e.what());
  }
  return nullptr;
}

}  // namespace loom::blas
