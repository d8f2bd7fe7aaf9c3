#version 450
// MUL_MAT, tiled for prefill: dst[m, n, i2, i3] = sum_k A[k, m, i2/r2, i3/r3]
// * B[k, n, i2, i3]. A 16x16 output tile per workgroup (256 invocations,
// one output each); A (dequantized) and B staged through shared memory 32
// k at a time (for quantized A: 16 invocations each dequantize one row's
// chunk of 32 in place, quant.glsl). Spec constant 1: A's type (float or
// any block type), so the type switch folds away. Workgroups: x = M tiles, y = N tiles, z = batch.
#include "common.glsl"
#include "quant.glsl"

layout(constant_id = 1) const uint A_TYPE = 0u;

shared float s_a[16][33];
shared float s_b[16][33];

void main() {
  uint K = pc.t[1].ne[0];
  uint M = pc.t[1].ne[1];
  uint N = pc.t[2].ne[1];
  uint batch = gl_WorkGroupID.z;
  uint i2 = batch % pc.t[2].ne[2];
  uint i3 = batch / pc.t[2].ne[2];
  uint a2 = i2 / (pc.t[2].ne[2] / pc.t[1].ne[2]);
  uint a3 = i3 / (pc.t[2].ne[3] / pc.t[1].ne[3]);
  uint m0 = gl_WorkGroupID.x * 16u;
  uint n0 = gl_WorkGroupID.y * 16u;
  uint l = gl_LocalInvocationID.x;
  uint tm = l % 16u;
  uint tn = l / 16u;
  float acc = 0.0;
  for (uint k0 = 0u; k0 < K; k0 += 32u) {
    if (is_block_type(A_TYPE)) {
      // K is whole blocks: chunk k0 / 32 of rows m0 .. m0 + 15.
      if (l < 16u) {
        uint m = m0 + l;
        float x[32];
        if (m < M) {
          uint cpb = block_elems(A_TYPE) / 32u;
          uint ch = k0 / 32u;
          dq_chunk(A_TYPE, offset4(1, 0u, m, a2, a3) + (ch / cpb) * pc.t[1].nb[0], ch % cpb, x);
        } else {
          [[unroll]] for (uint kk = 0u; kk < 32u; ++kk) x[kk] = 0.0;
        }
        [[unroll]] for (uint kk = 0u; kk < 32u; ++kk) s_a[l][kk] = x[kk];
      }
    }
    for (uint e = l; e < 512u; e += 256u) {
      uint r = e / 32u;
      uint kk = e % 32u;
      uint k = k0 + kk;
      uint m = m0 + r;
      uint n = n0 + r;
      if (!is_block_type(A_TYPE)) {
        s_a[r][kk] = (m < M && k < K) ? ld_a_elem(A_TYPE, offset4(1, k, m, a2, a3)) : 0.0;
      }
      s_b[r][kk] = (n < N && k < K) ? uintBitsToFloat(ld_b_u32(offset4(2, k, n, i2, i3))) : 0.0;
    }
    barrier();
    for (uint kk = 0u; kk < 32u; ++kk) acc = fma(s_a[tm][kk], s_b[tn][kk], acc);
    barrier();
  }
  uint m = m0 + tm;
  uint n = n0 + tn;
  if (m < M && n < N) st_u32(offset4(0, m, n, i2, i3), floatBitsToUint(acc));
}
