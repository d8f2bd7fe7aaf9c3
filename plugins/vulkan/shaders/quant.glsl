// Dequantization of every quantized weight type the shaders read, from
// source A (binding 1) in place: Q8_0, Q4_0 and the ABI 1.2 types Q4_1,
// Q5_0, Q5_1, IQ4_NL (32-element blocks), Q2_K..Q6_K (256-element
// super-blocks) and IQ4_XS (ABI 1.4, 256-element super-blocks). Block layouts: include/loom/plugin.h; every element is
// computed with the float operations of plugins/common/quant_k.cpp, in its
// order, and `precise` (no contraction into fma), so GET_ROWS and CPY give
// ggml's values bit for bit. Included after common.glsl by the shaders that
// read quantized A (mul_mat*.comp, rows.comp, copy.comp).
//
// Two forms over the same layouts:
//   dq_elem(t, b, i)      element i of the block at byte b (GET_ROWS, CPY,
//                         strided reads);
//   dq_chunk(t, b, c, x)  the 32 elements 32c..32c+31 of the block at byte
//                         b into x (MUL_MAT: quants read a word at a time,
//                         each scale once per chunk, loops unrolled so an
//                         invocation's loop count is one per chunk).
#extension GL_EXT_control_flow_attributes : require

const uint TYPE_Q4_1 = 3u;
const uint TYPE_Q5_0 = 6u;
const uint TYPE_Q5_1 = 7u;
const uint TYPE_Q2_K = 10u;
const uint TYPE_Q3_K = 11u;
const uint TYPE_Q4_K = 12u;
const uint TYPE_Q5_K = 13u;
const uint TYPE_Q6_K = 14u;
const uint TYPE_IQ4_NL = 20u;
const uint TYPE_IQ4_XS = 23u;

bool is_kquant(uint t) { return t >= TYPE_Q2_K && t <= TYPE_Q6_K; }
// Any block type (read-only ones included; common.glsl's is_quant names the
// writable ones).
bool is_block_type(uint t) {
  return t == TYPE_Q8_0 || t == TYPE_Q4_0 || t == TYPE_Q4_1 || t == TYPE_Q5_0 || t == TYPE_Q5_1 ||
         t == TYPE_IQ4_NL || is_kquant(t) || t == TYPE_IQ4_XS;
}
uint block_elems(uint t) { return is_kquant(t) || t == TYPE_IQ4_XS ? 256u : is_block_type(t) ? 32u : 1u; }
uint block_bytes(uint t) {
  switch (t) {
    case TYPE_Q8_0: return 34u;
    case TYPE_Q4_0: return 18u;
    case TYPE_Q4_1: return 20u;
    case TYPE_Q5_0: return 22u;
    case TYPE_Q5_1: return 24u;
    case TYPE_IQ4_NL: return 18u;
    case TYPE_Q2_K: return 84u;
    case TYPE_Q3_K: return 110u;
    case TYPE_Q4_K: return 144u;
    case TYPE_Q5_K: return 176u;
    case TYPE_Q6_K: return 210u;
    case TYPE_IQ4_XS: return 136u;
    default: return 0u;
  }
}

const float IQ4_NL_VALUES[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0,
                                          25.0, 38.0, 53.0, 69.0, 89.0, 113.0);

// The 4 bytes of A at byte offset off (any offset; both words read hold
// wanted bytes, so nothing past the last wanted byte is touched).
uint ld_a_word(uint off) {
  uint w = off >> 2;
  uint sh = (off & 3u) * 8u;
  return sh == 0u ? a_data[w] : (a_data[w] >> sh) | (a_data[w + 1u] << (32u - sh));
}
float ld_a_f16(uint off) { return f16_to_f32(ld_a_u16(off)); }
uint byte_of(uint w, uint k) { return (w >> (8u * k)) & 0xFFu; }

// Q4_K / Q5_K: 6-bit scale (x) and min (y) of sub-block j from the 12
// packed bytes at byte s.
uvec2 k_scale_min(uint s, uint j) {
  if (j < 4u) return uvec2(ld_a_u8(s + j) & 63u, ld_a_u8(s + j + 4u) & 63u);
  uint hi = ld_a_u8(s + j + 4u);
  return uvec2((hi & 0x0Fu) | ((ld_a_u8(s + j - 4u) >> 6) << 4), (hi >> 4) | ((ld_a_u8(s + j) >> 6) << 4));
}
// Q3_K: signed scale k (0..15) from the 12 packed bytes at byte s: low 4
// bits from the nibbles of bytes 0..7, high 2 bits from bytes 8..11.
float q3_scale(uint s, uint k) {
  uint low = k < 8u ? (ld_a_u8(s + k) & 0x0Fu) : (ld_a_u8(s + k - 8u) >> 4);
  uint high = (ld_a_u8(s + 8u + (k & 3u)) >> (2u * (k >> 2))) & 3u;
  return float(int(low | (high << 4)) - 32);
}
// IQ4_XS (d scales_h scales_l[4] qs[128]): sub-block s's scale as
// quant_k.cpp computes it, d * (ls - 32), ls = 4 bits of scales_l and 2 of
// scales_h.
float iq4xs_scale(uint b, uint s) {
  uint ls = ((ld_a_u8(b + 4u + (s >> 1)) >> (4u * (s & 1u))) & 0x0Fu) | (((ld_a_u16(b + 2u) >> (2u * s)) & 3u) << 4);
  precise float dl = ld_a_f16(b) * float(int(ls) - 32);
  return dl;
}
// Nibble of element i (0..31) of a 32-element block's quants at byte q.
uint nib32(uint q, uint i) {
  uint v = ld_a_u8(q + (i & 15u));
  return i < 16u ? (v & 0x0Fu) : (v >> 4);
}
// Bit i (0..31) of the little-endian word at byte h (2-aligned).
uint bit32(uint h, uint i) { return (ld_a_u16(h + 2u * (i >> 4)) >> (i & 15u)) & 1u; }

// Element i of the block of type t at byte b.
float dq_elem(uint t, uint b, uint i) {
  precise float y;
  if (t == TYPE_Q8_0) {
    y = ld_a_f16(b) * float(int(ld_a_u8(b + 2u + i) << 24) >> 24);
  } else if (t == TYPE_Q4_0) {
    y = ld_a_f16(b) * float(int(nib32(b + 2u, i)) - 8);
  } else if (t == TYPE_Q4_1) {
    y = float(nib32(b + 4u, i)) * ld_a_f16(b) + ld_a_f16(b + 2u);
  } else if (t == TYPE_Q5_0) {
    y = float(int(nib32(b + 6u, i) | (bit32(b + 2u, i) << 4)) - 16) * ld_a_f16(b);
  } else if (t == TYPE_Q5_1) {
    y = float(nib32(b + 8u, i) | (bit32(b + 4u, i) << 4)) * ld_a_f16(b) + ld_a_f16(b + 2u);
  } else if (t == TYPE_IQ4_NL) {
    y = ld_a_f16(b) * IQ4_NL_VALUES[nib32(b + 2u, i)];
  } else if (t == TYPE_Q2_K) {  // scales[16] qs[64] d dmin
    uint h = i >> 7, j = (i >> 5) & 3u, l = i & 31u;
    uint q = (ld_a_u8(b + 16u + 32u * h + l) >> (2u * j)) & 3u;
    uint sc = ld_a_u8(b + (i >> 4));
    precise float dl = ld_a_f16(b + 80u) * float(sc & 0x0Fu);
    precise float ml = ld_a_f16(b + 82u) * float(sc >> 4);
    y = dl * float(q) - ml;
  } else if (t == TYPE_Q3_K) {  // hmask[32] qs[64] scales[12] d
    uint h = i >> 7, j = (i >> 5) & 3u, l = i & 31u;
    int low = int((ld_a_u8(b + 32u + 32u * h + l) >> (2u * j)) & 3u);
    uint high = (ld_a_u8(b + l) >> (4u * h + j)) & 1u;
    precise float dl = ld_a_f16(b + 108u) * q3_scale(b + 96u, i >> 4);
    y = dl * float(low - (high != 0u ? 0 : 4));
  } else if (t == TYPE_Q4_K || t == TYPE_Q5_K) {  // d dmin scales[12] (qh[32]) qs[128]
    bool five = t == TYPE_Q5_K;
    uint j = i >> 5, l = i & 31u;
    uint v = ld_a_u8(b + (five ? 48u : 16u) + 32u * (i >> 6) + l);
    uint q = (j & 1u) == 0u ? (v & 0x0Fu) : (v >> 4);
    if (five) q += ((ld_a_u8(b + 16u + l) >> j) & 1u) != 0u ? 16u : 0u;
    uvec2 sm = k_scale_min(b + 4u, j);
    precise float d1 = ld_a_f16(b) * float(sm.x);
    precise float m1 = ld_a_f16(b + 2u) * float(sm.y);
    y = d1 * float(q) - m1;
  } else if (t == TYPE_Q6_K) {  // ql[128] qh[64] scales[16] d
    uint h = i >> 7, s = (i >> 5) & 3u, l = i & 31u;
    uint lo = ld_a_u8(b + 64u * h + 32u * (s & 1u) + l);
    lo = s < 2u ? (lo & 0x0Fu) : (lo >> 4);
    uint hi = (ld_a_u8(b + 128u + 32u * h + l) >> (2u * s)) & 3u;
    float sc = float(int(ld_a_u8(b + 192u + 8u * h + 2u * s + (l >> 4)) << 24) >> 24);
    precise float ds = ld_a_f16(b + 208u) * sc;
    y = ds * float(int(lo | (hi << 4)) - 32);
  } else if (t == TYPE_IQ4_XS) {  // sub-block i / 32: bytes qs[16 (i / 32) ..], as IQ4_NL's block
    y = iq4xs_scale(b, i >> 5) * IQ4_NL_VALUES[nib32(b + 8u + 16u * (i >> 5), i & 31u)];
  } else {
    y = 0.0;
  }
  return y;
}

// Element i0 of the row at byte `row` of A, whose blocks (or elements) are
// nb0 bytes apart.
float ld_a_row_elem(uint t, uint row, uint i0, uint nb0) {
  if (is_block_type(t)) {
    uint qk = block_elems(t);
    return dq_elem(t, row + (i0 / qk) * nb0, i0 % qk);
  }
  return ld_a_elem(t, row + i0 * nb0);
}

// The 32 elements 32c..32c+31 of the block of type t at byte b, into x
// (c = 0 for the 32-element types, 0..7 for the K-quants and IQ4_XS). Same values as
// dq_elem, element for element.
void dq_chunk(uint t, uint b, uint c, out float x[32]) {
  if (t == TYPE_Q8_0) {
    float d = ld_a_f16(b);
    [[unroll]] for (uint w = 0u; w < 8u; ++w) {
      uint q = ld_a_word(b + 2u + 4u * w);
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        precise float y = d * float(int(q << (24u - 8u * k)) >> 24);
        x[4u * w + k] = y;
      }
    }
  } else if (t == TYPE_Q4_0 || t == TYPE_Q4_1 || t == TYPE_IQ4_NL) {
    uint qs = t == TYPE_Q4_1 ? 4u : 2u;
    float d = ld_a_f16(b);
    float m = t == TYPE_Q4_1 ? ld_a_f16(b + 2u) : 0.0;
    [[unroll]] for (uint w = 0u; w < 4u; ++w) {
      uint q = ld_a_word(b + qs + 4u * w);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        // k < 4: low nibble of byte k (element 4w + k); else the high
        // nibble of byte k - 4 (element 16 + 4w + k - 4).
        uint v = (q >> (k < 4u ? 8u * k : 8u * (k - 4u) + 4u)) & 0x0Fu;
        uint e = k < 4u ? 4u * w + k : 12u + 4u * w + k;
        precise float y;
        if (t == TYPE_Q4_0) {
          y = d * float(int(v) - 8);
        } else if (t == TYPE_Q4_1) {
          y = float(v) * d + m;
        } else {
          y = d * IQ4_NL_VALUES[v];
        }
        x[e] = y;
      }
    }
  } else if (t == TYPE_Q5_0 || t == TYPE_Q5_1) {
    bool one = t == TYPE_Q5_1;
    float d = ld_a_f16(b);
    float m = one ? ld_a_f16(b + 2u) : 0.0;
    uint qh = ld_a_word(b + (one ? 4u : 2u));
    uint qs = one ? 8u : 6u;
    [[unroll]] for (uint w = 0u; w < 4u; ++w) {
      uint q = ld_a_word(b + qs + 4u * w);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint v = (q >> (k < 4u ? 8u * k : 8u * (k - 4u) + 4u)) & 0x0Fu;
        uint e = k < 4u ? 4u * w + k : 12u + 4u * w + k;
        v |= ((qh >> e) & 1u) << 4;
        precise float y;
        if (one) {
          y = float(v) * d + m;
        } else {
          y = float(int(v) - 16) * d;
        }
        x[e] = y;
      }
    }
  } else if (t == TYPE_Q2_K) {
    // Chunk c: half h = c / 4, shift 2 (c % 4) of qs[32h .. 32h + 31];
    // scales 2c and 2c + 1 for its two halves of 16.
    uint h = c >> 2, sh = 2u * (c & 3u);
    float d = ld_a_f16(b + 80u), dmin = ld_a_f16(b + 82u);
    uint scs = ld_a_u16(b + 2u * c);
    [[unroll]] for (uint s = 0u; s < 2u; ++s) {
      uint sc = byte_of(scs, s);
      precise float dl = d * float(sc & 0x0Fu);
      precise float ml = dmin * float(sc >> 4);
      [[unroll]] for (uint w = 0u; w < 4u; ++w) {
        uint q = ld_a_word(b + 16u + 32u * h + 16u * s + 4u * w);
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
          precise float y = dl * float((byte_of(q, k) >> sh) & 3u) - ml;
          x[16u * s + 4u * w + k] = y;
        }
      }
    }
  } else if (t == TYPE_Q3_K) {
    uint h = c >> 2, j = c & 3u;
    uint sh = 2u * j, hb = 4u * h + j;
    float d = ld_a_f16(b + 108u);
    [[unroll]] for (uint s = 0u; s < 2u; ++s) {
      precise float dl = d * q3_scale(b + 96u, 2u * c + s);
      [[unroll]] for (uint w = 0u; w < 4u; ++w) {
        uint q = ld_a_word(b + 32u + 32u * h + 16u * s + 4u * w);
        uint hm = ld_a_word(b + 16u * s + 4u * w);
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
          int v = int((byte_of(q, k) >> sh) & 3u) - (((byte_of(hm, k) >> hb) & 1u) != 0u ? 0 : 4);
          precise float y = dl * float(v);
          x[16u * s + 4u * w + k] = y;
        }
      }
    }
  } else if (t == TYPE_Q4_K || t == TYPE_Q5_K) {
    // Chunk c = sub-block c: bytes qs[32 (c / 2) ..], low nibbles for even
    // c, high for odd; Q5_K's fifth bit is bit c of qh[l].
    bool five = t == TYPE_Q5_K;
    uvec2 sm = k_scale_min(b + 4u, c);
    precise float d1 = ld_a_f16(b) * float(sm.x);
    precise float m1 = ld_a_f16(b + 2u) * float(sm.y);
    uint nsh = (c & 1u) * 4u;
    uint qs = (five ? 48u : 16u) + 32u * (c >> 1);
    [[unroll]] for (uint w = 0u; w < 8u; ++w) {
      uint q = ld_a_word(b + qs + 4u * w);
      uint qh = five ? ld_a_word(b + 16u + 4u * w) : 0u;
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        uint v = (byte_of(q, k) >> nsh) & 0x0Fu;
        if (five) v += ((byte_of(qh, k) >> c) & 1u) != 0u ? 16u : 0u;
        precise float y = d1 * float(v) - m1;
        x[4u * w + k] = y;
      }
    }
  } else if (t == TYPE_Q6_K) {
    // Chunk c: half h = c / 4, s = c % 4: low nibbles (s < 2) or high of
    // ql[64h + 32 (s % 2) ..], bits 2s of qh[32h ..]; scales 8h + 2s and
    // 8h + 2s + 1 for its two halves of 16.
    uint h = c >> 2, s = c & 3u;
    float d = ld_a_f16(b + 208u);
    uint nsh = s < 2u ? 0u : 4u;
    uint scs = ld_a_u16(b + 192u + 8u * h + 2u * s);
    [[unroll]] for (uint half_ = 0u; half_ < 2u; ++half_) {
      precise float ds = d * float(int(byte_of(scs, half_) << 24) >> 24);
      [[unroll]] for (uint w = 0u; w < 4u; ++w) {
        uint ql = ld_a_word(b + 64u * h + 32u * (s & 1u) + 16u * half_ + 4u * w);
        uint qh = ld_a_word(b + 128u + 32u * h + 16u * half_ + 4u * w);
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
          uint v = ((byte_of(ql, k) >> nsh) & 0x0Fu) | (((byte_of(qh, k) >> (2u * s)) & 3u) << 4);
          precise float y = ds * float(int(v) - 32);
          x[16u * half_ + 4u * w + k] = y;
        }
      }
    }
  } else if (t == TYPE_IQ4_XS) {
    // Chunk c = sub-block c: the 16 bytes qs[16 c ..], laid out as IQ4_NL's.
    float dl = iq4xs_scale(b, c);
    [[unroll]] for (uint w = 0u; w < 4u; ++w) {
      uint q = ld_a_word(b + 8u + 16u * c + 4u * w);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint v = (q >> (k < 4u ? 8u * k : 8u * (k - 4u) + 4u)) & 0x0Fu;
        uint e = k < 4u ? 4u * w + k : 12u + 4u * w + k;
        precise float y = dl * IQ4_NL_VALUES[v];
        x[e] = y;
      }
    }
  } else {
    [[unroll]] for (uint k = 0u; k < 32u; ++k) x[k] = 0.0;
  }
}

// Quantized word i (4 quants) of the block at byte b of A: quants start 2
// bytes into a block, so a word may straddle two (funnel shift); words past
// the block's last byte are never read.
uint ld_a_qword(uint b, uint i) {
  uint q = b + 2u + 4u * i;
  uint w = q >> 2;
  uint sh = (q & 3u) * 8u;
  return sh == 0u ? a_data[w] : (a_data[w] >> sh) | (a_data[w + 1u] << (32u - sh));
}
// Dot product of the Q8_0 / Q4_0 block at byte b of A with the 32 floats of
// B starting at word bw (B contiguous): d * sum(q * x).
float block_dot(uint t, uint b, uint bw) {
  float s = 0.0;
  if (t == TYPE_Q8_0) {
    for (uint i = 0u; i < 8u; ++i) {
      uint q = ld_a_qword(b, i);
      vec4 qv = vec4(float(int(q << 24) >> 24), float(int(q << 16) >> 24),
                     float(int(q << 8) >> 24), float(int(q) >> 24));
      s += dot(qv, ld_b_vec4(bw + 4u * i));
    }
  } else {
    for (uint i = 0u; i < 4u; ++i) {
      uint q = ld_a_qword(b, i);
      vec4 lo = vec4(float(q & 15u), float((q >> 8) & 15u), float((q >> 16) & 15u),
                     float((q >> 24) & 15u)) - 8.0;
      vec4 hi = vec4(float((q >> 4) & 15u), float((q >> 12) & 15u), float((q >> 20) & 15u),
                     float(q >> 28)) - 8.0;
      s += dot(lo, ld_b_vec4(bw + 4u * i)) + dot(hi, ld_b_vec4(bw + 16u + 4u * i));
    }
  }
  return f16_to_f32(ld_a_u16(b)) * s;
}

// Dot product of chunk c of the block at byte b with 32 floats of B from
// word bw (B contiguous).
float chunk_dot(uint t, uint b, uint c, uint bw) {
  float x[32];
  dq_chunk(t, b, c, x);
  float s = 0.0;
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    s += dot(vec4(x[4u * i], x[4u * i + 1u], x[4u * i + 2u], x[4u * i + 3u]), ld_b_vec4(bw + 4u * i));
  }
  return s;
}
