// Op builders. Shapes, types and params follow enum loom_op in loom/plugin.h
// exactly; every check failure names the op and both sides.
#include "loom/runtime/ops.hpp"

#include <cmath>
#include <string>

#include "common/op_check.h"
#include "common/op_table.h"
#include "loom/runtime/types.hpp"

namespace loom::op {
namespace {

std::string tag(const char* op) { return std::string("[op.") + op + "] "; }

// Null and foreign-context sources. `role` is how the op calls the source.
Status check_src(const char* op, Context& ctx, const Tensor* t, const char* role) {
  if (!t) return invalid_argument(tag(op) + "source " + role + " is null");
  if (!ctx.owns(t)) {
    return invalid_argument(tag(op) + "source " + role + " (" + t->describe() +
                            ") belongs to another context");
  }
  return Status();
}

Status need_float(const char* op, const Tensor* t, const char* role) {
  if (type_is_float(t->type)) return Status();
  return invalid_argument(tag(op) + role + " (" + t->describe() + ") must be f32, f16 or bf16");
}

Status need_type(const char* op, const Tensor* t, const char* role, loom_type_t type) {
  if (t->type == type) return Status();
  return invalid_argument(tag(op) + role + " (" + t->describe() + ") must be " + type_name(type));
}

bool same_shape(const Tensor* a, const Tensor* b) {
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (a->ne[d] != b->ne[d]) return false;
  }
  return true;
}

// ne[0] of a 1-D tensor (positions, indices): ne[1..3] must be 1.
bool is_vector(const Tensor* t) { return t->ne[1] == 1 && t->ne[2] == 1 && t->ne[3] == 1; }

StatusOr<Tensor*> node(Context& ctx, const char* op, loom_op_t id, loom_type_t type,
                       const int64_t ne[4], std::initializer_list<Tensor*> srcs) {
  StatusOr<Tensor*> r = ctx.new_node(id, type, ne, srcs);
  if (!r.ok()) return r.status().with_context(std::string("op.") + op);
  return r;
}

// The op table's rule (common/op_table.h, what plugins check in supports_op)
// has the last word on a finished node: a builder never makes a node the
// plugins would call malformed. The builders' own checks come first and say
// more; this catches a disagreement between the two.
StatusOr<Tensor*> ruled(const char* op, StatusOr<Tensor*> r) {
  if (!r.ok()) return r;
  if (const char* why = common::check_node(r.value())) {
    return invalid_argument(tag(op) + r.value()->describe() + " breaks the op table's rule: " + why);
  }
  return r;
}

StatusOr<Tensor*> binary(Context& ctx, const char* op, loom_op_t id, Tensor* a, Tensor* b) {
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, b, "b"));
  LOOM_RETURN_IF_ERROR(need_float(op, a, "a"));
  LOOM_RETURN_IF_ERROR(need_float(op, b, "b"));
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (a->ne[d] % b->ne[d] != 0) {
      return invalid_argument(tag(op) + "cannot broadcast b " + b->describe() + " to a " +
                              a->describe() + " (dim " + std::to_string(d) + ": " +
                              std::to_string(a->ne[d]) + " % " + std::to_string(b->ne[d]) + " != 0)");
    }
  }
  return node(ctx, op, id, static_cast<loom_type_t>(a->type), a->ne, {a, b});
}

StatusOr<Tensor*> unary(Context& ctx, const char* op, loom_op_t id, Tensor* a) {
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(need_float(op, a, "a"));
  return node(ctx, op, id, static_cast<loom_type_t>(a->type), a->ne, {a});
}

Status check_eps(const char* op, float eps) {
  if (std::isfinite(eps) && eps >= 0.0f) return Status();
  return invalid_argument(tag(op) + "eps " + std::to_string(eps) + " must be finite and >= 0");
}

// CPY conversions allowed by the ABI (see LOOM_OP_CPY).
bool cpy_allowed(int32_t from, int32_t to) {
  if (type_is_float(from)) return type_is_float(to) || type_is_quantized(to);
  if (type_is_quantized(from)) return type_is_float(to);
  return from == LOOM_TYPE_I32 && to == LOOM_TYPE_I32;
}

// Turns a fresh node into a view of dst (CPY / SET_ROWS write into dst).
void alias(Tensor* t, Tensor* dst) {
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) t->nb[d] = dst->nb[d];
  Tensor* base = dst->base();
  t->view_src = base;
  t->view_offset = dst->view_offset;
  if (base->data) {
    t->data = static_cast<char*>(base->data) + t->view_offset;
    t->buffer = base->buffer;
  }
}

}  // namespace

StatusOr<Tensor*> get_rows(Context& ctx, Tensor* a, Tensor* idx) {
  LOOM_RETURN_IF_ERROR(check_src("get_rows", ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(check_src("get_rows", ctx, idx, "idx"));
  LOOM_RETURN_IF_ERROR(need_type("get_rows", idx, "idx", LOOM_TYPE_I32));
  if (idx->ne[1] != a->ne[2] || idx->ne[2] != a->ne[3] || idx->ne[3] != 1) {
    return invalid_argument(tag("get_rows") + "idx " + idx->describe() + " must be [k, " +
                            std::to_string(a->ne[2]) + ", " + std::to_string(a->ne[3]) +
                            ", 1] for a " + a->describe());
  }
  const int64_t ne[4] = {a->ne[0], idx->ne[0], a->ne[2], a->ne[3]};
  return ruled("get_rows", node(ctx, "get_rows", LOOM_OP_GET_ROWS, LOOM_TYPE_F32, ne, {a, idx}));
}

StatusOr<Tensor*> add(Context& ctx, Tensor* a, Tensor* b) { return ruled("add", binary(ctx, "add", LOOM_OP_ADD, a, b)); }
StatusOr<Tensor*> sub(Context& ctx, Tensor* a, Tensor* b) { return ruled("sub", binary(ctx, "sub", LOOM_OP_SUB, a, b)); }
StatusOr<Tensor*> mul(Context& ctx, Tensor* a, Tensor* b) { return ruled("mul", binary(ctx, "mul", LOOM_OP_MUL, a, b)); }
StatusOr<Tensor*> div(Context& ctx, Tensor* a, Tensor* b) { return ruled("div", binary(ctx, "div", LOOM_OP_DIV, a, b)); }

StatusOr<Tensor*> scale(Context& ctx, Tensor* a, float s, float bias) {
  LOOM_ASSIGN_OR_RETURN(Tensor * t, unary(ctx, "scale", LOOM_OP_SCALE, a));
  t->set_param<float>(0, s);
  t->set_param<float>(1, bias);
  return ruled("scale", t);
}

StatusOr<Tensor*> rms_norm(Context& ctx, Tensor* a, float eps) {
  LOOM_RETURN_IF_ERROR(check_src("rms_norm", ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(need_float("rms_norm", a, "a"));
  LOOM_RETURN_IF_ERROR(check_eps("rms_norm", eps));
  LOOM_ASSIGN_OR_RETURN(Tensor * t, node(ctx, "rms_norm", LOOM_OP_RMS_NORM, LOOM_TYPE_F32, a->ne, {a}));
  t->set_param<float>(0, eps);
  return ruled("rms_norm", t);
}

StatusOr<Tensor*> norm(Context& ctx, Tensor* a, float eps) {
  LOOM_RETURN_IF_ERROR(check_src("norm", ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(need_float("norm", a, "a"));
  LOOM_RETURN_IF_ERROR(check_eps("norm", eps));
  LOOM_ASSIGN_OR_RETURN(Tensor * t, node(ctx, "norm", LOOM_OP_NORM, LOOM_TYPE_F32, a->ne, {a}));
  t->set_param<float>(0, eps);
  return ruled("norm", t);
}

StatusOr<Tensor*> mul_mat(Context& ctx, Tensor* a, Tensor* b) {
  LOOM_RETURN_IF_ERROR(check_src("mul_mat", ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(check_src("mul_mat", ctx, b, "b"));
  if (!type_is_float(a->type) && !type_is_quantized(a->type)) {
    return invalid_argument(tag("mul_mat") + "a (" + a->describe() +
                            ") must be a float or quantized type");
  }
  LOOM_RETURN_IF_ERROR(need_type("mul_mat", b, "b", LOOM_TYPE_F32));
  if (a->ne[0] != b->ne[0] || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) {
    return invalid_argument(tag("mul_mat") + "a " + a->describe() + " and b " + b->describe() +
                            " do not fit: need a.ne[0] == b.ne[0], b.ne[2] % a.ne[2] == 0, "
                            "b.ne[3] % a.ne[3] == 0");
  }
  const int64_t ne[4] = {a->ne[1], b->ne[1], b->ne[2], b->ne[3]};
  return ruled("mul_mat", node(ctx, "mul_mat", LOOM_OP_MUL_MAT, LOOM_TYPE_F32, ne, {a, b}));
}

StatusOr<Tensor*> rope(Context& ctx, Tensor* a, Tensor* pos, int n_dims, int mode,
                       float freq_base, float freq_scale, Tensor* freq_factors) {
  LOOM_RETURN_IF_ERROR(check_src("rope", ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(check_src("rope", ctx, pos, "pos"));
  LOOM_RETURN_IF_ERROR(need_float("rope", a, "a"));
  LOOM_RETURN_IF_ERROR(need_type("rope", pos, "pos", LOOM_TYPE_I32));
  if (!is_vector(pos) || pos->ne[0] != a->ne[2]) {
    return invalid_argument(tag("rope") + "pos " + pos->describe() + " must be [" +
                            std::to_string(a->ne[2]) + "] (one position per token of a " +
                            a->describe() + ")");
  }
  if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > a->ne[0]) {
    return invalid_argument(tag("rope") + "n_dims " + std::to_string(n_dims) +
                            " must be even and in [2, head_dim " + std::to_string(a->ne[0]) + "]");
  }
  if (mode != LOOM_ROPE_MODE_NORMAL && mode != LOOM_ROPE_MODE_NEOX) {
    return invalid_argument(tag("rope") + "mode " + std::to_string(mode) +
                            " is neither 0 (normal) nor 2 (neox)");
  }
  if (!std::isfinite(freq_base) || freq_base <= 0.0f || !std::isfinite(freq_scale)) {
    return invalid_argument(tag("rope") + "freq_base " + std::to_string(freq_base) +
                            " must be finite and > 0, freq_scale " + std::to_string(freq_scale) +
                            " finite");
  }
  if (freq_factors) {
    LOOM_RETURN_IF_ERROR(check_src("rope", ctx, freq_factors, "freq_factors"));
    LOOM_RETURN_IF_ERROR(need_type("rope", freq_factors, "freq_factors", LOOM_TYPE_F32));
    if (!is_vector(freq_factors) || freq_factors->ne[0] != n_dims / 2) {
      return invalid_argument(tag("rope") + "freq_factors " + freq_factors->describe() + " must be [" +
                              std::to_string(n_dims / 2) + "] (n_dims " + std::to_string(n_dims) + " / 2)");
    }
  }
  const auto type = static_cast<loom_type_t>(a->type);
  LOOM_ASSIGN_OR_RETURN(Tensor * t, freq_factors ? node(ctx, "rope", LOOM_OP_ROPE, type, a->ne, {a, pos, freq_factors})
                                                 : node(ctx, "rope", LOOM_OP_ROPE, type, a->ne, {a, pos}));
  t->set_param<int32_t>(0, n_dims);
  t->set_param<int32_t>(1, mode);
  t->set_param<float>(2, freq_base);
  t->set_param<float>(3, freq_scale);
  return ruled("rope", t);
}

StatusOr<Tensor*> soft_max(Context& ctx, Tensor* a, Tensor* mask, float scale) {
  LOOM_RETURN_IF_ERROR(check_src("soft_max", ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(need_float("soft_max", a, "a"));
  if (mask) {
    LOOM_RETURN_IF_ERROR(check_src("soft_max", ctx, mask, "mask"));
    LOOM_RETURN_IF_ERROR(need_float("soft_max", mask, "mask"));
    if (mask->ne[0] != a->ne[0] || mask->ne[1] < a->ne[1] || a->ne[2] % mask->ne[2] != 0 ||
        a->ne[3] % mask->ne[3] != 0) {
      return invalid_argument(tag("soft_max") + "mask " + mask->describe() + " does not fit a " +
                              a->describe() + ": need [ne0, >= ne1, m2, m3] with ne2 % m2 == 0, "
                              "ne3 % m3 == 0");
    }
  }
  StatusOr<Tensor*> r = mask ? node(ctx, "soft_max", LOOM_OP_SOFT_MAX, LOOM_TYPE_F32, a->ne, {a, mask})
                             : node(ctx, "soft_max", LOOM_OP_SOFT_MAX, LOOM_TYPE_F32, a->ne, {a});
  if (!r.ok()) return r;
  r.value()->set_param<float>(0, scale);
  return ruled("soft_max", r);
}

StatusOr<Tensor*> cpy(Context& ctx, Tensor* a, Tensor* dst) {
  LOOM_RETURN_IF_ERROR(check_src("cpy", ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(check_src("cpy", ctx, dst, "dst"));
  if (a->nelements() != dst->nelements()) {
    return invalid_argument(tag("cpy") + "a " + a->describe() + " has " +
                            std::to_string(a->nelements()) + " elements, dst " + dst->describe() +
                            " has " + std::to_string(dst->nelements()));
  }
  if (!cpy_allowed(a->type, dst->type)) {
    return invalid_argument(tag("cpy") + "cannot copy " + std::string(type_name(a->type)) + " to " +
                            type_name(dst->type) + " (a " + a->describe() + ", dst " +
                            dst->describe() + ")");
  }
  LOOM_ASSIGN_OR_RETURN(Tensor * t, node(ctx, "cpy", LOOM_OP_CPY, static_cast<loom_type_t>(dst->type),
                                         dst->ne, {a, dst}));
  alias(t, dst);
  t->set_name(std::string(dst->name[0] ? dst->name : "cpy") + " (copy of " + a->name + ")");
  return ruled("cpy", t);
}

StatusOr<Tensor*> cont(Context& ctx, Tensor* a) {
  LOOM_RETURN_IF_ERROR(check_src("cont", ctx, a, "a"));
  return ruled("cont", node(ctx, "cont", LOOM_OP_CONT, static_cast<loom_type_t>(a->type), a->ne, {a}));
}

StatusOr<Tensor*> set_rows(Context& ctx, Tensor* dst, Tensor* rows, Tensor* idx) {
  LOOM_RETURN_IF_ERROR(check_src("set_rows", ctx, dst, "dst"));
  LOOM_RETURN_IF_ERROR(check_src("set_rows", ctx, rows, "rows"));
  LOOM_RETURN_IF_ERROR(check_src("set_rows", ctx, idx, "idx"));
  if (!cpy_allowed(LOOM_TYPE_F32, dst->type)) {
    return invalid_argument(tag("set_rows") + "dst (" + dst->describe() +
                            ") must be a type f32 copies into (float or quantized)");
  }
  LOOM_RETURN_IF_ERROR(need_type("set_rows", rows, "rows", LOOM_TYPE_F32));
  if (idx->type != LOOM_TYPE_I32 && idx->type != LOOM_TYPE_I64) {
    return invalid_argument(tag("set_rows") + "idx (" + idx->describe() + ") must be i32 or i64");
  }
  if (rows->ne[0] != dst->ne[0] || rows->ne[2] != dst->ne[2] || rows->ne[3] != dst->ne[3]) {
    return invalid_argument(tag("set_rows") + "rows " + rows->describe() + " must be [" +
                            std::to_string(dst->ne[0]) + ", k, " + std::to_string(dst->ne[2]) +
                            ", " + std::to_string(dst->ne[3]) + "] for dst " + dst->describe());
  }
  if (idx->ne[0] != rows->ne[1] || idx->ne[1] != dst->ne[2] || idx->ne[2] != dst->ne[3] ||
      idx->ne[3] != 1) {
    return invalid_argument(tag("set_rows") + "idx " + idx->describe() + " must be [" +
                            std::to_string(rows->ne[1]) + ", " + std::to_string(dst->ne[2]) + ", " +
                            std::to_string(dst->ne[3]) + ", 1] for rows " + rows->describe());
  }
  LOOM_ASSIGN_OR_RETURN(Tensor * t, node(ctx, "set_rows", LOOM_OP_SET_ROWS,
                                         static_cast<loom_type_t>(dst->type), dst->ne,
                                         {dst, rows, idx}));
  alias(t, dst);
  t->set_name(std::string(dst->name[0] ? dst->name : "set_rows") + " (rows set)");
  return ruled("set_rows", t);
}

StatusOr<Tensor*> silu(Context& ctx, Tensor* a) { return ruled("silu", unary(ctx, "silu", LOOM_OP_SILU, a)); }
StatusOr<Tensor*> gelu(Context& ctx, Tensor* a) { return ruled("gelu", unary(ctx, "gelu", LOOM_OP_GELU, a)); }
StatusOr<Tensor*> relu(Context& ctx, Tensor* a) { return ruled("relu", unary(ctx, "relu", LOOM_OP_RELU, a)); }
StatusOr<Tensor*> tanh(Context& ctx, Tensor* a) { return ruled("tanh", unary(ctx, "tanh", LOOM_OP_TANH, a)); }

StatusOr<Tensor*> swiglu(Context& ctx, Tensor* a, Tensor* b) {
  LOOM_RETURN_IF_ERROR(check_src("swiglu", ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(check_src("swiglu", ctx, b, "b"));
  LOOM_RETURN_IF_ERROR(need_float("swiglu", a, "a"));
  LOOM_RETURN_IF_ERROR(need_float("swiglu", b, "b"));
  if (!same_shape(a, b)) {
    return invalid_argument(tag("swiglu") + "a " + a->describe() + " and b " + b->describe() +
                            " must have the same shape");
  }
  return ruled("swiglu", node(ctx, "swiglu", LOOM_OP_SWIGLU, static_cast<loom_type_t>(a->type), a->ne, {a, b}));
}

StatusOr<Tensor*> argmax(Context& ctx, Tensor* a) {
  LOOM_RETURN_IF_ERROR(check_src("argmax", ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(need_type("argmax", a, "a", LOOM_TYPE_F32));
  const int64_t ne[4] = {a->ne[1], a->ne[2], a->ne[3], 1};
  return ruled("argmax", node(ctx, "argmax", LOOM_OP_ARGMAX, LOOM_TYPE_I32, ne, {a}));
}

StatusOr<Tensor*> sum_rows(Context& ctx, Tensor* a) {
  LOOM_RETURN_IF_ERROR(check_src("sum_rows", ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(need_float("sum_rows", a, "a"));
  const int64_t ne[4] = {1, a->ne[1], a->ne[2], a->ne[3]};
  return ruled("sum_rows", node(ctx, "sum_rows", LOOM_OP_SUM_ROWS, LOOM_TYPE_F32, ne, {a}));
}

StatusOr<Tensor*> attention(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* visible, float scale) {
  const char* op = "attention";
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, q, "q"));
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, k, "k"));
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, v, "v"));
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, visible, "visible"));
  LOOM_RETURN_IF_ERROR(need_float(op, q, "q"));
  // K and V: float, or Q8_0 rows of whole blocks (ABI 1.6: an 8-bit cache).
  for (const auto& [t, role] : {std::pair<const Tensor*, const char*>{k, "k"}, {v, "v"}}) {
    if (t->type != LOOM_TYPE_Q8_0) LOOM_RETURN_IF_ERROR(need_float(op, t, role));
    if (t->type == LOOM_TYPE_Q8_0 && (t->ne[0] % 32 != 0 || t->nb[0] != sizeof(loom_block_q8_0_t))) {
      return invalid_argument(tag(op) + role + " (" + t->describe() + ") must have rows of whole Q8_0 blocks (ne[0] " +
                              std::to_string(t->ne[0]) + " a multiple of 32)");
    }
  }
  LOOM_RETURN_IF_ERROR(need_type(op, visible, "visible", LOOM_TYPE_I32));
  const int64_t d = q->ne[0], n_head = q->ne[1], n_tok = q->ne[2];
  const int64_t n_kv = k->ne[1], n_head_kv = k->ne[2];
  if (q->ne[3] != 1 || k->ne[0] != d || k->ne[3] != 1 || n_kv < 1 || n_head_kv < 1) {
    return invalid_argument(tag(op) + "q " + q->describe() + " and k " + k->describe() +
                            " must be [D, H, T] and [D, n_kv >= 1, Hkv >= 1]");
  }
  if (v->ne[1] != n_kv || v->ne[2] != n_head_kv || v->ne[3] != 1) {
    return invalid_argument(tag(op) + "v " + v->describe() + " must be [Dv, " + std::to_string(n_kv) + ", " +
                            std::to_string(n_head_kv) + "] like k " + k->describe());
  }
  if (n_head % n_head_kv != 0) {
    return invalid_argument(tag(op) + "q's " + std::to_string(n_head) + " heads are not a multiple of k's " +
                            std::to_string(n_head_kv) + " (q " + q->describe() + ", k " + k->describe() + ")");
  }
  // [T]: prefix lengths; [2, T]: [first, end) per query (ABI 1.4).
  const bool ranges = visible->ne[0] == 2 && visible->ne[1] == n_tok && visible->ne[2] == 1 && visible->ne[3] == 1 &&
                      !(is_vector(visible) && visible->ne[0] == n_tok);
  if (!ranges && (!is_vector(visible) || visible->ne[0] != n_tok)) {
    return invalid_argument(tag(op) + "visible " + visible->describe() + " must be [" + std::to_string(n_tok) +
                            "] (one length per query of q " + q->describe() + ") or [2, " + std::to_string(n_tok) +
                            "] (a [first, end) range per query)");
  }
  if (!std::isfinite(scale)) {
    return invalid_argument(tag(op) + "scale " + std::to_string(scale) + " must be finite");
  }
  const int64_t ne[4] = {v->ne[0], n_head, n_tok, 1};
  LOOM_ASSIGN_OR_RETURN(Tensor * t, node(ctx, op, LOOM_OP_ATTENTION, LOOM_TYPE_F32, ne, {q, k, v, visible}));
  t->set_param<float>(0, scale);
  if (ranges) t->set_param<int32_t>(1, LOOM_ATTENTION_RANGES);
  return ruled("attention", t);
}

namespace {

// Shared checks of the two sparse products: 2-D tensors, a MUL_MAT weight
// type, F32 activations, float scores of `score_rows` x N, a finite threshold.
Status check_sparse(const char* op, Context& ctx, Tensor* w, Tensor* x, Tensor* scores, float threshold,
                    int64_t k, int64_t score_rows) {
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, w, "w"));
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, x, "x"));
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, scores, "scores"));
  LOOM_RETURN_IF_ERROR(need_type(op, x, "x", LOOM_TYPE_F32));
  LOOM_RETURN_IF_ERROR(need_float(op, scores, "scores"));
  if (!type_is_float(w->type) && !type_is_quantized(w->type)) {
    return invalid_argument(tag(op) + "w (" + w->describe() + ") must be a float or quantized weight type");
  }
  for (const Tensor* t : {w, x, scores}) {
    if (t->ne[2] != 1 || t->ne[3] != 1) {
      return invalid_argument(tag(op) + t->describe() + " must be 2-D (ne[2] = ne[3] = 1)");
    }
  }
  if (x->ne[0] != k || scores->ne[0] != score_rows || scores->ne[1] != x->ne[1]) {
    return invalid_argument(tag(op) + "w " + w->describe() + ", x " + x->describe() + " and scores " +
                            scores->describe() + " do not match (x must be [" + std::to_string(k) +
                            ", N], scores [" + std::to_string(score_rows) + ", N])");
  }
  if (!std::isfinite(threshold)) {
    return invalid_argument(tag(op) + "threshold " + std::to_string(threshold) + " must be finite");
  }
  return Status();
}

}  // namespace

StatusOr<Tensor*> mul_mat_sparse_rows(Context& ctx, Tensor* a, Tensor* b, Tensor* scores, float threshold) {
  const char* op = "mul_mat_sparse_rows";
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, a, "w"));
  LOOM_RETURN_IF_ERROR(check_sparse(op, ctx, a, b, scores, threshold, a->ne[0], a->ne[1]));
  const int64_t ne[4] = {a->ne[1], b->ne[1], 1, 1};
  LOOM_ASSIGN_OR_RETURN(Tensor * t, node(ctx, op, LOOM_OP_MUL_MAT_SPARSE_ROWS, LOOM_TYPE_F32, ne, {a, b, scores}));
  t->set_param<float>(0, threshold);
  return ruled("mul_mat_sparse_rows", t);
}

StatusOr<Tensor*> mul_mat_sparse_cols(Context& ctx, Tensor* w, Tensor* h, Tensor* scores, float threshold) {
  const char* op = "mul_mat_sparse_cols";
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, w, "w"));
  LOOM_RETURN_IF_ERROR(check_sparse(op, ctx, w, h, scores, threshold, w->ne[1], w->ne[1]));
  const int64_t ne[4] = {w->ne[0], h->ne[1], 1, 1};
  LOOM_ASSIGN_OR_RETURN(Tensor * t, node(ctx, op, LOOM_OP_MUL_MAT_SPARSE_COLS, LOOM_TYPE_F32, ne, {w, h, scores}));
  t->set_param<float>(0, threshold);
  return ruled("mul_mat_sparse_cols", t);
}

StatusOr<Tensor*> mul_mat_id(Context& ctx, Tensor* a, Tensor* b, Tensor* ids) {
  const char* op = "mul_mat_id";
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, b, "b"));
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, ids, "ids"));
  LOOM_RETURN_IF_ERROR(need_type(op, b, "b", LOOM_TYPE_F32));
  LOOM_RETURN_IF_ERROR(need_type(op, ids, "ids", LOOM_TYPE_I32));
  if (!type_is_float(a->type) && !type_is_quantized(a->type)) {
    return invalid_argument(tag(op) + "a (" + a->describe() + ") must be a float or quantized weight type");
  }
  const int64_t n_used = ids->ne[0], n_tok = ids->ne[1];
  if (a->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1) {
    return invalid_argument(tag(op) + "a " + a->describe() + " must be [K, M, n_expert] and ids " +
                            ids->describe() + " [n_used, T]");
  }
  if (b->ne[0] != a->ne[0] || (b->ne[1] != 1 && b->ne[1] != n_used) || b->ne[2] != n_tok || b->ne[3] != 1) {
    return invalid_argument(tag(op) + "b " + b->describe() + " must be [" + std::to_string(a->ne[0]) + ", 1 or " +
                            std::to_string(n_used) + ", " + std::to_string(n_tok) + "] for a " + a->describe() +
                            " and ids " + ids->describe());
  }
  const int64_t ne[4] = {a->ne[1], n_used, n_tok, 1};
  return ruled(op, node(ctx, op, LOOM_OP_MUL_MAT_ID, LOOM_TYPE_F32, ne, {a, b, ids}));
}

StatusOr<Tensor*> top_k(Context& ctx, Tensor* a, int k) {
  const char* op = "top_k";
  LOOM_RETURN_IF_ERROR(check_src(op, ctx, a, "a"));
  LOOM_RETURN_IF_ERROR(need_type(op, a, "a", LOOM_TYPE_F32));
  if (k < 1 || k > a->ne[0]) {
    return invalid_argument(tag(op) + "k = " + std::to_string(k) + " must be in [1, " + std::to_string(a->ne[0]) +
                            "] for rows of a " + a->describe());
  }
  const int64_t ne[4] = {k, a->ne[1], a->ne[2], a->ne[3]};
  LOOM_ASSIGN_OR_RETURN(Tensor * t, node(ctx, op, LOOM_OP_TOP_K, LOOM_TYPE_I32, ne, {a}));
  t->set_param<int32_t>(0, k);
  return ruled(op, t);
}

// The in-place contract lives with the op's other facts (common/op_table.h).
bool op_can_be_inplace(int32_t op) { return common::op_facts(op).inplace; }

}  // namespace loom::op
