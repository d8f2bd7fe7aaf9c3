// Every quantized weight type as small integers, for the int8 GEMV
// (mul_mat_vec_q8.comp): chunk c (32 elements) of the block at byte b of A
// becomes 8 words of 4 signed bytes (element 4w + k in byte k of word w,
// the same packing as B's 8-bit blocks) and, per half of 16 elements, a
// scale S and an offset M with element = S * q + M. Every type fits that
// form (the K-quants' sub-block scales and mins, the 4/5/6-bit types'
// zero points as M = -8 S, -16 S, -32 S; IQ4_NL / IQ4_XS's table values as
// signed bytes, M = 0), so one dot product serves all:
//   sum(a * b') = d_b * (S.x * sum_lo(q * qb) + S.y * sum_hi(q * qb)
//                        + M.x * sum_lo(qb) + M.y * sum_hi(qb)).
// The values are those of quant.glsl's dq_chunk (same layouts, same
// scales); only the order of the float operations differs. Included after
// quant.glsl.

// Bits 4w..4w+3 of qh moved to bit 4 of bytes 0..3 (Q5_0 / Q5_1's fifth
// bit for packed word w of the low half; w + 4 for the high half).
uint spread_bit4(uint qh, uint e) {
  uint b = (qh >> e) & 0xFu;
  return ((b & 1u) | ((b & 2u) << 7) | ((b & 4u) << 14) | ((b & 8u) << 21)) << 4;
}

int iq4nl_value(uint v) { return int(IQ4_NL_VALUES[v]); }
// A word of 4 nibble indices (one per byte) -> their table values as 4
// signed bytes.
uint iq4nl_bytes(uint x) {
  uint y = 0u;
  [[unroll]] for (uint k = 0u; k < 4u; ++k) y |= (uint(iq4nl_value((x >> (8u * k)) & 0xFu)) & 0xFFu) << (8u * k);
  return y;
}

void iq_chunk(uint t, uint b, uint c, out uint q[8], out vec2 S, out vec2 M) {
  if (t == TYPE_Q8_0) {
    float d = ld_a_f16(b);
    [[unroll]] for (uint w = 0u; w < 8u; ++w) q[w] = ld_a_word(b + 2u + 4u * w);
    S = vec2(d);
    M = vec2(0.0);
  } else if (t == TYPE_Q4_0 || t == TYPE_Q4_1 || t == TYPE_IQ4_NL) {
    uint qs = t == TYPE_Q4_1 ? 4u : 2u;
    float d = ld_a_f16(b);
    [[unroll]] for (uint w = 0u; w < 4u; ++w) {
      uint x = ld_a_word(b + qs + 4u * w);
      q[w] = x & 0x0F0F0F0Fu;
      q[w + 4u] = (x >> 4) & 0x0F0F0F0Fu;
    }
    if (t == TYPE_IQ4_NL) {
      // The table's values are signed bytes themselves.
      [[unroll]] for (uint w = 0u; w < 8u; ++w) q[w] = iq4nl_bytes(q[w]);
    }
    S = vec2(d);
    M = vec2(t == TYPE_Q4_1 ? ld_a_f16(b + 2u) : t == TYPE_Q4_0 ? -8.0 * d : 0.0);
  } else if (t == TYPE_Q5_0 || t == TYPE_Q5_1) {
    bool one = t == TYPE_Q5_1;
    float d = ld_a_f16(b);
    uint qh = ld_a_word(b + (one ? 4u : 2u));
    uint qs = one ? 8u : 6u;
    [[unroll]] for (uint w = 0u; w < 4u; ++w) {
      uint x = ld_a_word(b + qs + 4u * w);
      q[w] = (x & 0x0F0F0F0Fu) | spread_bit4(qh, 4u * w);
      q[w + 4u] = ((x >> 4) & 0x0F0F0F0Fu) | spread_bit4(qh, 16u + 4u * w);
    }
    S = vec2(d);
    M = vec2(one ? ld_a_f16(b + 2u) : -16.0 * d);
  } else if (t == TYPE_Q2_K) {
    uint h = c >> 2, sh = 2u * (c & 3u);
    float d = ld_a_f16(b + 80u), dmin = ld_a_f16(b + 82u);
    uint scs = ld_a_u16(b + 2u * c);
    [[unroll]] for (uint w = 0u; w < 8u; ++w) q[w] = (ld_a_word(b + 16u + 32u * h + 4u * w) >> sh) & 0x03030303u;
    S = vec2(d * float(byte_of(scs, 0u) & 0x0Fu), d * float(byte_of(scs, 1u) & 0x0Fu));
    M = vec2(-dmin * float(byte_of(scs, 0u) >> 4), -dmin * float(byte_of(scs, 1u) >> 4));
  } else if (t == TYPE_Q3_K) {
    // low | high << 2 is q + 4 (the high bit set means no -4).
    uint h = c >> 2, j = c & 3u;
    uint sh = 2u * j, hb = 4u * h + j;
    float d = ld_a_f16(b + 108u);
    [[unroll]] for (uint w = 0u; w < 8u; ++w) {
      uint lo = (ld_a_word(b + 32u + 32u * h + 4u * w) >> sh) & 0x03030303u;
      uint hi = (ld_a_word(b + 4u * w) >> hb) & 0x01010101u;
      q[w] = lo | (hi << 2);
    }
    S = vec2(d * q3_scale(b + 96u, 2u * c), d * q3_scale(b + 96u, 2u * c + 1u));
    M = -4.0 * S;
  } else if (t == TYPE_Q4_K || t == TYPE_Q5_K) {
    bool five = t == TYPE_Q5_K;
    uvec2 sm = k_scale_min(b + 4u, c);
    uint nsh = (c & 1u) * 4u;
    uint qs = (five ? 48u : 16u) + 32u * (c >> 1);
    [[unroll]] for (uint w = 0u; w < 8u; ++w) {
      uint x = (ld_a_word(b + qs + 4u * w) >> nsh) & 0x0F0F0F0Fu;
      if (five) x |= ((ld_a_word(b + 16u + 4u * w) >> c) & 0x01010101u) << 4;
      q[w] = x;
    }
    S = vec2(ld_a_f16(b) * float(sm.x));
    M = vec2(-ld_a_f16(b + 2u) * float(sm.y));
  } else if (t == TYPE_Q6_K) {
    uint h = c >> 2, s = c & 3u;
    float d = ld_a_f16(b + 208u);
    uint nsh = s < 2u ? 0u : 4u;
    uint scs = ld_a_u16(b + 192u + 8u * h + 2u * s);
    [[unroll]] for (uint w = 0u; w < 8u; ++w) {
      uint ql = (ld_a_word(b + 64u * h + 32u * (s & 1u) + 4u * w) >> nsh) & 0x0F0F0F0Fu;
      uint qh = (ld_a_word(b + 128u + 32u * h + 4u * w) >> (2u * s)) & 0x03030303u;
      q[w] = ql | (qh << 4);
    }
    S = vec2(d * float(int(byte_of(scs, 0u) << 24) >> 24), d * float(int(byte_of(scs, 1u) << 24) >> 24));
    M = -32.0 * S;
  } else if (t == TYPE_IQ4_XS) {
    // Sub-block c: IQ4_NL's 16 bytes of nibbles, scale d * (ls - 32).
    [[unroll]] for (uint w = 0u; w < 4u; ++w) {
      uint x = ld_a_word(b + 8u + 16u * c + 4u * w);
      q[w] = iq4nl_bytes(x & 0x0F0F0F0Fu);
      q[w + 4u] = iq4nl_bytes((x >> 4) & 0x0F0F0F0Fu);
    }
    S = vec2(iq4xs_scale(b, c));
    M = vec2(0.0);
  } else {
    [[unroll]] for (uint w = 0u; w < 8u; ++w) q[w] = 0u;
    S = vec2(0.0);
    M = vec2(0.0);
  }
}
