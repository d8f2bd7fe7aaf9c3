// Per-element arithmetic of the unary and binary ops (SILU, GELU, RELU,
// TANH, SCALE, SWIGLU, ADD, SUB, MUL, DIV) and the broadcast index rule, as
// plugin.h defines them. The op ids are plugin.h's.
#pragma once

#include "hd.cuh"

namespace loom::cuda {

LOOM_HD float silu(float x) { return x / (1.0f + expf(-x)); }

// The tanh form, evaluated in double like the CPU plugin (x is small work).
LOOM_HD float gelu(float x) {
  const double v = x;
  const double k = 0.79788456080286535588;  // sqrt(2/pi)
  return static_cast<float>(0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v))));
}

LOOM_HD float relu(float x) { return x > 0.0f ? x : 0.0f; }

// Unary op `op` (SILU 19, GELU 20, RELU 21, TANH 30, SCALE 10 with scale
// and bias).
LOOM_HD float unary_op(int op, float x, float scale, float bias) {
  switch (op) {
    case 19: return silu(x);
    case 20: return gelu(x);
    case 21: return relu(x);
    case 30: return tanhf(x);
    case 10: return x * scale + bias;
    default: return x;
  }
}

// Binary op `op` (ADD 6, SUB 7, MUL 8, DIV 9, SWIGLU 22).
LOOM_HD float binary_op(int op, float a, float b) {
  switch (op) {
    case 6: return a + b;
    case 7: return a - b;
    case 8: return a * b;
    case 9: return a / b;
    case 22: return silu(a) * b;
    default: return a;
  }
}

// Index of src1 broadcast over src0: each extent of src1 divides src0's.
LOOM_HD int64_t broadcast_index(int64_t i, int64_t n) { return n == 1 ? 0 : i % n; }

}  // namespace loom::cuda
