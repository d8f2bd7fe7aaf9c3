#version 450
// MUL_MAT for decode (N <= 8 columns of B): one workgroup per row m of A
// (and batch), its invocations stride over k (whole blocks or chunks of 32
// for quantized A, read in place, so each scale is read once per chunk),
// then a reduction per column: subgroupAdd and a shared-memory pass over
// subgroups with LOOM_SUBGROUP, a shared-memory tree without. Spec constant 1: A's type. Workgroups: x (wrapping into y)
// = rows of A, z = batch. LOOM_ID: MUL_MAT_ID (mul_mat_id.glsl; z = (slot,
// token) pairs).
#ifdef LOOM_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"
#include "quant.glsl"
#ifdef LOOM_ID
#include "mul_mat_id.glsl"
#endif

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
#ifdef LOOM_ID
  uint a2 = expert_of(i2, i3);
  if (a2 == NO_EXPERT) return;
  uint a3 = 0u;
#else
  uint a2 = i2 / (pc.t[2].ne[2] / pc.t[1].ne[2]);
  uint a3 = i3 / (pc.t[2].ne[3] / pc.t[1].ne[3]);
#endif
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
  } else if (N == 1u && is_block_type(A_TYPE) && bnb0 == 4u) {
    // Decode of the other block types: chunks of 32 read in place
    // (K-quants: 8 per super-block), one register accumulator.
    uint cpb = block_elems(A_TYPE) / 32u;
    uint bw = offset4(2, 0u, 0u, i2, i3) >> 2;
    float sum = 0.0;
    for (uint ch = l; ch < K / 32u; ch += wg) {
      sum += chunk_dot(A_TYPE, arow + (ch / cpb) * pc.t[1].nb[0], ch % cpb, bw + ch * 32u);
    }
    acc[0] = sum;
  } else if (is_block_type(A_TYPE)) {
    // Up to MAX_N columns, B with any strides: each chunk dequantized once.
    uint cpb = block_elems(A_TYPE) / 32u;
    for (uint ch = l; ch < K / 32u; ch += wg) {
      float x[32];
      dq_chunk(A_TYPE, arow + (ch / cpb) * pc.t[1].nb[0], ch % cpb, x);
      for (uint n = 0u; n < N; ++n) {
        uint bo = offset4(2, 0u, n, i2, i3) + ch * 32u * bnb0;
        float s = acc[n];
        [[unroll]] for (uint i = 0u; i < 32u; ++i) s = fma(x[i], uintBitsToFloat(ld_b_u32(bo + i * bnb0)), s);
        acc[n] = s;
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
