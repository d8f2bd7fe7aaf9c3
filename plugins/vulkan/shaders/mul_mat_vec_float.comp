#version 450
// MUL_MAT for decode (N <= 8 columns) over float A (F32, F16, BF16): each
// subgroup owns a row of A at a time (rows r = subgroup id, + number of
// subgroups, ... < ROWS of the workgroup's), its lanes stride over k and
// subgroupAdd sums them: no shared memory, no barriers. Wide path (p[2] =
// 1: A's and B's rows dense, 16-byte aligned, K a multiple of 8; the host
// checks): each lane loads 16 bytes of A per step (4 f32 or 8 halves) and
// B as vec4; else one element per lane and step through the strides.
// Spec constants: 0 workgroup size, 1 A's type, 2 ROWS. Workgroups: x
// (wrapping into y) = groups of ROWS rows, z = batch. LOOM_ID: MUL_MAT_ID
// (mul_mat_id.glsl; z = (slot, token) pairs).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#ifdef LOOM_ID
#include "mul_mat_id.glsl"
#endif

layout(constant_id = 1) const uint A_TYPE = 0u;
layout(constant_id = 2) const uint ROWS = 1u;
layout(std430, binding = 1) readonly buffer BufA4 { uvec4 a4[]; };
layout(std430, binding = 2) readonly buffer BufB4 { vec4 b4[]; };
const uint MAX_N = 8u;

// Element e (0..7) of 8 halves in q (F16 or BF16 A).
float half_at(uvec4 q, uint e) {
  uint w = q[e >> 1] >> ((e & 1u) * 16u);
  return A_TYPE == TYPE_F16 ? f16_to_f32(w & 0xFFFFu) : bf16_to_f32(w & 0xFFFFu);
}

void main() {
  uint K = pc.t[1].ne[0];
  uint M = pc.t[1].ne[1];
  uint N = pc.t[2].ne[1];
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
  bool wide = pc.p[2] != 0u;
  uint lane = gl_SubgroupInvocationID;
  for (uint r = gl_SubgroupID; r < ROWS; r += gl_NumSubgroups) {
    uint m = flat_group() * ROWS + r;
    if (m >= M) break;  // uniform in the subgroup
    uint arow = offset4(1, 0u, m, a2, a3);
    float acc[MAX_N];
    for (uint n = 0u; n < MAX_N; ++n) acc[n] = 0.0;
    if (wide && A_TYPE == TYPE_F32) {
      for (uint k4 = lane; k4 < K / 4u; k4 += gl_SubgroupSize) {
        vec4 a = uintBitsToFloat(a4[(arow >> 4) + k4]);
        for (uint n = 0u; n < N; ++n) acc[n] += dot(a, b4[(offset4(2, 0u, n, i2, i3) >> 4) + k4]);
      }
    } else if (wide) {
      for (uint k8 = lane; k8 < K / 8u; k8 += gl_SubgroupSize) {
        uvec4 q = a4[(arow >> 4) + k8];
        vec4 lo = vec4(half_at(q, 0u), half_at(q, 1u), half_at(q, 2u), half_at(q, 3u));
        vec4 hi = vec4(half_at(q, 4u), half_at(q, 5u), half_at(q, 6u), half_at(q, 7u));
        for (uint n = 0u; n < N; ++n) {
          uint bo = (offset4(2, 0u, n, i2, i3) >> 4) + 2u * k8;
          acc[n] += dot(lo, b4[bo]) + dot(hi, b4[bo + 1u]);
        }
      }
    } else {
      for (uint k = lane; k < K; k += gl_SubgroupSize) {
        float a = ld_a_elem(A_TYPE, arow + k * pc.t[1].nb[0]);
        for (uint n = 0u; n < N; ++n)
          acc[n] = fma(a, uintBitsToFloat(ld_b_u32(offset4(2, k, n, i2, i3))), acc[n]);
      }
    }
    for (uint n = 0u; n < N; ++n) {
      float s = subgroupAdd(acc[n]);
      if (subgroupElect()) st_u32(offset4(0, m, n, i2, i3), floatBitsToUint(s));
    }
  }
}
