#version 450
// ATTENTION split over the KV length (flash-decoding), second pass: merges
// the n_split key ranges of each (h, t) that attention.comp (LOOM_SPLIT)
// left in scratch rows of Dv + 2 floats (unnormalised accumulators, the
// range's max m_s and sum l_s): with M = max m_s,
//   dst[i, h, t] = sum_s exp(m_s - M) acc_s[i] / sum_s exp(m_s - M) l_s.
// Empty ranges (m_s = -inf) weigh nothing; a row with no visible key is 0.
// Binding 0: dst (t[0]: F32, ne = Dv, H, T); binding 1: the scratch rows
// from byte t[1].off, row (t * H + h) * n_split + s; p[1] = n_split. One
// invocation per result element.
#include "common.glsl"

void main() {
  uint dv = pc.t[0].ne[0];
  uint nh = pc.t[0].ne[1];
  uint idx = flat_index();
  if (idx >= dv * nh * pc.t[0].ne[2]) return;
  uint i = idx % dv;
  uint h = (idx / dv) % nh;
  uint t = idx / (dv * nh);
  uint ns = pc.p[1];
  uint row = dv + 2u;
  uint base = (pc.t[1].off >> 2) + (t * nh + h) * ns * row;
  float mx = uintBitsToFloat(0xFF800000u);
  for (uint s = 0u; s < ns; ++s) mx = max(mx, uintBitsToFloat(a_data[base + s * row + dv]));
  float num = 0.0;
  float den = 0.0;
  for (uint s = 0u; s < ns; ++s) {
    uint o = base + s * row;
    float ms = uintBitsToFloat(a_data[o + dv]);
    if (ms == uintBitsToFloat(0xFF800000u)) continue;  // no key in this range
    float w = exp(ms - mx);
    num += w * uintBitsToFloat(a_data[o + i]);
    den += w * uintBitsToFloat(a_data[o + dv + 1u]);
  }
  st_u32(offset4(0, i, h, t, 0u), floatBitsToUint(den > 0.0 ? num / den : 0.0));
}
