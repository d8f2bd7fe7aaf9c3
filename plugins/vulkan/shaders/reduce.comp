#version 450
// ARGMAX (p[1] = 0: first index of the largest value; NaN never wins) and
// SUM_ROWS (p[1] = 1), one workgroup per row with shared-memory reductions.
#include "common.glsl"

shared float s_val[256];
shared uint s_idx[256];

// Whether (v, i) beats (w, j): larger, or equal and earlier; a NaN loses.
bool better(float v, uint i, float w, uint j) {
  if (isnan(v)) return false;
  if (isnan(w)) return true;
  return v > w || (v == w && i < j);
}

void main() {
  uint row = flat_group();
  if (row >= nrows(1)) return;
  uint n = pc.t[1].ne[0];
  uint ra = row_offset(1, row);
  uint ta = type_a();
  uint l = gl_LocalInvocationID.x;
  if (pc.p[1] == 0u) {
    float best = 0.0;
    uint bi = 0xFFFFFFFFu;
    for (uint i = l; i < n; i += gl_WorkGroupSize.x) {
      float v = ld_a_elem(ta, ra + i * pc.t[1].nb[0]);
      if (bi == 0xFFFFFFFFu || better(v, i, best, bi)) {
        best = v;
        bi = i;
      }
    }
    s_val[l] = best;
    s_idx[l] = bi;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
      if (l < s && s_idx[l + s] != 0xFFFFFFFFu &&
          (s_idx[l] == 0xFFFFFFFFu || better(s_val[l + s], s_idx[l + s], s_val[l], s_idx[l]))) {
        s_val[l] = s_val[l + s];
        s_idx[l] = s_idx[l + s];
      }
      barrier();
    }
    // All NaN: index 0, as the CPU's first-wins scan gives.
    if (l == 0u) {
      uint r = s_idx[0];
      if (isnan(s_val[0])) r = 0u;
      uint i1 = row % pc.t[1].ne[1];
      uint i2 = (row / pc.t[1].ne[1]) % pc.t[1].ne[2];
      uint i3 = row / (pc.t[1].ne[1] * pc.t[1].ne[2]);
      st_u32(offset4(0, i1, i2, i3, 0u), r);
    }
    return;
  }
  float s = 0.0;
  for (uint i = l; i < n; i += gl_WorkGroupSize.x) s += ld_a_elem(ta, ra + i * pc.t[1].nb[0]);
  s_val[l] = s;
  barrier();
  for (uint k = gl_WorkGroupSize.x / 2u; k > 0u; k >>= 1) {
    if (l < k) s_val[l] += s_val[l + k];
    barrier();
  }
  if (l == 0u) st_elem(type_d(), row_offset(0, row), s_val[0]);
}
