#include "common/op_table.h"

#include "common/op_check.h"

#include <cmath>
#include <cstring>

#include "common/quant.h"
#include "common/type_traits.h"

namespace loom::common {
namespace {

int64_t nelements(const loom_tensor_t* t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

bool is_float(int32_t t) { return t == LOOM_TYPE_F32 || t == LOOM_TYPE_F16 || t == LOOM_TYPE_BF16; }
bool is_quant(int32_t t) { return type_is_valid(t) && type_traits(t).is_quantized; }
// Quantized types the op set can write (CPY from float, SET_ROWS): the others
// (ABI 1.2 weight types) are read-only.
bool is_writable_quant(int32_t t) { return is_quant(t) && can_quantize(t); }
bool is_index(int32_t t) { return t == LOOM_TYPE_I32 || t == LOOM_TYPE_I64; }

bool same_shape(const loom_tensor_t* a, const loom_tensor_t* b) {
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (a->ne[d] != b->ne[d]) return false;
  }
  return true;
}

bool shape_is(const loom_tensor_t* t, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
  return t->ne[0] == n0 && t->ne[1] == n1 && t->ne[2] == n2 && t->ne[3] == n3;
}

// b can be broadcast over a: every extent of b divides a's.
bool can_repeat(const loom_tensor_t* a, const loom_tensor_t* b) {
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (b->ne[d] <= 0 || a->ne[d] % b->ne[d] != 0) return false;
  }
  return true;
}

bool tensor_ok_impl(const loom_tensor_t* t) {
  if (t == nullptr || !type_is_valid(t->type)) return false;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (t->ne[d] < 0) return false;
  }
  const TypeTraits& tr = type_traits(t->type);
  return t->ne[0] % tr.block_size == 0 && (!tr.is_quantized || t->nb[0] == tr.type_size);
}

const char* check_cpy(const loom_tensor_t* dst, const loom_tensor_t* a, const loom_tensor_t* b) {
  if (dst->type != b->type || !same_shape(dst, b)) return "destination differs from src1";
  if (nelements(a) != nelements(b)) return "element counts differ";
  const int32_t ta = a->type;
  const int32_t tb = b->type;
  if (ta == tb && !is_quant(ta)) return nullptr;  // plain copy, any plain type
  if (is_float(ta) && is_float(tb)) return nullptr;
  if (is_float(ta) && is_writable_quant(tb)) return nullptr;  // tensor_ok: contiguous blocks
  if (is_quant(ta) && is_float(tb)) return nullptr;
  if (ta == tb && a->ne[0] == b->ne[0]) return nullptr;  // quant rows copied as blocks
  return "type combination";
}

// Q [D, H, T], K [D, n_kv, Hkv], V [Dv, n_kv, Hkv], visible I32 [T] ->
// F32 [Dv, H, T]; H a multiple of Hkv; a finite scale. K and V float, or
// (1.6) Q8_0 rows of whole blocks (an 8-bit KV cache; tensor_ok: contiguous
// blocks).
const char* check_attention(const loom_tensor_t* n) {
  const loom_tensor_t* q = n->src[0];
  const loom_tensor_t* k = n->src[1];
  const loom_tensor_t* v = n->src[2];
  const loom_tensor_t* vis = n->src[3];
  const auto kv_type = [](int32_t t) { return is_float(t) || t == LOOM_TYPE_Q8_0; };
  if (!is_float(q->type) || !kv_type(k->type) || !kv_type(v->type) || vis->type != LOOM_TYPE_I32 ||
      n->type != LOOM_TYPE_F32) {
    return "types";
  }
  const int64_t d = q->ne[0], h = q->ne[1], t = q->ne[2], n_kv = k->ne[1], hkv = k->ne[2];
  // (1.4) param [1]: 0 prefix lengths [T], LOOM_ATTENTION_RANGES [first, end) pairs [2, T].
  if (n->op_params[1] != 0 && n->op_params[1] != LOOM_ATTENTION_RANGES) return "form";
  const bool ranges = n->op_params[1] == LOOM_ATTENTION_RANGES;
  if (q->ne[3] != 1 || !shape_is(k, d, n_kv, hkv, 1) || !shape_is(v, v->ne[0], n_kv, hkv, 1) ||
      !(ranges ? shape_is(vis, 2, t, 1, 1) : shape_is(vis, t, 1, 1, 1)) || !shape_is(n, v->ne[0], h, t, 1)) {
    return "shapes";
  }
  if (d < 1 || n_kv < 1 || hkv < 1 || h % hkv != 0) return "heads";
  float scale;
  std::memcpy(&scale, &n->op_params[0], sizeof scale);
  return std::isfinite(scale) ? nullptr : "scale";
}

bool is_2d(const loom_tensor_t* t) { return t->ne[2] == 1 && t->ne[3] == 1; }

// (1.3) MUL_MAT_SPARSE_ROWS: A [K, M], B F32 [K, N], S float [M, N] -> F32
// [M, N]; MUL_MAT_SPARSE_COLS: W [M, K], H F32 [K, N], S float [K, N] -> F32
// [M, N]. All 2-D; a finite threshold.
const char* check_sparse(const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  const loom_tensor_t* s = n->src[2];
  if (!(is_float(a->type) || is_quant(a->type)) || b->type != LOOM_TYPE_F32 || !is_float(s->type) ||
      n->type != LOOM_TYPE_F32) {
    return "types";
  }
  if (!is_2d(a) || !is_2d(b) || !is_2d(s) || !is_2d(n)) return "shapes";
  const bool rows = n->op == LOOM_OP_MUL_MAT_SPARSE_ROWS;
  const int64_t k = rows ? a->ne[0] : a->ne[1];
  const int64_t m = rows ? a->ne[1] : a->ne[0];
  const int64_t ns = b->ne[1];
  const bool ok = b->ne[0] == k && n->ne[0] == m && n->ne[1] == ns &&
                  (rows ? (s->ne[0] == m && s->ne[1] == ns) : (s->ne[0] == k && s->ne[1] == ns));
  if (!ok) return "shapes";
  float t;
  std::memcpy(&t, &n->op_params[0], sizeof t);
  return std::isfinite(t) ? nullptr : "threshold";
}

// (1.5) MUL_MAT_ID: A [K, M, E], B F32 [K, 1 or U, T], ids I32 [U, T] ->
// F32 [M, U, T].
const char* check_mul_mat_id(const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  const loom_tensor_t* ids = n->src[2];
  if (!(is_float(a->type) || is_quant(a->type)) || b->type != LOOM_TYPE_F32 || ids->type != LOOM_TYPE_I32 ||
      n->type != LOOM_TYPE_F32) {
    return "types";
  }
  const int64_t u = ids->ne[0], t = ids->ne[1];
  if (a->ne[3] != 1 || a->ne[2] < 1 || u < 1 || !shape_is(ids, u, t, 1, 1) || b->ne[0] != a->ne[0] ||
      (b->ne[1] != 1 && b->ne[1] != u) || b->ne[2] != t || b->ne[3] != 1 || !shape_is(n, a->ne[1], u, t, 1)) {
    return "shapes";
  }
  return nullptr;
}

const char* check_op(const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  const loom_tensor_t* c = n->src[2];
  const int32_t ta = a->type;
  switch (n->op) {
    case LOOM_OP_GET_ROWS:
      if (b->type != LOOM_TYPE_I32 || !is_float(n->type)) return "types";
      if (!shape_is(n, a->ne[0], b->ne[0], a->ne[2], a->ne[3]) || b->ne[1] != a->ne[2] ||
          b->ne[2] != a->ne[3] || b->ne[3] != 1) {
        return "shapes";
      }
      return nullptr;
    case LOOM_OP_ADD:
    case LOOM_OP_SUB:
    case LOOM_OP_MUL:
    case LOOM_OP_DIV:
      if (!is_float(ta) || !is_float(b->type) || n->type != ta) return "types";
      return same_shape(n, a) && can_repeat(a, b) ? nullptr : "shapes";
    case LOOM_OP_SCALE:
    case LOOM_OP_TANH:
    case LOOM_OP_SILU:
    case LOOM_OP_GELU:
    case LOOM_OP_RELU:
      if (!is_float(ta) || n->type != ta) return "types";
      return same_shape(n, a) ? nullptr : "shapes";
    case LOOM_OP_SWIGLU:
      if (!is_float(ta) || !is_float(b->type) || n->type != ta) return "types";
      return same_shape(n, a) && same_shape(a, b) ? nullptr : "shapes";
    case LOOM_OP_RMS_NORM:
    case LOOM_OP_NORM:
      if (!is_float(ta) || !is_float(n->type)) return "types";
      return same_shape(n, a) ? nullptr : "shapes";
    case LOOM_OP_MUL_MAT:
      if (!(is_float(ta) || is_quant(ta)) || b->type != LOOM_TYPE_F32 || n->type != LOOM_TYPE_F32) {
        return "types";
      }
      if (a->ne[0] != b->ne[0] || !shape_is(n, a->ne[1], b->ne[1], b->ne[2], b->ne[3]) ||
          a->ne[2] <= 0 || a->ne[3] <= 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) {
        return "shapes";
      }
      return nullptr;
    case LOOM_OP_ROPE: {
      const int32_t n_dims = n->op_params[0];
      const int32_t mode = n->op_params[1];
      if (!is_float(ta) || b->type != LOOM_TYPE_I32 || n->type != ta) return "types";
      if (!same_shape(n, a) || !shape_is(b, a->ne[2], 1, 1, 1)) return "shapes";
      if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > a->ne[0]) return "n_dims";
      if (mode != LOOM_ROPE_MODE_NORMAL && mode != LOOM_ROPE_MODE_NEOX) return "mode";
      // (1.2) optional frequency factors: F32 [n_dims / 2].
      if (c != nullptr && (!tensor_ok_impl(c) || c->type != LOOM_TYPE_F32 || !shape_is(c, n_dims / 2, 1, 1, 1))) {
        return "frequency factors";
      }
      return nullptr;
    }
    case LOOM_OP_SOFT_MAX:
      if (!is_float(ta) || !is_float(n->type)) return "types";
      if (!same_shape(n, a)) return "shapes";
      if (b != nullptr) {
        if (!tensor_ok_impl(b) || !is_float(b->type)) return "mask type";
        if (b->ne[0] != a->ne[0] || b->ne[1] < a->ne[1] || b->ne[2] <= 0 || b->ne[3] <= 0 ||
            a->ne[2] % b->ne[2] != 0 || a->ne[3] % b->ne[3] != 0) {
          return "mask shape";
        }
      }
      return nullptr;
    case LOOM_OP_CPY:
      return check_cpy(n, a, b);
    case LOOM_OP_CONT:
      if (n->type != ta) return "types";
      return same_shape(n, a) ? nullptr : "shapes";
    case LOOM_OP_SET_ROWS:
      if (n->type != ta || !(is_float(ta) || is_writable_quant(ta)) || b->type != LOOM_TYPE_F32 ||
          !is_index(c->type)) {
        return "types";
      }
      if (!same_shape(n, a) || b->ne[0] != a->ne[0] || b->ne[2] != a->ne[2] || b->ne[3] != a->ne[3] ||
          !shape_is(c, b->ne[1], b->ne[2], b->ne[3], 1)) {
        return "shapes";
      }
      return nullptr;
    case LOOM_OP_ARGMAX:
      if (ta != LOOM_TYPE_F32 || n->type != LOOM_TYPE_I32) return "types";
      return shape_is(n, a->ne[1], a->ne[2], a->ne[3], 1) && a->ne[0] >= 1 ? nullptr : "shapes";
    case LOOM_OP_SUM_ROWS:
      if (!is_float(ta) || !is_float(n->type)) return "types";
      return shape_is(n, 1, a->ne[1], a->ne[2], a->ne[3]) ? nullptr : "shapes";
    case LOOM_OP_TOP_K: {
      const int32_t k = n->op_params[0];
      if (ta != LOOM_TYPE_F32 || n->type != LOOM_TYPE_I32) return "types";
      if (k < 1 || k > a->ne[0]) return "k";
      return shape_is(n, k, a->ne[1], a->ne[2], a->ne[3]) ? nullptr : "shapes";
    }
    default:
      return "op";
  }
}

// One row per op id, in id order (a static_assert below keeps the count).
const OpFacts kOps[] = {
    // name, minor, n_src, view, inplace, rule
    {"NONE", 0, 0, false, false, nullptr},
    {"RESHAPE", 0, 1, true, false, nullptr},
    {"VIEW", 0, 1, true, false, nullptr},
    {"PERMUTE", 0, 1, true, false, nullptr},
    {"TRANSPOSE", 0, 1, true, false, nullptr},
    {"GET_ROWS", 0, 2, false, false, check_op},
    {"ADD", 0, 2, false, true, check_op},
    {"SUB", 0, 2, false, true, check_op},
    {"MUL", 0, 2, false, true, check_op},
    {"DIV", 0, 2, false, true, check_op},
    {"SCALE", 0, 1, false, true, check_op},
    {"RMS_NORM", 0, 1, false, true, check_op},
    {"NORM", 0, 1, false, true, check_op},
    {"MUL_MAT", 0, 2, false, false, check_op},
    {"ROPE", 0, 2, false, true, check_op},
    {"SOFT_MAX", 0, 1, false, true, check_op},
    {"CPY", 0, 2, false, false, check_op},
    {"CONT", 0, 1, false, false, check_op},
    {"SET_ROWS", 0, 3, false, false, check_op},
    {"SILU", 0, 1, false, true, check_op},
    {"GELU", 0, 1, false, true, check_op},
    {"RELU", 0, 1, false, true, check_op},
    {"SWIGLU", 0, 2, false, true, check_op},
    {"ARGMAX", 0, 1, false, false, check_op},
    {"SUM_ROWS", 0, 1, false, false, check_op},
    {"ATTENTION", 1, 4, false, false, check_attention},
    {"MUL_MAT_SPARSE_ROWS", 3, 3, false, false, check_sparse},
    {"MUL_MAT_SPARSE_COLS", 3, 3, false, false, check_sparse},
    {"MUL_MAT_ID", 5, 3, false, false, check_mul_mat_id},
    {"TOP_K", 5, 1, false, false, check_op},
    {"TANH", 5, 1, false, true, check_op},
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == LOOM_OP_COUNT, "one row per op id");

const OpFacts kInvalid = {"INVALID", 0, 0, false, false, nullptr};

}  // namespace

const OpFacts& op_facts(int32_t op) { return op >= 0 && op < LOOM_OP_COUNT ? kOps[op] : kInvalid; }

bool tensor_ok(const loom_tensor_t* t) { return tensor_ok_impl(t); }

int op_source_count(int32_t op) { return op_facts(op).n_src; }

const char* check_node(const loom_tensor_t* node) {
  const OpFacts& f = op_facts(node->op);
  if (f.rule == nullptr) return "op";
  if (!tensor_ok_impl(node)) return "result type or shape";
  for (int i = 0; i < f.n_src; ++i) {
    if (node->src[i] == nullptr) return "missing source";
    if (!tensor_ok_impl(node->src[i])) return "source type or shape";
  }
  return f.rule(node);
}

}  // namespace loom::common
