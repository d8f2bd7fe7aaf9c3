#version 450
// MUL_MAT, tiled for prefill: dst[m, n, i2, i3] = sum_k A[k, m, i2/r2, i3/r3]
// * B[k, n, i2, i3]. A 64x64 output tile per workgroup of 256 invocations,
// each holding a 4x4 block of it in registers (rows tm + 16i, columns
// tn + 16j): per 16 k, A's 64 rows (dequantized) and B's 64 columns are
// staged through shared memory, 4 elements each per invocation, 16
// consecutive invocations reading 16 consecutive k of one row; then every
// invocation does 16 x 16 multiply-adds from 8 shared reads per k (the
// 16x16 tile this replaced did one per 2 reads). Rows are padded to 17
// floats so the stores and the column reads hit distinct banks; 8.5 KiB of
// shared memory (Vulkan's minimum limit is 16 KiB). Spec constant 1: A's
// type (float or any block type), so the type switch folds away.
// Workgroups: x = M tiles, y = N tiles, z = batch.
//
// lavapipe ends an invocation's loops after 65535 iterations in all:
// dispatch.cpp (mul_mat_loops, kTiled) counts this file's loops per k step;
// keep the two in step.
#include "common.glsl"
#include "quant.glsl"

layout(constant_id = 1) const uint A_TYPE = 0u;

const uint TILE = 64u;
const uint BK = 16u;

shared float s_a[TILE][BK + 1u];
shared float s_b[TILE][BK + 1u];

void main() {
  uint K = pc.t[1].ne[0];
  uint M = pc.t[1].ne[1];
  uint N = pc.t[2].ne[1];
  uint batch = gl_WorkGroupID.z;
  uint i2 = batch % pc.t[2].ne[2];
  uint i3 = batch / pc.t[2].ne[2];
  uint a2 = i2 / (pc.t[2].ne[2] / pc.t[1].ne[2]);
  uint a3 = i3 / (pc.t[2].ne[3] / pc.t[1].ne[3]);
  uint m0 = gl_WorkGroupID.x * TILE;
  uint n0 = gl_WorkGroupID.y * TILE;
  uint l = gl_LocalInvocationID.x;
  uint tm = l % 16u;
  uint tn = l / 16u;
  // The staging share: row (or column) r = l / 16 + 16 s, k = l % 16.
  uint sk = l % BK;
  uint sr = l / BK;
  float acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
  }
  for (uint k0 = 0u; k0 < K; k0 += BK) {
    uint k = k0 + sk;
    [[unroll]] for (uint s = 0u; s < 4u; ++s) {
      uint r = sr + 16u * s;
      uint m = m0 + r;
      uint n = n0 + r;
      s_a[r][sk] = (m < M && k < K) ? ld_a_row_elem(A_TYPE, offset4(1, 0u, m, a2, a3), k, pc.t[1].nb[0]) : 0.0;
      s_b[r][sk] = (n < N && k < K) ? uintBitsToFloat(ld_b_u32(offset4(2, k, n, i2, i3))) : 0.0;
    }
    barrier();
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      float a[4];
      float b[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) a[i] = s_a[tm + 16u * i][kk];
      [[unroll]] for (uint j = 0u; j < 4u; ++j) b[j] = s_b[tn + 16u * j][kk];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
      }
    }
    barrier();
  }
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    uint m = m0 + tm + 16u * i;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      uint n = n0 + tn + 16u * j;
      if (m < M && n < N) st_u32(offset4(0, m, n, i2, i3), floatBitsToUint(acc[i][j]));
    }
  }
}
