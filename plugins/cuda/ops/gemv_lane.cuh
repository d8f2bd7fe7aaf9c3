// The decode GEMV's per-lane arithmetic for quantized weights, shared by
// the kernels (gemv_quant.cu) and the host test. A row of A is cut into
// 32-element units (a Q8_0 / Q4_0 / ... block, or one eighth of a K-quant
// super-block); four lanes share a unit, each taking 8 of its elements as
// two words of four int8 quants (LaneWords). Each word w has its own scale
// d and offset m so that element i of it is exactly d * q_i - m, the float
// value plugins/common's dequantization gives (the host test checks every
// element bit for bit). Against B rounded to 8 bits (act_quant.cuh: x' =
// db * qb) a word contributes db * (d * sum(q * qb) - m * sum(qb)), the two
// integer sums exact (dp4a).
//
// Per type: Lane<T>::kElems / kBytes (block), kMin (whether m can be
// nonzero) and get(block, unit, part) (unit: 32-element unit of the block,
// part: 0..3). Word k covers elements pos[k] .. pos[k] + 3 of the block.
#pragma once

#include "dequant.cuh"
#include "hd.cuh"

namespace loom::cuda {

struct LaneWords {
  uint32_t w[2];
  int pos[2];
  float d[2];
  float m[2];
};

// c + sum of the 4 signed byte products of a and b.
LOOM_HD int32_t dp4a_hd(uint32_t a, uint32_t b, int32_t c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(static_cast<int>(a), static_cast<int>(b), c);
#else
  for (int k = 0; k < 4; ++k) {
    c += static_cast<int32_t>(static_cast<int8_t>(a >> (8 * k))) * static_cast<int32_t>(static_cast<int8_t>(b >> (8 * k)));
  }
  return c;
#endif
}

// Per byte v_i - k_i for bytes v_i < 128, k_i <= 128: no borrow crosses a
// byte (every v_i | 0x80 >= k_i).
LOOM_HD uint32_t sub_bytes(uint32_t v, uint32_t k) { return ((v | 0x80808080u) - k) ^ 0x80808080u; }

// 4 bytes at a 2-byte aligned address (two 16-bit loads) and at a 4-byte
// aligned one.
LOOM_HD uint32_t ld_a2(const uint8_t* p) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
}
LOOM_HD uint32_t ld_a4(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }
LOOM_HD float ld_f16(const uint8_t* p) { return f16_to_f32(*reinterpret_cast<const uint16_t*>(p)); }

// Bits 0..3 of `bits` to bit 4 of bytes 0..3 (the Q5 types' fifth bit).
LOOM_HD uint32_t spread_bit4(uint32_t bits) {
  return ((bits & 1u) << 4) | ((bits & 2u) << 11) | ((bits & 4u) << 18) | ((bits & 8u) << 25);
}

template <int T>
struct Lane;

template <>
struct Lane<LOOM_TYPE_Q8_0> {
  static constexpr int kElems = 32, kBytes = 34;
  static constexpr bool kMin = false;
  static LOOM_HD LaneWords get(const uint8_t* b, int, int p) {
    const float d = ld_f16(b);
    return {{ld_a2(b + 2 + 8 * p), ld_a2(b + 6 + 8 * p)}, {8 * p, 8 * p + 4}, {d, d}, {0.0f, 0.0f}};
  }
};

// Low nibbles hold elements 0..15, high nibbles 16..31.
LOOM_HD LaneWords nibble_words(uint32_t v, int p, float d, float m, uint32_t high0, uint32_t high1, uint32_t offset) {
  const uint32_t lo = (v & 0x0F0F0F0Fu) | high0, hi = ((v >> 4) & 0x0F0F0F0Fu) | high1;
  return {{sub_bytes(lo, offset), sub_bytes(hi, offset)}, {4 * p, 16 + 4 * p}, {d, d}, {m, m}};
}

template <>
struct Lane<LOOM_TYPE_Q4_0> {
  static constexpr int kElems = 32, kBytes = 18;
  static constexpr bool kMin = false;
  static LOOM_HD LaneWords get(const uint8_t* b, int, int p) {
    return nibble_words(ld_a2(b + 2 + 4 * p), p, ld_f16(b), 0.0f, 0, 0, 0x08080808u);
  }
};

template <>
struct Lane<LOOM_TYPE_Q4_1> {
  static constexpr int kElems = 32, kBytes = 20;
  static constexpr bool kMin = true;
  // x = d * q + m: the offset term is -m.
  static LOOM_HD LaneWords get(const uint8_t* b, int, int p) {
    return nibble_words(ld_a4(b + 4 + 4 * p), p, ld_f16(b), -ld_f16(b + 2), 0, 0, 0);
  }
};

template <>
struct Lane<LOOM_TYPE_Q5_0> {
  static constexpr int kElems = 32, kBytes = 22;
  static constexpr bool kMin = false;
  static LOOM_HD LaneWords get(const uint8_t* b, int, int p) {
    const uint32_t qh = ld_a2(b + 2);
    return nibble_words(ld_a2(b + 6 + 4 * p), p, ld_f16(b), 0.0f, spread_bit4(qh >> (4 * p)),
                        spread_bit4(qh >> (16 + 4 * p)), 0x10101010u);
  }
};

template <>
struct Lane<LOOM_TYPE_Q5_1> {
  static constexpr int kElems = 32, kBytes = 24;
  static constexpr bool kMin = true;
  static LOOM_HD LaneWords get(const uint8_t* b, int, int p) {
    const uint32_t qh = ld_a4(b + 4);
    return nibble_words(ld_a4(b + 8 + 4 * p), p, ld_f16(b), -ld_f16(b + 2), spread_bit4(qh >> (4 * p)),
                        spread_bit4(qh >> (16 + 4 * p)), 0);
  }
};

template <>
struct Lane<LOOM_TYPE_IQ4_NL> {
  static constexpr int kElems = 32, kBytes = 18;
  static constexpr bool kMin = false;
  static LOOM_HD uint32_t levels(uint32_t nibbles) {
    uint32_t w = 0;
    for (int k = 0; k < 4; ++k) {
      const int q = static_cast<int>((nibbles >> (8 * k)) & 0x0F);
      w |= static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(iq4nl_level(q)))) << (8 * k);
    }
    return w;
  }
  static LOOM_HD LaneWords get(const uint8_t* b, int, int p) {
    const uint32_t v = ld_a2(b + 2 + 4 * p);
    const float d = ld_f16(b);
    return {{levels(v), levels(v >> 4)}, {4 * p, 16 + 4 * p}, {d, d}, {0.0f, 0.0f}};
  }
};

// IQ4_XS: unit u is sub-block u (its 16 bytes at qs + 16u laid out as an
// IQ4_NL block), scale d * (ls - 32); part p takes the bytes 4p .. 4p + 3:
// elements 4p.. (low nibbles) and 16 + 4p.. (high).
template <>
struct Lane<LOOM_TYPE_IQ4_XS> {
  static constexpr int kElems = 256, kBytes = 136;
  static constexpr bool kMin = false;
  static LOOM_HD LaneWords get(const uint8_t* b, int u, int p) {
    const uint32_t v = ld_a4(b + 8 + 16 * u + 4 * p);
    const float d = ld_f16(b) * static_cast<float>(iq4_xs_ls(b, u) - 32);
    using NL = Lane<LOOM_TYPE_IQ4_NL>;
    return {{NL::levels(v), NL::levels(v >> 4)}, {32 * u + 4 * p, 32 * u + 16 + 4 * p}, {d, d}, {0.0f, 0.0f}};
  }
};

// K-quants: unit u is elements 32u .. 32u + 31, part p its 8p .. 8p + 7;
// both words lie in one 16-element scale group.
LOOM_HD LaneWords k_words(uint32_t w0, uint32_t w1, int u, int p, float d, float m) {
  return {{w0, w1}, {32 * u + 8 * p, 32 * u + 8 * p + 4}, {d, d}, {m, m}};
}

template <>
struct Lane<LOOM_TYPE_Q2_K> {
  static constexpr int kElems = 256, kBytes = 84;
  static constexpr bool kMin = true;
  static LOOM_HD LaneWords get(const uint8_t* b, int u, int p) {
    const int n = u / 4, j = u % 4;
    const uint8_t* q = b + 16 + 32 * n + 8 * p;
    const uint8_t sc = b[n * 8 + j * 2 + p / 2];
    const float d = ld_f16(b + 80) * static_cast<float>(sc & 0x0F);
    const float m = ld_f16(b + 82) * static_cast<float>(sc >> 4);
    return k_words((ld_a4(q) >> (2 * j)) & 0x03030303u, (ld_a4(q + 4) >> (2 * j)) & 0x03030303u, u, p, d, m);
  }
};

template <>
struct Lane<LOOM_TYPE_Q3_K> {
  static constexpr int kElems = 256, kBytes = 110;
  static constexpr bool kMin = false;
  // q = low 2 bits - (high bit set ? 0 : 4) = (low + 4 * high) - 4.
  static LOOM_HD uint32_t word(uint32_t q, uint32_t hm, int j, int bit) {
    return sub_bytes(((q >> (2 * j)) & 0x03030303u) | (((hm >> bit) & 0x01010101u) << 2), 0x04040404u);
  }
  static LOOM_HD LaneWords get(const uint8_t* b, int u, int p) {
    const int n = u / 4, j = u % 4, bit = 4 * n + j;
    const uint8_t* q = b + 32 + 32 * n + 8 * p;
    const uint8_t* hm = b + 8 * p;
    const float d = ld_f16(b + 108) * static_cast<float>(q3_k_scale(b + 96, n * 8 + j * 2 + p / 2));
    return k_words(word(ld_a2(q), ld_a2(hm), j, bit), word(ld_a2(q + 4), ld_a2(hm + 4), j, bit), u, p, d, 0.0f);
  }
};

template <>
struct Lane<LOOM_TYPE_Q4_K> {
  static constexpr int kElems = 256, kBytes = 144;
  static constexpr bool kMin = true;
  static LOOM_HD LaneWords get(const uint8_t* b, int u, int p) {
    const int g = u / 2, shift = 4 * (u % 2);
    int sc, mn;
    k_scale_min(u, b + 4, &sc, &mn);
    const uint8_t* q = b + 16 + 32 * g + 8 * p;
    return k_words((ld_a4(q) >> shift) & 0x0F0F0F0Fu, (ld_a4(q + 4) >> shift) & 0x0F0F0F0Fu, u, p,
                   ld_f16(b) * static_cast<float>(sc), ld_f16(b + 2) * static_cast<float>(mn));
  }
};

template <>
struct Lane<LOOM_TYPE_Q5_K> {
  static constexpr int kElems = 256, kBytes = 176;
  static constexpr bool kMin = true;
  static LOOM_HD uint32_t word(uint32_t ql, uint32_t qh, int shift, int u) {
    return ((ql >> shift) & 0x0F0F0F0Fu) | (((qh >> u) & 0x01010101u) << 4);
  }
  static LOOM_HD LaneWords get(const uint8_t* b, int u, int p) {
    const int g = u / 2, shift = 4 * (u % 2);
    int sc, mn;
    k_scale_min(u, b + 4, &sc, &mn);
    const uint8_t* ql = b + 48 + 32 * g + 8 * p;
    const uint8_t* qh = b + 16 + 8 * p;
    return k_words(word(ld_a4(ql), ld_a4(qh), shift, u), word(ld_a4(ql + 4), ld_a4(qh + 4), shift, u), u, p,
                   ld_f16(b) * static_cast<float>(sc), ld_f16(b + 2) * static_cast<float>(mn));
  }
};

template <>
struct Lane<LOOM_TYPE_Q6_K> {
  static constexpr int kElems = 256, kBytes = 210;
  static constexpr bool kMin = false;
  static LOOM_HD uint32_t word(uint32_t ql, uint32_t qh, int quarter) {
    const uint32_t lo = (ql >> (quarter < 2 ? 0 : 4)) & 0x0F0F0F0Fu;
    return sub_bytes(lo | (((qh >> (2 * quarter)) & 0x03030303u) << 4), 0x20202020u);
  }
  static LOOM_HD LaneWords get(const uint8_t* b, int u, int p) {
    const int n = u / 4, quarter = u % 4;
    const uint8_t* ql = b + 64 * n + 32 * (quarter & 1) + 8 * p;
    const uint8_t* qh = b + 128 + 32 * n + 8 * p;
    const float d = ld_f16(b + 208) * static_cast<float>(static_cast<int8_t>(b[192 + n * 8 + p / 2 + 2 * quarter]));
    return k_words(word(ld_a2(ql), ld_a2(qh), quarter), word(ld_a2(ql + 4), ld_a2(qh + 4), quarter), u, p, d, 0.0f);
  }
};

// One lane's step against B's 8-bit quants xq (the A block's activation
// block, 4-byte aligned) with scale db: db * sum_k (d_k * sum(q * qb) -
// m_k * sum(qb)).
template <bool kMin>
LOOM_HD float lane_dot(const LaneWords& w, const int8_t* xq, float db) {
  float s = 0.0f;
  for (int k = 0; k < 2; ++k) {
    const uint32_t x = *reinterpret_cast<const uint32_t*>(xq + w.pos[k]);
    s += w.d[k] * static_cast<float>(dp4a_hd(w.w[k], x, 0));
    if (kMin) s -= w.m[k] * static_cast<float>(dp4a_hd(0x01010101u, x, 0));
  }
  return s * db;
}

// Lanes per unit, units a warp takes per step.
constexpr int kLanesPerUnit = 4;
constexpr int kUnitsPerStep = 32 / kLanesPerUnit;

// Lane `lane`'s sum over one row of A (k elements) against one column of
// B's 8-bit blocks (xq: k quants, xd: k / kElems scales), in the kernel's
// order: units lane / 4, lane / 4 + 8, ... (part lane % 4); the 32 lane sums
// then combine in the halving tree (launch.cuh's tree_reduce).
template <int T>
LOOM_HD float quant_lane_sum(const uint8_t* arow, int64_t k, const int8_t* xq, const float* xd, int lane) {
  using L = Lane<T>;
  constexpr int kUnits = L::kElems / 32;
  const int64_t units = k / 32;
  float acc = 0.0f;
  for (int64_t U = lane / kLanesPerUnit; U < units; U += kUnitsPerStep) {
    const int64_t b = U / kUnits;
    const LaneWords w = L::get(arow + b * L::kBytes, static_cast<int>(U % kUnits), lane % kLanesPerUnit);
    acc += lane_dot<L::kMin>(w, xq + b * L::kElems, xd[b]);
  }
  return acc;
}

// Float A (F32 / F16 / BF16): lane `lane` takes 8 consecutive elements per
// step (e = 8 * (32 * step + lane)), f32 products summed in element order.
// B is never rounded here: the suite's f32 tolerance for float A leaves no
// room for half-precision products.
template <int T>
LOOM_HD float float8_dot(const uint8_t* a, const float* x) {
  float s = 0.0f;
  for (int i = 0; i < 8; ++i) {
    const float v = T == LOOM_TYPE_F32 ? reinterpret_cast<const float*>(a)[i]
                    : T == LOOM_TYPE_F16 ? f16_to_f32(reinterpret_cast<const uint16_t*>(a)[i])
                                         : bf16_to_f32(reinterpret_cast<const uint16_t*>(a)[i]);
    s += v * x[i];
  }
  return s;
}

template <int T>
LOOM_HD float float_lane_sum(const uint8_t* arow, int64_t k, const float* x, int lane) {
  constexpr int kSize = T == LOOM_TYPE_F32 ? 4 : 2;
  float acc = 0.0f;
  for (int64_t e = 8 * lane; e < k; e += 8 * 32) acc += float8_dot<T>(arow + e * kSize, x + e);
  return acc;
}

}  // namespace loom::cuda
