#version 450
// MUL_MAT_ID's prefill, first step: the (slot u, token t) pairs grouped by
// expert, so the tiled GEMM (mul_mat.comp -DLOOM_ID_GROUPED) reads each
// chosen expert's rows once per tile of 64 pairs instead of once per pair.
// One workgroup (spec constant 0 invocations). Push constants as the
// GEMM's (ops/mul_mat_id.cpp bind_id): ids at binding 5, U = t[2].ne[2],
// T = t[2].ne[3], E = t[1].ne[2] <= MAX_E; the destination (binding 0) is
// scratch, from byte t[0].off, as words:
//   [0, E)          pairs per expert
//   [E, 2E)         the first list entry of each expert
//   [2E, 2E + U*T)  pair indices p = u + U * t, expert by expert
// Within an expert the order is the atomics' (any order gives the same
// results: each output column depends only on its own pair). A pair whose
// id is outside [0, E) is reported (BAD_EXPERT) and left out.
#include "common.glsl"
#include "mul_mat_id.glsl"

const uint MAX_E = 256u;  // ops/planner.h kGroupMaxExperts

shared uint s_count[MAX_E];
shared uint s_first[MAX_E];

void main() {
  uint U = pc.t[2].ne[2];
  uint T = pc.t[2].ne[3];
  uint E = pc.t[1].ne[2];
  uint pairs = U * T;
  uint base = pc.t[0].off >> 2;
  uint l = gl_LocalInvocationID.x;
  uint wg = gl_WorkGroupSize.x;
  for (uint e = l; e < E; e += wg) s_count[e] = 0u;
  barrier();
  for (uint p = l; p < pairs; p += wg) {
    uint e = expert_of(p % U, p / U);
    if (e != NO_EXPERT) atomicAdd(s_count[e], 1u);
  }
  barrier();
  if (l == 0u) {
    uint run = 0u;
    for (uint e = 0u; e < E; ++e) {
      d_data[base + e] = s_count[e];
      d_data[base + E + e] = run;
      s_first[e] = run;
      run += s_count[e];
      s_count[e] = 0u;
    }
  }
  barrier();
  for (uint p = l; p < pairs; p += wg) {
    uint e = id_data[(pc.p[3] + (p % U) * pc.p[4] + (p / U) * pc.t[2].nb[1]) >> 2];
    if (e < E) d_data[base + 2u * E + s_first[e] + atomicAdd(s_count[e], 1u)] = p;
  }
}
