#version 450
// B rounded to 8-bit blocks for the int8 GEMV (mul_mat_vec_q8.comp), once
// per node: per block of p[1] elements (32, or 256 for K-quant A) of each
// column, d = max|b| / 127, q = roundEven(b * (1 / d)) — ggml's rule, the
// conformance suite's q8_column. Output (binding 0 from byte t[0].off),
// per column (flat over dims 1..3) and chunk of 32: 8 words of 4 signed
// bytes, d, the sums of q over elements 0..15 and 16..31, one pad word (48
// bytes: three uvec4 loads). Source B at binding 1 (t[1]: f32, dense rows).
// One invocation per block.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

void main() {
  uint QB = pc.p[1];
  uint K = pc.t[1].ne[0];
  uint N = pc.t[1].ne[1];
  uint nblk = K / QB;
  uint idx = flat_index();
  if (idx >= N * pc.t[1].ne[2] * pc.t[1].ne[3] * nblk) return;
  uint col = idx / nblk, j = idx % nblk;
  uint n = col % N, i2 = (col / N) % pc.t[1].ne[2], i3 = col / (N * pc.t[1].ne[2]);
  uint base = offset4(1, j * QB, n, i2, i3);
  float amax = 0.0;
  for (uint k = 0u; k < QB; ++k) amax = max(amax, abs(uintBitsToFloat(ld_a_u32(base + 4u * k))));
  precise float d = amax / 127.0;
  precise float id = d != 0.0 ? 1.0 / d : 0.0;
  uint nch = K / 32u;
  uint out0 = (pc.t[0].off >> 2) + (col * nch + j * (QB / 32u)) * 12u;
  for (uint c = 0u; c < QB / 32u; ++c) {
    int s0 = 0, s1 = 0;
    [[unroll]] for (uint w = 0u; w < 8u; ++w) {
      uint packed = 0u;
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        precise float x = uintBitsToFloat(ld_a_u32(base + 4u * (32u * c + 4u * w + k))) * id;
        int q = int(roundEven(x));
        packed |= (uint(q) & 0xFFu) << (8u * k);
        if (w < 4u) s0 += q; else s1 += q;
      }
      d_data[out0 + 12u * c + w] = packed;
    }
    d_data[out0 + 12u * c + 8u] = floatBitsToUint(d);
    d_data[out0 + 12u * c + 9u] = uint(s0);
    d_data[out0 + 12u * c + 10u] = uint(s1);
    d_data[out0 + 12u * c + 11u] = 0u;
  }
}
