#version 450
// SOFT_MAX: softmax(x * scale + mask) per row, one workgroup per row. The
// mask row is (i1, i2 % m2, i3 % m3); p[1] = 1 when a mask is bound. A row
// that is -inf everywhere gives zeros. p[2]: scale (f32 bits).
#include "common.glsl"

shared float s_red[256];

float reduce(float v, bool is_max) {
  uint l = gl_LocalInvocationID.x;
  s_red[l] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (l < s) s_red[l] = is_max ? max(s_red[l], s_red[l + s]) : s_red[l] + s_red[l + s];
    barrier();
  }
  float r = s_red[0];
  barrier();
  return r;
}

void main() {
  uint row = flat_group();
  if (row >= nrows(0)) return;
  uint n = pc.t[1].ne[0];
  uint i1 = row % pc.t[1].ne[1];
  uint i2 = (row / pc.t[1].ne[1]) % pc.t[1].ne[2];
  uint i3 = row / (pc.t[1].ne[1] * pc.t[1].ne[2]);
  uint ra = offset4(1, 0u, i1, i2, i3);
  uint rd = offset4(0, 0u, i1, i2, i3);
  bool has_mask = pc.p[1] != 0u;
  uint rm = has_mask ? offset4(2, 0u, i1, i2 % pc.t[2].ne[2], i3 % pc.t[2].ne[3]) : 0u;
  float scale = uintBitsToFloat(pc.p[2]);
  uint ta = type_a();
  uint tb = type_b();
  uint l = gl_LocalInvocationID.x;
  const float NEG_INF = uintBitsToFloat(0xFF800000u);
  float mx = NEG_INF;
  for (uint i = l; i < n; i += gl_WorkGroupSize.x) {
    float v = ld_a_elem(ta, ra + i * pc.t[1].nb[0]) * scale;
    if (has_mask) v += ld_b_elem(tb, rm + i * pc.t[2].nb[0]);
    mx = max(mx, v);
  }
  mx = reduce(mx, true);
  if (isinf(mx) && mx < 0.0) {
    for (uint i = l; i < n; i += gl_WorkGroupSize.x) st_elem(type_d(), rd + i * pc.t[0].nb[0], 0.0);
    return;
  }
  float sum = 0.0;
  for (uint i = l; i < n; i += gl_WorkGroupSize.x) {
    float v = ld_a_elem(ta, ra + i * pc.t[1].nb[0]) * scale;
    if (has_mask) v += ld_b_elem(tb, rm + i * pc.t[2].nb[0]);
    sum += exp(v - mx);
  }
  sum = reduce(sum, false);
  for (uint i = l; i < n; i += gl_WorkGroupSize.x) {
    float v = ld_a_elem(ta, ra + i * pc.t[1].nb[0]) * scale;
    if (has_mask) v += ld_b_elem(tb, rm + i * pc.t[2].nb[0]);
    st_elem(type_d(), rd + i * pc.t[0].nb[0], exp(v - mx) / sum);
  }
}
