// Element i of a block (or a row) of every type the op set reads: the plain
// float types and every quantized weight type of plugin.h (Q8_0, Q4_0,
// Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K..Q6_K, IQ4_XS), each the same float operations in
// the same order as plugins/common/quant*.cpp, so the kernels give the CPU
// plugin's values bit for bit (tests/cuda checks every element of random
// blocks). Block offsets are written out from plugin.h's structs.
#pragma once

#include "hd.cuh"

namespace loom::cuda {

// Elements per block and bytes per block of `type` (plain types: 1 and the
// element size); {0, 0} for an unknown type.
struct BlockShape {
  int elems;
  int bytes;
};

LOOM_HD BlockShape block_shape(int type) {
  switch (type) {
    case 0: return {1, 4};      // F32
    case 1: return {1, 2};      // F16
    case 2: return {32, 18};    // Q4_0
    case 3: return {32, 20};    // Q4_1
    case 6: return {32, 22};    // Q5_0
    case 7: return {32, 24};    // Q5_1
    case 8: return {32, 34};    // Q8_0
    case 10: return {256, 84};  // Q2_K
    case 11: return {256, 110}; // Q3_K
    case 12: return {256, 144}; // Q4_K
    case 13: return {256, 176}; // Q5_K
    case 14: return {256, 210}; // Q6_K
    case 20: return {32, 18};   // IQ4_NL
    case 23: return {256, 136}; // IQ4_XS
    case 26: return {1, 4};     // I32
    case 27: return {1, 8};     // I64
    case 30: return {1, 2};     // BF16
    default: return {0, 0};
  }
}

LOOM_HD bool is_float_type(int type) { return type == 0 || type == 1 || type == 30; }

// A 4-bit value of a 32-element block: low nibbles hold 0..15, high 16..31.
LOOM_HD int nibble32(const uint8_t* qs, int i) { return i < 16 ? (qs[i] & 0x0F) : (qs[i - 16] >> 4); }

LOOM_HD float dq_q8_0(const uint8_t* b, int i) {
  return f16_to_f32(load_u16(b)) * static_cast<float>(static_cast<int8_t>(b[2 + i]));
}
LOOM_HD float dq_q4_0(const uint8_t* b, int i) {
  return f16_to_f32(load_u16(b)) * static_cast<float>(nibble32(b + 2, i) - 8);
}
LOOM_HD float dq_q4_1(const uint8_t* b, int i) {
  return static_cast<float>(nibble32(b + 4, i)) * f16_to_f32(load_u16(b)) + f16_to_f32(load_u16(b + 2));
}
// Bit i of qh becomes bit 4 of the 5-bit value.
LOOM_HD int q5_high(const uint8_t* qh, int i) { return static_cast<int>((load_u32(qh) >> i) & 1u) << 4; }
LOOM_HD float dq_q5_0(const uint8_t* b, int i) {
  return static_cast<float>((nibble32(b + 6, i) | q5_high(b + 2, i)) - 16) * f16_to_f32(load_u16(b));
}
LOOM_HD float dq_q5_1(const uint8_t* b, int i) {
  return static_cast<float>(nibble32(b + 8, i) | q5_high(b + 4, i)) * f16_to_f32(load_u16(b)) +
         f16_to_f32(load_u16(b + 2));
}
LOOM_HD float iq4nl_level(int q) {
  // The 16 levels of IQ4_NL (plugin.h), as a switch so device code needs no table.
  switch (q) {
    case 0: return -127.0f; case 1: return -104.0f; case 2: return -83.0f; case 3: return -65.0f;
    case 4: return -49.0f;  case 5: return -35.0f;  case 6: return -22.0f; case 7: return -10.0f;
    case 8: return 1.0f;    case 9: return 13.0f;   case 10: return 25.0f; case 11: return 38.0f;
    case 12: return 53.0f;  case 13: return 69.0f;  case 14: return 89.0f; default: return 113.0f;
  }
}
LOOM_HD float dq_iq4_nl(const uint8_t* b, int i) { return f16_to_f32(load_u16(b)) * iq4nl_level(nibble32(b + 2, i)); }

// IQ4_XS (d, scales_h, scales_l[4], qs[128]): sub-block s's 6-bit scale
// (4 bits of scales_l, 2 of scales_h), then IQ4_NL's layout per sub-block;
// dl = d * (ls - 32) first, as plugins/common does.
LOOM_HD int iq4_xs_ls(const uint8_t* b, int s) {
  return ((b[4 + s / 2] >> (4 * (s % 2))) & 0x0F) | (((load_u16(b + 2) >> (2 * s)) & 3) << 4);
}
LOOM_HD float dq_iq4_xs(const uint8_t* b, int e) {
  const int s = e / 32;
  const float dl = f16_to_f32(load_u16(b)) * static_cast<float>(iq4_xs_ls(b, s) - 32);
  return dl * iq4nl_level(nibble32(b + 8 + 16 * s, e % 32));
}

// Q2_K / Q3_K: element e of 256 sits in half n (128 each), 32-lane group j
// (2-bit shift 2j), part (0: q[l], 1: q[l + 16]) and lane l; sub-block
// n*8 + j*2 + part has its own scale.
struct KPos {
  int n, j, part, l, sub;
};
LOOM_HD KPos k_pos(int e) {
  KPos p;
  p.n = e / 128;
  const int r = e % 128;
  p.j = r / 32;
  p.part = (r % 32) / 16;
  p.l = r % 16;
  p.sub = p.n * 8 + p.j * 2 + p.part;
  return p;
}

LOOM_HD float dq_q2_k(const uint8_t* b, int e) {
  const KPos p = k_pos(e);
  const float d = f16_to_f32(load_u16(b + 80)), min = f16_to_f32(load_u16(b + 82));
  const uint8_t sc = b[p.sub];
  const float dl = d * static_cast<float>(sc & 0x0F), ml = min * static_cast<float>(sc >> 4);
  const uint8_t q = b[16 + p.n * 32 + p.part * 16 + p.l];
  return dl * static_cast<float>((q >> (2 * p.j)) & 3) - ml;
}

// Q3_K's signed 6-bit scale i (0..15) from the 12 packed bytes.
LOOM_HD int q3_k_scale(const uint8_t* packed, int i) {
  const int low = i < 8 ? (packed[i] & 0x0F) : (packed[i - 8] >> 4);
  const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | (high << 4)) - 32;
}

LOOM_HD float dq_q3_k(const uint8_t* b, int e) {
  const KPos p = k_pos(e);
  const float dl = f16_to_f32(load_u16(b + 108)) * static_cast<float>(q3_k_scale(b + 96, p.sub));
  const uint8_t q = b[32 + p.n * 32 + p.part * 16 + p.l];
  const uint8_t hm = b[p.part * 16 + p.l];
  const int m = 1 << (p.n * 4 + p.j);
  return dl * static_cast<float>(static_cast<int8_t>((q >> (2 * p.j)) & 3) - ((hm & m) ? 0 : 4));
}

// Q4_K / Q5_K: the 6-bit scale and min of sub-block j (0..7).
LOOM_HD void k_scale_min(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

LOOM_HD float dq_q4_k(const uint8_t* b, int e) {
  const int g = e / 64, r = e % 64;
  int sc, m;
  k_scale_min(2 * g + (r >= 32 ? 1 : 0), b + 4, &sc, &m);
  const float d1 = f16_to_f32(load_u16(b)) * static_cast<float>(sc);
  const float m1 = f16_to_f32(load_u16(b + 2)) * static_cast<float>(m);
  const uint8_t q = b[16 + g * 32 + r % 32];
  return d1 * static_cast<float>(r < 32 ? (q & 0x0F) : (q >> 4)) - m1;
}

LOOM_HD float dq_q5_k(const uint8_t* b, int e) {
  const int g = e / 64, r = e % 64;
  int sc, m;
  k_scale_min(2 * g + (r >= 32 ? 1 : 0), b + 4, &sc, &m);
  const float d1 = f16_to_f32(load_u16(b)) * static_cast<float>(sc);
  const float m1 = f16_to_f32(load_u16(b + 2)) * static_cast<float>(m);
  const uint8_t ql = b[48 + g * 32 + r % 32];
  const uint8_t qh = b[16 + r % 32];
  const int bit = (r < 32 ? 1 : 2) << (2 * g);
  const int q = (r < 32 ? (ql & 0x0F) : (ql >> 4)) + ((qh & bit) ? 16 : 0);
  return d1 * static_cast<float>(q) - m1;
}

LOOM_HD float dq_q6_k(const uint8_t* b, int e) {
  const int n = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
  const uint8_t* ql = b + n * 64;
  const uint8_t* qh = b + 128 + n * 32;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192 + n * 8);
  const uint8_t lo = (quarter & 1) ? ql[l + 32] : ql[l];
  const int low = quarter < 2 ? (lo & 0x0F) : (lo >> 4);
  const int q = (low | (((qh[l] >> (2 * quarter)) & 3) << 4)) - 32;
  return f16_to_f32(load_u16(b + 208)) * static_cast<float>(sc[l / 16 + 2 * quarter]) * static_cast<float>(q);
}

// Element i (0 <= i < block elems) of the block at b of quantized `type`.
LOOM_HD float dq_block(int type, const uint8_t* b, int i) {
  switch (type) {
    case 8: return dq_q8_0(b, i);
    case 2: return dq_q4_0(b, i);
    case 3: return dq_q4_1(b, i);
    case 6: return dq_q5_0(b, i);
    case 7: return dq_q5_1(b, i);
    case 20: return dq_iq4_nl(b, i);
    case 10: return dq_q2_k(b, i);
    case 11: return dq_q3_k(b, i);
    case 12: return dq_q4_k(b, i);
    case 13: return dq_q5_k(b, i);
    case 14: return dq_q6_k(b, i);
    case 23: return dq_iq4_xs(b, i);
    default: return 0.0f;
  }
}

// A plain element at p (F32, F16, BF16, I32, I64 by value).
LOOM_HD float load_elem(int type, const uint8_t* p) {
  switch (type) {
    case 0: return *reinterpret_cast<const float*>(p);
    case 1: return f16_to_f32(*reinterpret_cast<const uint16_t*>(p));
    case 30: return bf16_to_f32(*reinterpret_cast<const uint16_t*>(p));
    case 26: return static_cast<float>(*reinterpret_cast<const int32_t*>(p));
    case 27: return static_cast<float>(*reinterpret_cast<const int64_t*>(p));
    default: return 0.0f;
  }
}

// Store v as a float type at p (F32, F16, BF16).
LOOM_HD void store_elem(int type, uint8_t* p, float v) {
  switch (type) {
    case 0: *reinterpret_cast<float*>(p) = v; break;
    case 1: *reinterpret_cast<uint16_t*>(p) = f32_to_f16(v); break;
    case 30: *reinterpret_cast<uint16_t*>(p) = f32_to_bf16(v); break;
    default: break;
  }
}

// v as a float type stores it and reads it back (F32: v itself).
LOOM_HD float round_to(int type, float v) {
  switch (type) {
    case 1: return f16_to_f32(f32_to_f16(v));
    case 30: return bf16_to_f32(f32_to_bf16(v));
    default: return v;
  }
}

// Element i of a row of `type` starting at row (contiguous blocks along the
// row for quantized types; nb0: the element stride of plain types).
LOOM_HD float row_elem(int type, const uint8_t* row, int64_t i, int64_t nb0) {
  const BlockShape s = block_shape(type);
  if (s.elems == 1) return load_elem(type, row + i * nb0);
  return dq_block(type, row + (i / s.elems) * s.bytes, static_cast<int>(i % s.elems));
}

// Dot product of one quantized or float block with x (block elems floats):
// the GEMV inner step. Q8_0 and Q4_0 sum the integers' products first and
// scale once; the others go element by element.
LOOM_HD float block_dot(int type, const uint8_t* b, const float* x) {
  // Blocks are 2-byte aligned (even block sizes from 256-aligned buffers):
  // the quants are read two at a time.
  const uint16_t* w = reinterpret_cast<const uint16_t*>(b);
  if (type == 8) {
    float s = 0.0f;
    for (int i = 0; i < 16; ++i) {
      const uint16_t q = w[1 + i];
      s += static_cast<float>(static_cast<int8_t>(q & 0xFF)) * x[2 * i];
      s += static_cast<float>(static_cast<int8_t>(q >> 8)) * x[2 * i + 1];
    }
    return s * f16_to_f32(w[0]);
  }
  if (type == 2) {
    float s = 0.0f;
    for (int i = 0; i < 8; ++i) {
      const uint16_t q = w[1 + i];
      s += static_cast<float>((q & 0x0F) - 8) * x[2 * i] + static_cast<float>(((q >> 4) & 0x0F) - 8) * x[2 * i + 16];
      s += static_cast<float>(((q >> 8) & 0x0F) - 8) * x[2 * i + 1] +
           static_cast<float>((q >> 12) - 8) * x[2 * i + 17];
    }
    return s * f16_to_f32(w[0]);
  }
  const BlockShape s = block_shape(type);
  if (s.elems == 1) return load_elem(type, b) * x[0];
  float acc = 0.0f;
  for (int i = 0; i < s.elems; ++i) acc += dq_block(type, b, i) * x[i];
  return acc;
}

}  // namespace loom::cuda
