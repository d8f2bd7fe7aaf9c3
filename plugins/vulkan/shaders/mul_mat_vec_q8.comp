#version 450
// MUL_MAT for decode (N <= 8 columns) over quantized A with B already
// rounded to 8-bit blocks (quantize_q8.comp, binding 4 from byte p[1]):
// integer dot products of A's quants (quant_int.glsl: every block type as
// S * q + M per 16 elements) with B's bytes, one float multiply-add per
// chunk of 32. Each subgroup owns a row of A at a time (rows r = subgroup
// id, + number of subgroups, ... < ROWS of the workgroup's), its lanes
// stride over the row's chunks, and subgroupAdd sums them: no shared
// memory, no barriers. B's chunks are read as three uvec4 (16-byte loads).
// LOOM_INT8DOT: four byte products in one OpSDot (SPV_KHR_integer_dot_product,
// through GL_EXT_spirv_intrinsics), else plain integer arithmetic.
// Spec constants: 0 workgroup size, 1 A's type, 2 ROWS. Workgroups: x
// (wrapping into y) = groups of ROWS rows, z = batch. LOOM_ID: MUL_MAT_ID
// (mul_mat_id.glsl; z = (slot, token) pairs).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#ifdef LOOM_INT8DOT
#extension GL_EXT_spirv_intrinsics : require
// OpSDotKHR (4450) on two packed 4x8-bit vectors (format 0); capabilities
// DotProductKHR (6019) and DotProductInput4x8BitPackedKHR (6018).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int fmt);
#endif
#include "common.glsl"
#include "quant.glsl"
#include "quant_int.glsl"
#ifdef LOOM_ID
#include "mul_mat_id.glsl"
#endif

layout(constant_id = 1) const uint A_TYPE = 0u;
layout(constant_id = 2) const uint ROWS = 1u;
layout(std430, binding = 4) readonly buffer BufQ { uvec4 q_data[]; };
const uint MAX_N = 8u;

int dot4(uint a, uint b) {
#ifdef LOOM_INT8DOT
  return sdot4x8(a, b, 0);
#else
  ivec4 x = ivec4(int(a << 24) >> 24, int(a << 16) >> 24, int(a << 8) >> 24, int(a) >> 24);
  ivec4 y = ivec4(int(b << 24) >> 24, int(b << 16) >> 24, int(b << 8) >> 24, int(b) >> 24);
  return x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
#endif
}

void main() {
  uint K = pc.t[1].ne[0];
  uint M = pc.t[1].ne[1];
  uint N = pc.t[2].ne[1];
  uint nch = K / 32u;
  uint cpb = block_elems(A_TYPE) / 32u;
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
  uint qbase = pc.p[1] >> 4;
  uint col0 = batch * N;
  for (uint r = gl_SubgroupID; r < ROWS; r += gl_NumSubgroups) {
    uint m = flat_group() * ROWS + r;
    if (m >= M) break;  // uniform in the subgroup
    uint arow = offset4(1, 0u, m, a2, a3);
    float acc[MAX_N];
    for (uint n = 0u; n < MAX_N; ++n) acc[n] = 0.0;
    for (uint ch = gl_SubgroupInvocationID; ch < nch; ch += gl_SubgroupSize) {
      uint qa[8];
      vec2 S, Mo;
      iq_chunk(A_TYPE, arow + (ch / cpb) * pc.t[1].nb[0], ch % cpb, qa, S, Mo);
      for (uint n = 0u; n < N; ++n) {
        uint at = qbase + ((col0 + n) * nch + ch) * 3u;
        uvec4 b0 = q_data[at], b1 = q_data[at + 1u], b2 = q_data[at + 2u];
        int lo = dot4(qa[0], b0.x) + dot4(qa[1], b0.y) + dot4(qa[2], b0.z) + dot4(qa[3], b0.w);
        int hi = dot4(qa[4], b1.x) + dot4(qa[5], b1.y) + dot4(qa[6], b1.z) + dot4(qa[7], b1.w);
        float s = S.x * float(lo) + S.y * float(hi) + Mo.x * float(int(b2.y)) + Mo.y * float(int(b2.z));
        acc[n] = fma(uintBitsToFloat(b2.x), s, acc[n]);
      }
    }
    for (uint n = 0u; n < N; ++n) {
      float s = subgroupAdd(acc[n]);
      if (subgroupElect()) st_u32(offset4(0, m, n, i2, i3), floatBitsToUint(s));
    }
  }
}
