// The Vulkan support table (the CPU plugin's rules, minus GET_ROWS from I64
// and sizes past 32-bit addressing) and node -> dispatch planning: which
// shader variant, push constants (offsets, extents, strides, parameters) and
// how many workgroups.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/op_info.h"
#include "common/type_traits.h"
#include "ops/ops.h"

namespace loom::vulkan {

namespace {

constexpr uint32_t kElemWg = 256;   // elementwise shaders
constexpr int64_t kMatVecMaxN = 8;  // mul_mat_vec.comp MAX_N
constexpr int64_t kShortK = 128;    // rows shorter than this: mul_mat_rows.comp
constexpr uint64_t kMaxU32 = 0xFFFFFFFFull;

bool is_float(int32_t t) { return t == LOOM_TYPE_F32 || t == LOOM_TYPE_F16 || t == LOOM_TYPE_BF16; }
bool is_quant(int32_t t) { return t == LOOM_TYPE_Q8_0 || t == LOOM_TYPE_Q4_0; }
bool is_index(int32_t t) { return t == LOOM_TYPE_I32 || t == LOOM_TYPE_I64; }

int64_t nrows(const loom_tensor_t* t) { return t->ne[1] * t->ne[2] * t->ne[3]; }
int64_t nelements(const loom_tensor_t* t) { return t->ne[0] * nrows(t); }

bool same_shape(const loom_tensor_t* a, const loom_tensor_t* b) {
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (a->ne[d] != b->ne[d]) return false;
  }
  return true;
}

bool shape_is(const loom_tensor_t* t, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
  return t->ne[0] == n0 && t->ne[1] == n1 && t->ne[2] == n2 && t->ne[3] == n3;
}

bool can_repeat(const loom_tensor_t* a, const loom_tensor_t* b) {
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (b->ne[d] <= 0 || a->ne[d] % b->ne[d] != 0) return false;
  }
  return true;
}

// Known type, sane extents, whole blocks, and small enough for the shaders'
// 32-bit element and byte arithmetic.
bool tensor_ok(const loom_tensor_t* t) {
  if (t == nullptr || !common::type_is_valid(t->type)) return false;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (t->ne[d] < 0 || static_cast<uint64_t>(t->ne[d]) > kMaxU32 || t->nb[d] > kMaxU32)
      return false;
  }
  if (static_cast<uint64_t>(nelements(t)) >= (uint64_t{1} << 31)) return false;
  const common::TypeTraits& tr = common::type_traits(t->type);
  return t->ne[0] % tr.block_size == 0 && (!tr.is_quantized || t->nb[0] == tr.type_size);
}

int n_sources(int32_t op) {
  switch (op) {
    case LOOM_OP_GET_ROWS:
    case LOOM_OP_ADD:
    case LOOM_OP_SUB:
    case LOOM_OP_MUL:
    case LOOM_OP_DIV:
    case LOOM_OP_MUL_MAT:
    case LOOM_OP_ROPE:
    case LOOM_OP_CPY:
    case LOOM_OP_SWIGLU:
      return 2;
    case LOOM_OP_SET_ROWS:
      return 3;
    default:
      return 1;
  }
}

const char* check_cpy(const loom_tensor_t* dst, const loom_tensor_t* a, const loom_tensor_t* b) {
  if (dst->type != b->type || !same_shape(dst, b)) return "destination differs from src1";
  if (nelements(a) != nelements(b)) return "element counts differ";
  const int32_t ta = a->type;
  const int32_t tb = b->type;
  if (ta == tb && !is_quant(ta)) return nullptr;
  if (is_float(ta) && is_float(tb)) return nullptr;
  if (is_float(ta) && is_quant(tb)) return nullptr;
  if (is_quant(ta) && is_float(tb)) return nullptr;
  if (ta == tb && a->ne[0] == b->ne[0]) return nullptr;
  return "type combination";
}

const char* check_op(const OpCaps& caps, const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  const loom_tensor_t* c = n->src[2];
  const int32_t ta = a->type;
  switch (n->op) {
    case LOOM_OP_GET_ROWS:
      // Sources of any type but I64 (the shaders have no 64-bit integers).
      if (b->type != LOOM_TYPE_I32 || !is_float(n->type) || ta == LOOM_TYPE_I64) return "types";
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
      if (static_cast<uint64_t>(b->ne[2] * b->ne[3]) > caps.max_groups[2]) return "batch count";
      return nullptr;
    case LOOM_OP_ROPE: {
      const int32_t n_dims = n->op_params[0];
      const int32_t mode = n->op_params[1];
      if (!is_float(ta) || b->type != LOOM_TYPE_I32 || n->type != ta) return "types";
      if (!same_shape(n, a) || !shape_is(b, a->ne[2], 1, 1, 1)) return "shapes";
      if (n_dims < 0 || n_dims % 2 != 0 || n_dims > a->ne[0] || n_dims > 0xFFFF) return "n_dims";
      if (mode != LOOM_ROPE_MODE_NORMAL && mode != LOOM_ROPE_MODE_NEOX) return "mode";
      return nullptr;
    }
    case LOOM_OP_SOFT_MAX:
      if (!is_float(ta) || !is_float(n->type)) return "types";
      if (!same_shape(n, a)) return "shapes";
      if (b != nullptr) {
        if (!tensor_ok(b) || !is_float(b->type)) return "mask type";
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
      if (n->type != ta || !(is_float(ta) || is_quant(ta)) || b->type != LOOM_TYPE_F32 ||
          !is_index(c->type)) {
        return "types";
      }
      if (!same_shape(n, a) || b->ne[0] != a->ne[0] || b->ne[2] != a->ne[2] ||
          b->ne[3] != a->ne[3] || !shape_is(c, b->ne[1], b->ne[2], b->ne[3], 1)) {
        return "shapes";
      }
      return nullptr;
    case LOOM_OP_ARGMAX:
      if (ta != LOOM_TYPE_F32 || n->type != LOOM_TYPE_I32) return "types";
      return shape_is(n, a->ne[1], a->ne[2], a->ne[3], 1) && a->ne[0] >= 1 ? nullptr : "shapes";
    case LOOM_OP_SUM_ROWS:
      if (!is_float(ta) || !is_float(n->type)) return "types";
      return shape_is(n, 1, a->ne[1], a->ne[2], a->ne[3]) ? nullptr : "shapes";
    default:
      return "op";
  }
}

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float param_f32(const loom_tensor_t* t, int i) {
  float v;
  std::memcpy(&v, &t->op_params[i], 4);
  return v;
}

// Smallest power of two >= n, clamped to [32, 256]: workgroup size of the
// one-workgroup-per-row shaders.
uint32_t row_wg(int64_t n) {
  uint32_t wg = 32;
  while (wg < 256 && static_cast<int64_t>(wg) < n) wg *= 2;
  return wg;
}

// Bytes the shaders touch: alignment each offset and stride must have.
uint64_t type_align(int32_t t) {
  return (t == LOOM_TYPE_F32 || t == LOOM_TYPE_I32 || t == LOOM_TYPE_I64) ? 4 : 2;
}

class Planner {
 public:
  Planner(const OpCaps& caps, const Resolver& resolve, Dispatch* out)
      : caps_(caps), resolve_(resolve), d_(out) {}

  // Describe tensor t at slot k (0 = destination); "" or the error.
  std::string bind(int k, const loom_tensor_t* t) {
    Location loc;
    std::string err = resolve_(t, &loc);
    if (!err.empty()) return err;
    const uint64_t align = type_align(t->type);
    uint64_t extent = 0;
    if (nelements(t) > 0) {
      const common::TypeTraits& tr = common::type_traits(t->type);
      extent = tr.type_size;
      for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
        const int64_t n = d == 0 ? t->ne[0] / tr.block_size : t->ne[d];
        extent += static_cast<uint64_t>(n - 1) * t->nb[d];
        if (n > 1 && t->nb[d] % align != 0)
          return "stride nb[" + std::to_string(d) + "] not aligned";
      }
    }
    if (loc.offset % align != 0)
      return "data offset " + std::to_string(loc.offset) + " not aligned";
    if (loc.offset + extent > loc.buffer_size) {
      return "tensor '" + std::string(t->name) + "' spans bytes [" + std::to_string(loc.offset) +
             ", " + std::to_string(loc.offset + extent) + ") of a " +
             std::to_string(loc.buffer_size) + "-byte buffer";
    }
    TensorDesc& td = d_->pc.t[k];
    td.off = static_cast<uint32_t>(loc.offset);
    for (int i = 0; i < 4; ++i) {
      td.ne[i] = static_cast<uint32_t>(t->ne[i]);
      td.nb[i] = static_cast<uint32_t>(t->nb[i]);
    }
    d_->buffers[k] = loc.buffer;
    d_->begin[k] = loc.offset;
    d_->end[k] = loc.offset + extent;
    d_->pc.p[0] |= static_cast<uint32_t>(t->type) << (8 * k);
    return "";
  }

  // Slot k unused: bind the destination's buffer with an empty range.
  void unused(int k) {
    d_->buffers[k] = d_->buffers[0];
    d_->begin[k] = d_->end[k] = 0;
  }

  // A 1-D grid of `items` invocations in workgroups of wg (wrapping into y).
  std::string grid(uint64_t items, uint32_t wg) { return groups((items + wg - 1) / wg, wg); }
  std::string groups(uint64_t n_groups, uint32_t wg) {
    d_->spec[0] = wg;
    const uint64_t x = std::min<uint64_t>(std::max<uint64_t>(n_groups, 1), caps_.max_groups[0]);
    const uint64_t y = (n_groups + x - 1) / x;
    if (y > caps_.max_groups[1])
      return std::to_string(n_groups) + " workgroups exceed the device's grid";
    d_->groups[0] = static_cast<uint32_t>(x);
    d_->groups[1] = static_cast<uint32_t>(std::max<uint64_t>(y, 1));
    d_->groups[2] = 1;
    return "";
  }

 private:
  const OpCaps& caps_;
  const Resolver& resolve_;
  Dispatch* d_;
};

#define LOOM_VK_TRY(expr)       \
  do {                          \
    std::string e_ = (expr);    \
    if (!e_.empty()) return e_; \
  } while (0)

std::string plan_mul_mat(const OpCaps& caps, const loom_tensor_t* n, Planner& p, Dispatch* d) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  const uint64_t m = static_cast<uint64_t>(a->ne[1]);
  const uint64_t batch = static_cast<uint64_t>(b->ne[2] * b->ne[3]);
  d->spec[1] = static_cast<uint32_t>(a->type);
  d->n_spec = 2;
  // Short rows (attention over a head dimension, tiny models): one
  // invocation per output, no barriers. Decode: one workgroup per row of A.
  // Prefill: the tiled kernel.
  if (a->ne[0] < kShortK) {
    d->shader = "mul_mat_rows";
    LOOM_VK_TRY(p.grid(m * static_cast<uint64_t>(b->ne[1]) * batch, 64));
    return "";
  }
  if (b->ne[1] <= kMatVecMaxN) {
    d->shader = caps.subgroup_add ? "mul_mat_vec_subgroup" : "mul_mat_vec";
    LOOM_VK_TRY(p.groups(m, a->ne[0] >= 1024 ? 128 : 64));
  } else {
    d->shader = "mul_mat";
    const uint64_t gx = (m + 15) / 16;
    const uint64_t gy = (static_cast<uint64_t>(b->ne[1]) + 15) / 16;
    if (gx > caps.max_groups[0] || gy > caps.max_groups[1]) return "matrix too large for the grid";
    d->spec[0] = 256;
    d->groups[0] = static_cast<uint32_t>(gx);
    d->groups[1] = static_cast<uint32_t>(gy);
  }
  d->groups[2] = static_cast<uint32_t>(batch);
  return "";
}

std::string plan_rope(const OpCaps& caps, const loom_tensor_t* n, Planner& p, Dispatch* d) {
  const loom_tensor_t* a = n->src[0];
  const uint32_t n_dims = static_cast<uint32_t>(n->op_params[0]);
  const uint32_t mode = static_cast<uint32_t>(n->op_params[1]);
  const float freq_base = param_f32(n, 2);
  const float freq_scale = param_f32(n, 3);
  d->pc.p[1] = n_dims | (mode << 16);
  d->pc.p[2] = f32_bits(freq_scale);
  // r = base^(-2/n_dims); theta_i = pos * scale * r^i (the shader).
  const double r = n_dims > 0 ? std::pow(static_cast<double>(freq_base), -2.0 / n_dims) : 1.0;
  if (caps.f64) {
    d->shader = "rope_f64";
    uint64_t bits;
    std::memcpy(&bits, &r, 8);
    d->pc.p[3] = static_cast<uint32_t>(bits);
    d->pc.p[4] = static_cast<uint32_t>(bits >> 32);
  } else {
    d->shader = "rope";
    d->pc.p[3] = f32_bits(static_cast<float>(r));
  }
  const uint64_t per_row = n_dims / 2 + static_cast<uint64_t>(a->ne[0]) - n_dims;
  return p.grid(per_row * static_cast<uint64_t>(nrows(a)), kElemWg);
}

std::string plan_copy(const loom_tensor_t* n, Planner& p, Dispatch* d) {
  const loom_tensor_t* a = n->src[0];
  d->shader = "copy";
  const uint64_t count = static_cast<uint64_t>(nelements(n));
  if (a->type == n->type && !is_quant(a->type)) {
    d->pc.p[1] = 0;
    return p.grid(count, kElemWg);
  }
  if (a->type == n->type) {
    d->pc.p[1] = 1;
    return p.grid(count / 32, kElemWg);
  }
  if (is_quant(n->type)) {
    d->pc.p[1] = 3;
    return p.grid(count / 32, 64);
  }
  d->pc.p[1] = 2;
  return p.grid(count, kElemWg);
}

}  // namespace

const char* unsupported_reason(const OpCaps& caps, const loom_tensor_t* node) {
  if (node == nullptr) return "null node";
  if (node->op == LOOM_OP_NONE || common::is_view_op(node->op)) return nullptr;
  if (node->op < 0 || node->op >= LOOM_OP_COUNT) return "op";
  if (!tensor_ok(node)) return "result type or shape";
  const int n_src = n_sources(node->op);
  for (int i = 0; i < n_src; ++i) {
    if (node->src[i] == nullptr) return "missing source";
    if (!tensor_ok(node->src[i])) return "source type or shape";
  }
  return check_op(caps, node);
}

std::string plan_node(const OpCaps& caps, const loom_tensor_t* n, uint32_t node_id,
                      const Resolver& resolve, Dispatch* d) {
  *d = Dispatch{};
  Planner p(caps, resolve, d);
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  LOOM_VK_TRY(p.bind(0, n));
  switch (n->op) {
    case LOOM_OP_GET_ROWS:
      LOOM_VK_TRY(p.bind(1, a));
      LOOM_VK_TRY(p.bind(2, b));
      d->shader = "rows";
      d->pc.p[1] = 0;
      d->pc.p[2] = node_id;
      return p.grid(static_cast<uint64_t>(nelements(n)), kElemWg);
    case LOOM_OP_SET_ROWS: {
      const loom_tensor_t* rows = n->src[1];
      LOOM_VK_TRY(p.bind(1, rows));
      LOOM_VK_TRY(p.bind(2, n->src[2]));
      d->shader = "rows";
      d->pc.p[1] = 1;
      d->pc.p[2] = node_id;
      const uint64_t count = static_cast<uint64_t>(nelements(rows));
      return is_quant(n->type) ? p.grid(count / 32, 64) : p.grid(count, kElemWg);
    }
    case LOOM_OP_ADD:
    case LOOM_OP_SUB:
    case LOOM_OP_MUL:
    case LOOM_OP_DIV:
      LOOM_VK_TRY(p.bind(1, a));
      LOOM_VK_TRY(p.bind(2, b));
      d->shader = "binary";
      d->pc.p[1] = static_cast<uint32_t>(n->op);
      return p.grid(static_cast<uint64_t>(nelements(n)), kElemWg);
    case LOOM_OP_SCALE:
    case LOOM_OP_SILU:
    case LOOM_OP_GELU:
    case LOOM_OP_RELU:
    case LOOM_OP_SWIGLU:
      LOOM_VK_TRY(p.bind(1, a));
      if (n->op == LOOM_OP_SWIGLU) {
        LOOM_VK_TRY(p.bind(2, b));
      } else {
        p.unused(2);
      }
      d->shader = "unary";
      d->pc.p[1] = static_cast<uint32_t>(n->op);
      if (n->op == LOOM_OP_SCALE) {
        d->pc.p[2] = f32_bits(param_f32(n, 0));
        d->pc.p[3] = f32_bits(param_f32(n, 1));
      }
      return p.grid(static_cast<uint64_t>(nelements(n)), kElemWg);
    case LOOM_OP_RMS_NORM:
    case LOOM_OP_NORM:
      LOOM_VK_TRY(p.bind(1, a));
      p.unused(2);
      d->shader = "norm";
      d->pc.p[1] = static_cast<uint32_t>(n->op);
      d->pc.p[2] = f32_bits(param_f32(n, 0));
      return p.groups(static_cast<uint64_t>(nrows(a)), row_wg(a->ne[0]));
    case LOOM_OP_SOFT_MAX:
      LOOM_VK_TRY(p.bind(1, a));
      if (b != nullptr) {
        LOOM_VK_TRY(p.bind(2, b));
      } else {
        p.unused(2);
      }
      d->shader = "softmax";
      d->pc.p[1] = b != nullptr ? 1 : 0;
      d->pc.p[2] = f32_bits(param_f32(n, 0));
      return p.groups(static_cast<uint64_t>(nrows(a)), row_wg(a->ne[0]));
    case LOOM_OP_MUL_MAT:
      LOOM_VK_TRY(p.bind(1, a));
      LOOM_VK_TRY(p.bind(2, b));
      return plan_mul_mat(caps, n, p, d);
    case LOOM_OP_ROPE:
      LOOM_VK_TRY(p.bind(1, a));
      LOOM_VK_TRY(p.bind(2, b));
      return plan_rope(caps, n, p, d);
    case LOOM_OP_CPY:
    case LOOM_OP_CONT:
      LOOM_VK_TRY(p.bind(1, a));
      p.unused(2);
      return plan_copy(n, p, d);
    case LOOM_OP_ARGMAX:
    case LOOM_OP_SUM_ROWS:
      LOOM_VK_TRY(p.bind(1, a));
      p.unused(2);
      d->shader = "reduce";
      d->pc.p[1] = n->op == LOOM_OP_ARGMAX ? 0 : 1;
      return p.groups(static_cast<uint64_t>(nrows(a)), row_wg(a->ne[0]));
    default:
      return std::string("no kernel for op ") + common::op_name(n->op);
  }
}

}  // namespace loom::vulkan
