#version 450
// MUL_MAT for decode (N <= 8 columns of B): one workgroup per row m of A
// (and batch), its invocations stride over k (whole blocks for quantized
// A, so each scale is read once), then a reduction per column: subgroupAdd
// and a shared-memory pass over subgroups with LOOM_SUBGROUP, a shared-memory
// tree without. Spec constant 1: A's type. Workgroups: x (wrapping into y)
// = rows of A, z = batch.
#ifdef LOOM_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"

layout(constant_id = 1) const uint A_TYPE = 0u;
const uint MAX_N = 8u;

shared float s_acc[MAX_N][256];

void main() {
  uint K = pc.t[1].ne[0];
  uint M = pc.t[1].ne[1];
  uint N = pc.t[2].ne[1];
  uint m = flat_group();
  if (m >= M) return;
  uint batch = gl_WorkGroupID.z;
  uint i2 = batch % pc.t[2].ne[2];
  uint i3 = batch / pc.t[2].ne[2];
  uint a2 = i2 / (pc.t[2].ne[2] / pc.t[1].ne[2]);
  uint a3 = i3 / (pc.t[2].ne[3] / pc.t[1].ne[3]);
  uint arow = offset4(1, 0u, m, a2, a3);
  uint l = gl_LocalInvocationID.x;
  uint wg = gl_WorkGroupSize.x;
  float acc[MAX_N];
  for (uint n = 0u; n < MAX_N; ++n) acc[n] = 0.0;
  uint bnb0 = pc.t[2].nb[0];
  if (N == 1u && (A_TYPE == TYPE_Q8_0 || A_TYPE == TYPE_Q4_0) && bnb0 == 4u) {
    // Decode: one column, B contiguous; whole quant words, one register
    // accumulator.
    uint nblk = K / 32u;
    uint bw = offset4(2, 0u, 0u, i2, i3) >> 2;
    float sum = 0.0;
    for (uint blk = l; blk < nblk; blk += wg) {
      sum += block_dot(A_TYPE, arow + blk * pc.t[1].nb[0], bw + blk * 32u);
    }
    acc[0] = sum;
  } else if (A_TYPE == TYPE_Q8_0 || A_TYPE == TYPE_Q4_0) {
    uint nblk = K / 32u;
    for (uint blk = l; blk < nblk; blk += wg) {
      uint b = arow + blk * pc.t[1].nb[0];
      float d = f16_to_f32(ld_a_u16(b));
      for (uint j = 0u; j < 32u; ++j) {
        float q;
        if (A_TYPE == TYPE_Q8_0) {
          q = float(int(ld_a_u8(b + 2u + j) << 24) >> 24);
        } else {
          uint byte_ = ld_a_u8(b + 2u + (j & 15u));
          q = float(int(j < 16u ? (byte_ & 0xFu) : (byte_ >> 4)) - 8);
        }
        float a = d * q;
        uint k = blk * 32u + j;
        for (uint n = 0u; n < N; ++n) {
          acc[n] = fma(a, uintBitsToFloat(ld_b_u32(offset4(2, 0u, n, i2, i3) + k * bnb0)), acc[n]);
        }
      }
    }
  } else {
    for (uint k = l; k < K; k += wg) {
      float a = ld_a_elem(A_TYPE, arow + k * pc.t[1].nb[0]);
      for (uint n = 0u; n < N; ++n) {
        acc[n] = fma(a, uintBitsToFloat(ld_b_u32(offset4(2, 0u, n, i2, i3) + k * bnb0)), acc[n]);
      }
    }
  }
#ifdef LOOM_SUBGROUP
  for (uint n = 0u; n < N; ++n) {
    float s = subgroupAdd(acc[n]);
    if (subgroupElect()) s_acc[n][gl_SubgroupID] = s;
  }
  barrier();
  if (l < N) {
    float s = 0.0;
    for (uint g = 0u; g < gl_NumSubgroups; ++g) s += s_acc[l][g];
    st_u32(offset4(0, m, l, i2, i3), floatBitsToUint(s));
  }
#else
  for (uint n = 0u; n < N; ++n) s_acc[n][l] = acc[n];
  barrier();
  for (uint s = wg / 2u; s > 0u; s >>= 1) {
    if (l < s) {
      for (uint n = 0u; n < N; ++n) s_acc[n][l] += s_acc[n][l + s];
    }
    barrier();
  }
  if (l < N) st_u32(offset4(0, m, l, i2, i3), floatBitsToUint(s_acc[l][0]));
#endif
}
