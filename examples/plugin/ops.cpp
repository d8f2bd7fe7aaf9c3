#include "ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace example {
namespace {

bool is_f32(const loom_tensor_t* t) { return t != nullptr && t->type == LOOM_TYPE_F32; }

// Element (i0, i1, i2, i3) of an F32 tensor through its byte strides.
inline float& at(const loom_tensor_t* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  char* p = static_cast<char*>(t->data) + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
  return *reinterpret_cast<float*>(p);
}

float param_f32(const loom_tensor_t* t, int i) {
  float v;
  std::memcpy(&v, &t->op_params[i], sizeof v);
  return v;
}

bool same_shape(const loom_tensor_t* a, const loom_tensor_t* b) {
  return a->ne[0] == b->ne[0] && a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3];
}

// src.ne[d] divides into ne[d] for every dim (broadcast of src over t).
bool broadcasts(const loom_tensor_t* src, const loom_tensor_t* t) {
  for (int d = 0; d < 4; ++d) {
    if (src->ne[d] <= 0 || t->ne[d] % src->ne[d] != 0) return false;
  }
  return true;
}

void mul_mat(const loom_tensor_t* dst) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  for (int64_t i3 = 0; i3 < dst->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < dst->ne[2]; ++i2)
      for (int64_t n = 0; n < dst->ne[1]; ++n)
        for (int64_t m = 0; m < dst->ne[0]; ++m) {
          // Accumulate in double: one rounding to f32 at the end.
          double sum = 0.0;
          for (int64_t k = 0; k < a->ne[0]; ++k) {
            sum += static_cast<double>(at(a, k, m, i2 / r2, i3 / r3)) * static_cast<double>(at(b, k, n, i2, i3));
          }
          at(dst, m, n, i2, i3) = static_cast<float>(sum);
        }
}

void soft_max(const loom_tensor_t* dst) {
  const loom_tensor_t* x = dst->src[0];
  const loom_tensor_t* mask = dst->src[1];
  const float scale = param_f32(dst, 0);
  std::vector<double> z(static_cast<size_t>(x->ne[0]));
  for (int64_t i3 = 0; i3 < x->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < x->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < x->ne[1]; ++i1) {
        double max = -INFINITY;
        for (int64_t i = 0; i < x->ne[0]; ++i) {
          const double m = mask ? at(mask, i, i1, i2 % mask->ne[2], i3 % mask->ne[3]) : 0.0;
          z[i] = static_cast<double>(at(x, i, i1, i2, i3)) * scale + m;
          max = std::max(max, z[i]);
        }
        double sum = 0.0;
        for (int64_t i = 0; i < x->ne[0]; ++i) sum += max == -INFINITY ? 0.0 : std::exp(z[i] - max);
        // A row masked everywhere gives zeros (as the cpu plugin), not NaN.
        for (int64_t i = 0; i < x->ne[0]; ++i) {
          at(dst, i, i1, i2, i3) = sum > 0.0 ? static_cast<float>(std::exp(z[i] - max) / sum) : 0.0f;
        }
      }
}

void add(const loom_tensor_t* dst) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  for (int64_t i3 = 0; i3 < dst->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < dst->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < dst->ne[1]; ++i1)
        for (int64_t i0 = 0; i0 < dst->ne[0]; ++i0) {
          at(dst, i0, i1, i2, i3) = at(a, i0, i1, i2, i3) + at(b, i0 % b->ne[0], i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
        }
}

void scale(const loom_tensor_t* dst) {
  const loom_tensor_t* a = dst->src[0];
  const float s = param_f32(dst, 0), bias = param_f32(dst, 1);
  for (int64_t i3 = 0; i3 < dst->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < dst->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < dst->ne[1]; ++i1)
        for (int64_t i0 = 0; i0 < dst->ne[0]; ++i0) at(dst, i0, i1, i2, i3) = at(a, i0, i1, i2, i3) * s + bias;
}

}  // namespace

bool supports(const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  if (!is_f32(n) || !is_f32(a)) return false;
  switch (n->op) {
    case LOOM_OP_MUL_MAT:
      return is_f32(b) && a->ne[0] == b->ne[0] && b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0 &&
             n->ne[0] == a->ne[1] && n->ne[1] == b->ne[1] && n->ne[2] == b->ne[2] && n->ne[3] == b->ne[3];
    case LOOM_OP_SOFT_MAX:
      if (!same_shape(n, a)) return false;
      if (b == nullptr) return true;
      return is_f32(b) && b->ne[0] == a->ne[0] && b->ne[1] >= a->ne[1] && a->ne[2] % b->ne[2] == 0 &&
             a->ne[3] % b->ne[3] == 0;
    case LOOM_OP_ADD:
      return is_f32(b) && same_shape(n, a) && broadcasts(b, a);
    case LOOM_OP_SCALE:
      return same_shape(n, a);
    default:
      return false;  // everything else goes to another device
  }
}

void compute(const loom_tensor_t* n) {
  switch (n->op) {
    case LOOM_OP_MUL_MAT: mul_mat(n); break;
    case LOOM_OP_SOFT_MAX: soft_max(n); break;
    case LOOM_OP_ADD: add(n); break;
    case LOOM_OP_SCALE: scale(n); break;
    default: break;
  }
}

}  // namespace example
