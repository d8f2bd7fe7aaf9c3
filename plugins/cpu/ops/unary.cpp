// SILU, GELU (tanh form), RELU, TANH, SCALE and the fused SWIGLU gate. Inputs are
// widened to f32. GELU's tanh is evaluated in double (correctly rounded to
// f32 in practice); SILU and SWIGLU, on every decode step of a llama FFN,
// use the f32 vector exp (simd.h, < 2e-7 relative) and one division: within
// a few ulp of the double form. Result in src0's type.
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/ops.h"
#include "ops/simd.h"

namespace loom::cpu {

namespace {

// out[i] = silu(x[i]) (* g[i] when g is given), in vector lanes. Each
// lane group is read before it is written: out may be x or g itself.
void silu_row(float* out, const float* x, const float* g, int64_t n) {
  int64_t i = 0;
  for (; i + kSimdLanes <= n; i += kSimdLanes) {
    const simd_f v = simd_load(x + i);
    simd_f y = v / (1.0f + simd_exp(-v));
    if (g != nullptr) y *= simd_load(g + i);
    simd_store(out + i, y);
  }
  if (i < n) {  // the tail through the same lanes
    simd_f v = {}, gv = {};
    std::memcpy(&v, x + i, static_cast<size_t>(n - i) * sizeof(float));
    if (g != nullptr) std::memcpy(&gv, g + i, static_cast<size_t>(n - i) * sizeof(float));
    simd_f y = v / (1.0f + simd_exp(-v));
    if (g != nullptr) y *= gv;
    std::memcpy(out + i, &y, static_cast<size_t>(n - i) * sizeof(float));
  }
}

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
  thread_local std::vector<float> x;
  x.resize(static_cast<size_t>(a->ne[0]));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(dst, r, &i1, &i2, &i3);
    load_row(a, i1, i2, i3, x.data());
    if (dst->op == LOOM_OP_SILU) {
      silu_row(x.data(), x.data(), nullptr, a->ne[0]);
      store_row(dst, i1, i2, i3, x.data());
      continue;
    }
    // One loop per op, so RELU and SCALE vectorize (a switch per element
    // kept a 8192-wide RELU at ~9 us).
    switch (dst->op) {
      case LOOM_OP_GELU:
        for (float& v : x) v = gelu(v);
        break;
      case LOOM_OP_RELU:
        for (float& v : x) v = v > 0.0f ? v : 0.0f;
        break;
      case LOOM_OP_TANH:
        for (float& v : x) v = std::tanh(v);
        break;
      default:  // LOOM_OP_SCALE
        for (float& v : x) v = v * scale + bias;
        break;
    }
    store_row(dst, i1, i2, i3, x.data());
  }
}

void kernel_swiglu(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  int64_t r0, r1;
  common::split_range(nrows(dst), ith, nth, &r0, &r1);
  const auto f32_rows = [](const loom_tensor_t* t) { return t->type == LOOM_TYPE_F32 && t->nb[0] == sizeof(float); };
  if (f32_rows(a) && f32_rows(b) && f32_rows(dst)) {
    // F32 rows (the llama FFN): one pass from gate and up into dst, which
    // may be either of them (in place); no copies, no scratch rows.
    for (int64_t r = r0; r < r1; ++r) {
      int64_t i1, i2, i3;
      unravel_row(dst, r, &i1, &i2, &i3);
      silu_row(reinterpret_cast<float*>(row_ptr(dst, i1, i2, i3)),
               reinterpret_cast<const float*>(row_ptr(a, i1, i2, i3)),
               reinterpret_cast<const float*>(row_ptr(b, i1, i2, i3)), a->ne[0]);
    }
    return;
  }
  thread_local std::vector<float> x, g;
  x.resize(static_cast<size_t>(a->ne[0]));
  g.resize(static_cast<size_t>(b->ne[0]));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(dst, r, &i1, &i2, &i3);
    load_row(a, i1, i2, i3, x.data());
    load_row(b, i1, i2, i3, g.data());
    silu_row(x.data(), x.data(), g.data(), a->ne[0]);
    store_row(dst, i1, i2, i3, x.data());
  }
}

}  // namespace loom::cpu
