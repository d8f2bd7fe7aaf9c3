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
// -DLOOM_ID_GROUPED: MUL_MAT_ID's prefill (ops/mul_mat_id.cpp) after
// moe_group.comp. z = the expert e, A's matrix e; its columns are the
// pairs moe_group listed for e (binding 4 from byte p[1]), column n the
// pair p = u + U t: B's column of slot u (or the token's one) of token t,
// the result's column (u, t) (descriptors as mul_mat_id.glsl's). A
// workgroup takes the tiles y, y + gridY, ... below the expert's count.
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

#ifdef LOOM_ID_GROUPED
layout(std430, binding = 4) readonly buffer BufG { uint g_data[]; };
const uint NO_COLUMN = 0xFFFFFFFFu;
// Byte offset of column n of the expert's list in tensor k (B or the
// result: [., 1, U, T]), or NO_COLUMN past the expert's count.
uint pair_column(uint k, uint first, uint count, uint n) {
  if (n >= count) return NO_COLUMN;
  uint p = g_data[(pc.p[1] >> 2) + 2u * pc.t[1].ne[2] + first + n];
  uint U = pc.t[2].ne[2];
  return offset4(k, 0u, 0u, p % U, p / U);
}
#endif

void main() {
  uint K = pc.t[1].ne[0];
  uint M = pc.t[1].ne[1];
#ifdef LOOM_ID_GROUPED
  uint a2 = gl_WorkGroupID.z;
  uint a3 = 0u;
  uint N = g_data[(pc.p[1] >> 2) + a2];
  uint first = g_data[(pc.p[1] >> 2) + pc.t[1].ne[2] + a2];
#else
  uint N = pc.t[2].ne[1];
  uint batch = gl_WorkGroupID.z;
  uint i2 = batch % pc.t[2].ne[2];
  uint i3 = batch / pc.t[2].ne[2];
  uint a2 = i2 / (pc.t[2].ne[2] / pc.t[1].ne[2]);
  uint a3 = i3 / (pc.t[2].ne[3] / pc.t[1].ne[3]);
#endif
  uint m0 = gl_WorkGroupID.x * TILE;
  uint l = gl_LocalInvocationID.x;
  uint tm = l % 16u;
  uint tn = l / 16u;
  // The staging share: row (or column) r = l / 16 + 16 s, k = l % 16.
  uint sk = l % BK;
  uint sr = l / BK;
#ifdef LOOM_ID_GROUPED
  // N is the same for the whole workgroup: the loop and its barriers stay
  // in uniform control flow.
  for (uint n0 = gl_WorkGroupID.y * TILE; n0 < N; n0 += gl_NumWorkGroups.y * TILE) {
  uint bcol[4];
  [[unroll]] for (uint s = 0u; s < 4u; ++s) bcol[s] = pair_column(2, first, N, n0 + sr + 16u * s);
#else
  uint n0 = gl_WorkGroupID.y * TILE;
#endif
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
#ifdef LOOM_ID_GROUPED
      s_b[r][sk] = (n < N && k < K) ? uintBitsToFloat(ld_b_u32(bcol[s] + k * pc.t[2].nb[0])) : 0.0;
#else
      s_b[r][sk] = (n < N && k < K) ? uintBitsToFloat(ld_b_u32(offset4(2, k, n, i2, i3))) : 0.0;
#endif
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
#ifdef LOOM_ID_GROUPED
      if (m < M && n < N) st_u32(pair_column(0, first, N, n) + m * pc.t[0].nb[0], floatBitsToUint(acc[i][j]));
#else
      if (m < M && n < N) st_u32(offset4(0, m, n, i2, i3), floatBitsToUint(acc[i][j]));
#endif
    }
  }
#ifdef LOOM_ID_GROUPED
  }
#endif
}
