#version 450
// MUL_MAT for prefill on cooperative matrices: dst[m, n, i2, i3] =
// sum_k A[k, m, i2/r2, i3/r3] * B[k, n, i2, i3], with A (dequantized) and B
// rounded to F16 and the products summed in f32 (docs/plugin-abi.md,
// MUL_MAT's F16-inputs rule for more than 8 columns).
//
// A 64x64 output tile per workgroup of 128 invocations = 4 subgroups of 32,
// each owning a 32x32 quarter as 2x2 accumulators of 16x16. Per 32 k,
// invocations 0..63 stage row m0 + l of A (one 32-element chunk, decoded
// once: quant.glsl's dq_chunk; F16 A's words as they are) and invocations
// 64..127 column n0 + l - 64 of B into shared memory as F16, rows 40
// halves apart (80 bytes: every fragment starts and strides on 16 bytes,
// as cooperative-matrix loads ask); then each subgroup loads its 2 A and 2
// B fragments per 16 k and does 4 multiply-adds, while the next step's
// values are already being read into registers. The result leaves through
// a 16x16 f32 staging tile per subgroup, column-major as dst's columns
// are, so the stores coalesce and a partial tile at the edge is clipped. K
// must be a multiple of 32 (ops/dispatch.cpp chooses this kernel only
// then). The conversions to F16 round to nearest, ties to even
// (execution mode RoundingModeRTE; the instruction's own mode is the
// implementation's).
//
// Two forms, one body (the CM_* macros):
// - LOOM_CM_NV: VK_NV_cooperative_matrix (fcoopmatNV 16x16x16, F16 inputs,
//   f32 accumulators; subgroups of 32). What glslc of this build compiles.
// - neither: the loads, multiply-adds and stores emulated on plain shader
//   arithmetic, for lavapipe (LOOM_VULKAN_EMULATE=coopmat; tests only);
//   the staging, its F16 rounding and the rest as above. A fragment is a reference
//   into the shared tile (offset, stride, layout) read when multiplied,
//   before the next barrier, which this kernel's order guarantees; an
//   accumulator holds 8 of its 256 elements per invocation of the virtual
//   subgroup (invocations 32w..32w+31), element e = lane + 32j, as a real
//   one is spread over its subgroup. An offset or stride off 16 bytes
//   poisons the result with NaN, so a kernel a GPU would refuse fails here.
//
// Spec constant 0: the workgroup size (128); 1: A's type.
// Workgroups: x = M tiles, y = N tiles, z = batch.
//
// -DLOOM_ID_GROUPED: MUL_MAT_ID's prefill after moe_group.comp, as
// mul_mat.comp's: z = the expert e (A's matrix e), its columns the pairs
// moe_group listed for e (binding 4 from byte p[1]); a workgroup takes
// the column tiles y, y + gridY, ... below the expert's count.
//
// lavapipe ends an invocation's loops after 65535 iterations in all:
// dispatch.cpp (mul_mat_loops, kCoopmat) counts this file's loops per k
// step; keep the two in step.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_spirv_intrinsics : require
#ifdef LOOM_CM_NV
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#endif
// Conversions to F16 round to nearest, ties to even: execution mode
// RoundingModeRTE (4462) for width 16, capability RoundingModeRTE (4467);
// coopmat.cpp asks for shaderRoundingModeRTEFloat16 (and shaderFloat16).
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4467], 4462, 16);
#include "common.glsl"
#include "quant.glsl"

layout(constant_id = 1) const uint A_TYPE = 0u;

const uint TILE = 64u;
const uint BK = 32u;
const uint LD = BK + 8u;     // halves between staged rows (80 bytes)
const uint CLD = 16u + 4u;   // floats between columns of a staging tile (80 bytes)
const uint CT = 16u * CLD;   // one subgroup's staging tile

shared float s_c[4u * CT];
shared float16_t s_a[TILE * LD];
shared float16_t s_b[TILE * LD];

// Two values rounded to F16 (RoundingModeRTE above) as one word, the
// first in the low half.
uint pack_half2(float x, float y) { return packFloat2x16(f16vec2(x, y)); }
// Staged word i of a row or column: halves 2i and 2i + 1.
#define STAGE(arr, r, i, word)                \
  {                                           \
    f16vec2 h_ = unpackFloat2x16(word);       \
    arr[(r) * LD + 2u * (i)] = h_.x;          \
    arr[(r) * LD + 2u * (i) + 1u] = h_.y;     \
  }

#ifdef LOOM_ID_GROUPED
layout(std430, binding = 4) readonly buffer BufG { uint g_data[]; };
// Byte offset of column n of the expert's list in tensor k (B or the
// result: [., 1, U, T]); n < count. Column n is the pair p = u + U t.
uint pair_column(uint k, uint first, uint count, uint n) {
  uint p = g_data[(pc.p[1] >> 2) + 2u * pc.t[1].ne[2] + first + n];
  uint U = pc.t[2].ne[2];
  return offset4(k, 0u, 0u, p % U, p / U);
}
#endif

#ifdef LOOM_CM_NV

#define CM_IN fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM_ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define CM_ZERO(m) m = CM_ACC(0.0)
#define CM_LOAD_A(m, off) coopMatLoadNV(m, s_a, off, LD, false)
#define CM_LOAD_B(m, off) coopMatLoadNV(m, s_b, off, LD, true)
#define CM_MAD(a, b, c) c = coopMatMulAddNV(a, b, c)
#define CM_STORE(m, off) coopMatStoreNV(m, s_c, off, CLD, true)
uint warp_id() { return gl_SubgroupID; }
#define CM_UNROLL [[unroll]]

#else  // emulated

// A fragment: element (r, c) of the 16x16 tile at s_a / s_b[off + r * LD + c]
// (row-major: A's rows of 16 k) or [off + c * LD + r] (column-major: B's
// columns of 16 k). poison: an offset off 16 bytes.
struct CmIn { uint off; bool poison; };
struct CmAcc { float v[8]; };
#define CM_IN CmIn
#define CM_ACC CmAcc
bool off16(uint elems, uint bytes) { return ((elems * bytes) & 15u) != 0u; }
#define CM_ZERO(m) { [[unroll]] for (uint j_ = 0u; j_ < 8u; ++j_) m.v[j_] = 0.0; }
// A's and B's fragments differ only in how cm_mad reads them.
#define CM_LOAD_A(m, o) { m.off = (o); m.poison = off16(o, 2u) || off16(LD, 2u); }
#define CM_LOAD_B(m, o) CM_LOAD_A(m, o)
uint lane_id() { return gl_LocalInvocationID.x % 32u; }
CmAcc cm_mad(CmIn a, CmIn b, CmAcc c) {
  CmAcc d;
  for (uint j = 0u; j < 8u; ++j) {
    uint e = lane_id() + 32u * j;
    uint r = e / 16u;  // row of A's tile
    uint col = e % 16u;  // column of B's tile
    float s = c.v[j];
    for (uint k = 0u; k < 16u; ++k) s = fma(float(s_a[a.off + r * LD + k]), float(s_b[b.off + col * LD + k]), s);
    d.v[j] = (a.poison || b.poison) ? uintBitsToFloat(0x7FC00000u) : s;
  }
  return d;
}
#define CM_MAD(a, b, c) c = cm_mad(a, b, c)
// Column-major into s_c: element (r, col) at off + col * CLD + r.
#define CM_STORE(m, o)                                                        \
  {                                                                           \
    bool bad_ = off16(o, 4u) || off16(CLD, 4u);                              \
    [[unroll]] for (uint j_ = 0u; j_ < 8u; ++j_) {                            \
      uint e_ = lane_id() + 32u * j_;                                         \
      s_c[(o) + (e_ % 16u) * CLD + e_ / 16u] = bad_ ? uintBitsToFloat(0x7FC00000u) : m.v[j_]; \
    }                                                                         \
  }
uint warp_id() { return gl_LocalInvocationID.x / 32u; }
// Loops around the emulated multiply-adds stay loops: lavapipe compiles
// the kernel once per A type, and 4 inlined copies of cm_mad cost seconds.
#define CM_UNROLL [[dont_unroll]]

#endif

// This invocation's 32 values of the staging step at k0 as 16 words of F16
// pairs: A's row chunk (a_row) or B's column chunk (b_col), zeros past the
// edge (!live). F16 A whose chunk is 4-byte aligned and dense: its words
// as they are (no rounding to do).
void fetch(uint k0, bool live, bool stage_a, bool b_vec4, uint a_row, uint b_col, uint qk, out uint h[16]) {
  float x[32];
  if (!live) {
    [[unroll]] for (uint i = 0u; i < 16u; ++i) h[i] = 0u;
    return;
  }
  if (stage_a && A_TYPE == TYPE_F16 && pc.t[1].nb[0] == 2u && (a_row & 3u) == 0u) {
    [[unroll]] for (uint i = 0u; i < 16u; ++i) h[i] = ld_a_u32(a_row + 2u * k0 + 4u * i);
    return;
  }
  if (stage_a && is_block_type(A_TYPE)) {
    dq_chunk(A_TYPE, a_row + (k0 / qk) * pc.t[1].nb[0], (k0 % qk) / 32u, x);
  } else if (stage_a) {
    [[unroll]] for (uint i = 0u; i < 32u; ++i) x[i] = ld_a_elem(A_TYPE, a_row + (k0 + i) * pc.t[1].nb[0]);
  } else if (b_vec4) {
    [[unroll]] for (uint i = 0u; i < 32u; i += 4u) {
      vec4 v = ld_b_vec4((b_col >> 2) + k0 + i);
      x[i] = v.x;
      x[i + 1u] = v.y;
      x[i + 2u] = v.z;
      x[i + 3u] = v.w;
    }
  } else {
    [[unroll]] for (uint i = 0u; i < 32u; ++i) x[i] = uintBitsToFloat(ld_b_u32(b_col + (k0 + i) * pc.t[2].nb[0]));
  }
  [[unroll]] for (uint i = 0u; i < 16u; ++i) h[i] = pack_half2(x[2u * i], x[2u * i + 1u]);
}

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
  uint w = warp_id();
  uint wm = (w & 1u) * 32u;   // the subgroup's rows in the tile
  uint wn = (w >> 1) * 32u;   // and columns
  bool stage_a = l < TILE;    // the staging share: A's row m0 + l or B's column n0 + l - 64
  uint r = stage_a ? l : l - TILE;
  uint qk = block_elems(A_TYPE);
  uint a_row = offset4(1, 0u, m0 + r, a2, a3);
#ifdef LOOM_ID_GROUPED
  // N is the same for the whole workgroup: the loop and its barriers stay
  // in uniform control flow.
  for (uint n0 = gl_WorkGroupID.y * TILE; n0 < N; n0 += gl_NumWorkGroups.y * TILE) {
  uint b_col = stage_a || n0 + r >= N ? 0u : pair_column(2, first, N, n0 + r);
#else
  uint n0 = gl_WorkGroupID.y * TILE;
  uint b_col = offset4(2, 0u, n0 + r, i2, i3);
#endif
  bool live = stage_a ? m0 + r < M : n0 + r < N;
  bool b_vec4 = pc.t[2].nb[0] == 4u && (b_col & 15u) == 0u;  // contiguous k: 16-byte loads

  CM_ACC acc[2][2];
  [[unroll]] for (uint i = 0u; i < 2u; ++i) {
    [[unroll]] for (uint j = 0u; j < 2u; ++j) CM_ZERO(acc[i][j]);
  }
  // Step k1 is fetched while step k1 - 32 (staged from the previous
  // fetch) is multiplied, so the loads overlap the products; one call site
  // of fetch keeps the kernel small.
  uint h[16];
  for (uint k1 = 0u; k1 <= K; k1 += BK) {
    if (k1 > 0u) {
      if (stage_a) {
        [[unroll]] for (uint i = 0u; i < 16u; ++i) STAGE(s_a, r, i, h[i])
      } else {
        [[unroll]] for (uint i = 0u; i < 16u; ++i) STAGE(s_b, r, i, h[i])
      }
      barrier();
    }
    if (k1 < K) fetch(k1, live, stage_a, b_vec4, a_row, b_col, qk, h);
    if (k1 > 0u) {
      [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
        CM_IN fa[2];
        CM_IN fb[2];
        [[unroll]] for (uint i = 0u; i < 2u; ++i) CM_LOAD_A(fa[i], (wm + 16u * i) * LD + kk);
        [[unroll]] for (uint j = 0u; j < 2u; ++j) CM_LOAD_B(fb[j], (wn + 16u * j) * LD + kk);
        CM_UNROLL for (uint i = 0u; i < 2u; ++i) {
          CM_UNROLL for (uint j = 0u; j < 2u; ++j) CM_MAD(fa[i], fb[j], acc[i][j]);
        }
      }
      barrier();
    }
  }
  // Out through the staging tiles: subgroup w's tile (i, j) at s_c[w * CT],
  // then invocations 32t..32t+31 write tile t's 256 results, 8 each,
  // consecutive invocations on consecutive rows of a column.
  uint t = l / 32u;
  uint lane = l % 32u;
  uint tm = m0 + (t & 1u) * 32u;
  uint tn = n0 + (t >> 1) * 32u;
  [[unroll]] for (uint i = 0u; i < 2u; ++i) {
    [[unroll]] for (uint j = 0u; j < 2u; ++j) {
      CM_STORE(acc[i][j], w * CT);
      barrier();
      [[unroll]] for (uint s = 0u; s < 8u; ++s) {
        uint e = lane + 32u * s;
        uint mm = e % 16u;
        uint nn = e / 16u;
        uint m = tm + 16u * i + mm;
        uint n = tn + 16u * j + nn;
        if (m < M && n < N) {
          float v = s_c[t * CT + nn * CLD + mm];
#ifdef LOOM_ID_GROUPED
          st_u32(pair_column(0, first, N, n) + m * pc.t[0].nb[0], floatBitsToUint(v));
#else
          st_u32(offset4(0, m, n, i2, i3), floatBitsToUint(v));
#endif
        }
      }
      barrier();
    }
  }
#ifdef LOOM_ID_GROUPED
  }
#endif
}
