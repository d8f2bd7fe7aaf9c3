#version 450
// NORM and RMS_NORM: one workgroup per row, tree reductions in shared
// memory. p[1]: loom op id, p[2]: eps (f32 bits).
#include "common.glsl"

shared float s_sum[256];

float reduce_sum(float v) {
  uint l = gl_LocalInvocationID.x;
  s_sum[l] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (l < s) s_sum[l] += s_sum[l + s];
    barrier();
  }
  float r = s_sum[0];
  barrier();
  return r;
}

void main() {
  uint row = flat_group();
  if (row >= nrows(0)) return;
  uint n = pc.t[1].ne[0];
  uint ra = row_offset(1, row);
  uint rd = row_offset(0, row);
  uint ta = type_a();
  uint l = gl_LocalInvocationID.x;
  float mean = 0.0;
  if (pc.p[1] == 12u) {
    float s = 0.0;
    for (uint i = l; i < n; i += gl_WorkGroupSize.x) s += ld_a_elem(ta, ra + i * pc.t[1].nb[0]);
    mean = reduce_sum(s) / float(n);
  }
  float sq = 0.0;
  for (uint i = l; i < n; i += gl_WorkGroupSize.x) {
    float v = ld_a_elem(ta, ra + i * pc.t[1].nb[0]) - mean;
    sq += v * v;
  }
  float inv = 1.0 / sqrt(reduce_sum(sq) / float(n) + uintBitsToFloat(pc.p[2]));
  for (uint i = l; i < n; i += gl_WorkGroupSize.x) {
    float v = ld_a_elem(ta, ra + i * pc.t[1].nb[0]);
    st_elem(type_d(), rd + i * pc.t[0].nb[0], (v - mean) * inv);
  }
}
