#version 450
// The ABI 1.3 sparse products, one invocation per output element (m, n),
// m fastest; spec constant 1: the weight's type (any type quant.glsl
// decodes). The scores S are bound at binding 4: p[2] their byte offset,
// p[3] / p[4] their byte strides nb[0] / nb[1], the top byte of p[0] their
// type (F32, F16, BF16); p[1] the threshold's bits. Entry (j, n) is active
// iff S[j, n] > threshold (a NaN score is not).
// MUL_MAT_SPARSE_ROWS (default): dst[m, n] = is_active(m, n) ? A[:, m] . B[:, n]
// : 0; only active rows of A are read (row_dot.glsl).
// MUL_MAT_SPARSE_COLS (LOOM_COLS): dst[m, n] = sum over active k, increasing,
// of H[k, n] * W[m, k], W neuron-major [M, K]: only the active neurons' rows.
#include "common.glsl"
#include "quant.glsl"
#include "row_dot.glsl"

layout(std430, binding = 4) readonly buffer BufC { uint c_data[]; };
layout(constant_id = 1) const uint A_TYPE = 0u;

bool is_active(uint j, uint n) {
  uint off = pc.p[2] + j * pc.p[3] + n * pc.p[4];
  uint t = pc.p[0] >> 24;
  uint w = c_data[off >> 2];
  float s;
  if (t == TYPE_F32) {
    s = uintBitsToFloat(w);
  } else {
    uint h = (w >> ((off & 2u) * 8u)) & 0xFFFFu;
    s = t == TYPE_F16 ? f16_to_f32(h) : bf16_to_f32(h);
  }
  return s > uintBitsToFloat(pc.p[1]);
}

void main() {
  uint M = pc.t[0].ne[0];
  uint N = pc.t[0].ne[1];
  uint i = flat_index();
  if (i >= M * N) return;
  uint m = i % M;
  uint n = i / M;
  float acc = 0.0;
#ifdef LOOM_COLS
  uint K = pc.t[1].ne[1];
  for (uint k = 0u; k < K; ++k) {
    if (!is_active(k, n)) continue;
    float h = uintBitsToFloat(ld_b_u32(offset4(2, k, n, 0u, 0u)));
    acc = fma(h, ld_a_row_elem(A_TYPE, offset4(1, 0u, k, 0u, 0u), m, pc.t[1].nb[0]), acc);
  }
#else
  if (is_active(m, n)) {
    acc = row_dot(A_TYPE, offset4(1, 0u, m, 0u, 0u), pc.t[1].nb[0], offset4(2, 0u, n, 0u, 0u), pc.t[2].nb[0],
                  pc.t[1].ne[0]);
  }
#endif
  st_u32(offset4(0, m, n, 0u, 0u), floatBitsToUint(acc));
}
