// SILU, GELU (tanh form), RELU, SCALE and the fused SWIGLU gate. Inputs are
// widened to f32; the transcendental parts are evaluated in double so the
// reference is correctly rounded to f32 in practice. Result in src0's type.
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/ops.h"

namespace loom::cpu {

namespace {

float silu(float x) { return static_cast<float>(x / (1.0 + std::exp(-static_cast<double>(x)))); }

float gelu(float x) {
  const double kSqrt2OverPi = 0.79788456080286535588;
  const double v = x;
  return static_cast<float>(0.5 * v * (1.0 + std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v))));
}

float param_f32(const loom_tensor_t* t, int i) {
  float v;
  std::memcpy(&v, &t->op_params[i], 4);
  return v;
}

}  // namespace

void kernel_unary(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  const float scale = param_f32(dst, 0);
  const float bias = param_f32(dst, 1);
  int64_t r0, r1;
  common::split_range(nrows(dst), ith, nth, &r0, &r1);
  std::vector<float> x(static_cast<size_t>(a->ne[0]));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(dst, r, &i1, &i2, &i3);
    load_row(a, i1, i2, i3, x.data());
    for (float& v : x) {
      switch (dst->op) {
        case LOOM_OP_SILU: v = silu(v); break;
        case LOOM_OP_GELU: v = gelu(v); break;
        case LOOM_OP_RELU: v = v > 0.0f ? v : 0.0f; break;
        default: v = v * scale + bias; break;  // LOOM_OP_SCALE
      }
    }
    store_row(dst, i1, i2, i3, x.data());
  }
}

void kernel_swiglu(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  int64_t r0, r1;
  common::split_range(nrows(dst), ith, nth, &r0, &r1);
  std::vector<float> x(static_cast<size_t>(a->ne[0]));
  std::vector<float> g(static_cast<size_t>(b->ne[0]));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(dst, r, &i1, &i2, &i3);
    load_row(a, i1, i2, i3, x.data());
    load_row(b, i1, i2, i3, g.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] = silu(x[i]) * g[i];
    store_row(dst, i1, i2, i3, x.data());
  }
}

}  // namespace loom::cpu
