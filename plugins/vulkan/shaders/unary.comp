#version 450
// SILU, GELU (tanh form), RELU, TANH, SCALE (x * p[2] + p[3]) and SWIGLU
// (silu(src0) * src1). One invocation per element; p[1]: loom op id.
#include "common.glsl"

float silu(float x) { return x / (1.0 + exp(-x)); }
float gelu(float x) {
  const float k = 0.79788456080286535588;
  float u = k * (x + 0.044715 * x * x * x);
  // tanh through exp of a non-positive argument: no overflow for large |u|.
  float e = exp(-2.0 * abs(u));
  float t = (1.0 - e) / (1.0 + e);
  return 0.5 * x * (1.0 + (u < 0.0 ? -t : t));
}
// tanh through exp of a non-positive argument (no overflow; +-1 past +-9,
// -0 kept: x * 0 keeps x's sign); tanh(x) for small |x| by its series so
// the relative error stays small where 1 - e cancels.
float tanh_(float x) {
  float ax = abs(x);
  if (ax < 0.004) return x * (1.0 - x * x / 3.0);
  float e = exp(-2.0 * ax);
  float t = (1.0 - e) / (1.0 + e);
  return x < 0.0 ? -t : t;
}

void main() {
  uint i = flat_index();
  if (i >= nelems(0)) return;
  uint i0 = i % pc.t[0].ne[0];
  uint r = i / pc.t[0].ne[0];
  uint i1 = r % pc.t[0].ne[1];
  uint i2 = (r / pc.t[0].ne[1]) % pc.t[0].ne[2];
  uint i3 = r / (pc.t[0].ne[1] * pc.t[0].ne[2]);
  float x = ld_a_elem(type_a(), offset4(1, i0, i1, i2, i3));
  uint op = pc.p[1];
  float v;
  if (op == 19u) {
    v = silu(x);
  } else if (op == 20u) {
    v = gelu(x);
  } else if (op == 21u) {
    v = x > 0.0 ? x : 0.0;
  } else if (op == 30u) {
    v = tanh_(x);
  } else if (op == 22u) {
    v = silu(x) * ld_b_elem(type_b(), offset4(2, i0, i1, i2, i3));
  } else {
    v = x * uintBitsToFloat(pc.p[2]) + uintBitsToFloat(pc.p[3]);
  }
  st_elem(type_d(), offset4(0, i0, i1, i2, i3), v);
}
