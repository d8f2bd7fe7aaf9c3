// ADD, SUB, MUL, DIV with src1 broadcast over src0 (index modulo src1's
// extents, ggml's repeat rule). f32 arithmetic, result in src0's type.
#include <vector>

#include "ops/ops.h"

namespace loom::cpu {

namespace {

float apply(int32_t op, float x, float y) {
  switch (op) {
    case LOOM_OP_ADD: return x + y;
    case LOOM_OP_SUB: return x - y;
    case LOOM_OP_MUL: return x * y;
    default: return x / y;  // LOOM_OP_DIV
  }
}

// x[i] = x[i] op y[i], one loop per op so each vectorizes.
void apply_row(int32_t op, float* x, const float* y, int64_t n) {
  switch (op) {
    case LOOM_OP_ADD:
      for (int64_t i = 0; i < n; ++i) x[i] += y[i];
      break;
    case LOOM_OP_SUB:
      for (int64_t i = 0; i < n; ++i) x[i] -= y[i];
      break;
    case LOOM_OP_MUL:
      for (int64_t i = 0; i < n; ++i) x[i] *= y[i];
      break;
    default:
      for (int64_t i = 0; i < n; ++i) x[i] /= y[i];
      break;
  }
}

// out[i] = x[i] op y[i] (out may be x: each element is read before it is
// written), one loop per op so each vectorizes.
void apply_rows(int32_t op, float* out, const float* x, const float* y, int64_t n) {
  switch (op) {
    case LOOM_OP_ADD:
      for (int64_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
      break;
    case LOOM_OP_SUB:
      for (int64_t i = 0; i < n; ++i) out[i] = x[i] - y[i];
      break;
    case LOOM_OP_MUL:
      for (int64_t i = 0; i < n; ++i) out[i] = x[i] * y[i];
      break;
    default:
      for (int64_t i = 0; i < n; ++i) out[i] = x[i] / y[i];
      break;
  }
}

bool f32_rows(const loom_tensor_t* t) { return t->type == LOOM_TYPE_F32 && t->nb[0] == sizeof(float); }

}  // namespace

void kernel_binary(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  int64_t r0, r1;
  common::split_range(nrows(dst), ith, nth, &r0, &r1);
  // F32 rows without broadcast inside a row (the llama graph's adds and
  // norm-weight multiplies): straight from the sources into dst, no copies.
  if (f32_rows(a) && f32_rows(b) && f32_rows(dst) && b->ne[0] == a->ne[0]) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t i1, i2, i3;
      unravel_row(dst, r, &i1, &i2, &i3);
      apply_rows(dst->op, reinterpret_cast<float*>(row_ptr(dst, i1, i2, i3)),
                 reinterpret_cast<const float*>(row_ptr(a, i1, i2, i3)),
                 reinterpret_cast<const float*>(row_ptr(b, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3])), a->ne[0]);
    }
    return;
  }
  // Whole rows are read before dst is written, so dst may alias src0.
  thread_local std::vector<float> x, y;
  x.resize(static_cast<size_t>(a->ne[0]));
  y.resize(static_cast<size_t>(b->ne[0]));
  const int64_t nb0 = b->ne[0];
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(dst, r, &i1, &i2, &i3);
    load_row(a, i1, i2, i3, x.data());
    load_row(b, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3], y.data());
    if (nb0 == a->ne[0]) {
      apply_row(dst->op, x.data(), y.data(), nb0);  // the usual case: no broadcast within a row
    } else {
      for (int64_t i = 0; i < a->ne[0]; ++i) x[i] = apply(dst->op, x[i], y[i % nb0]);
    }
    store_row(dst, i1, i2, i3, x.data());
  }
}

}  // namespace loom::cpu
