// MUL_MAT with A repacked in groups of 8 rows (weight_layout.h) against B
// quantized to ActBlocks: the 8 lanes of one accumulator are the 8 rows of
// a group, so each 32-byte load of A serves 8 rows x 4 quants and each
// activation group of 4 bytes is broadcast once: per block and column, 8
// integer dot instructions (AVX512-VNNI / AVX-VNNI dpbusd; AVX2 maddubs +
// madd) and 3 f32 operations for 8 rows x 32 products.
//
// A's quants are read as unsigned bytes u = q + offset (Q4_0's nibbles as
// stored: offset 8; Q8_0 xor 0x80 and IQ4_NL's table values + 128: offset
// 128), so
//   sum_k a_k b_k = d_a d_b (sum_k u_k qb_k - offset sum_k qb_k)
// with sum_k qb_k from the ActBlock, the difference taken in integers
// (Q4_1 / Q5_1: offset 0, and the per-row m adds m d_b sum_k qb_k in f32;
// Q5_0: the fifth bits ORed in as bit 4, offset 16).
// Without VNNI, Q8_0 and IQ4_NL use the sign trick instead (|q| times
// sign(q) * qb: maddubs would saturate on u = q + 128). Integer sums are
// exact; only the f32 accumulation over blocks rounds.
#include "ops/matmul.h"
#include "weight_layout.h"

#if LOOM_CPU_INT8_DOT

#include "common/cpu_features.h"
#include "common/env.h"
#include "common/quant.h"
#include "ops/x8_groups.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace loom::cpu {
namespace {

constexpr int kBlock = 32;
#ifdef __AVX512VL__
constexpr int kCols = 4;  // columns per pass: 32 vector registers
#else
constexpr int kCols = 2;
#endif

#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__)
constexpr bool kVnni = true;
#else
constexpr bool kVnni = false;
#endif

inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline __m256i bcast4(const int8_t* p) { return _mm256_set1_epi32(load_i32(p)); }

// The 8 dots of a.u[j] (8 rows x 4 bytes) with activation group S::yoff(j):
// VNNI, u unsigned (the type's offset added); else u signed, through the
// sign trick (|u| times sign(u) * qb). Two chains of 4.
template <typename S>
inline __m256i signed_or_offset_dot(const S& a, const ActBlock& y) {
  __m256i acc[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  for (int j = 0; j < 8; ++j) {
    const __m256i b = bcast4(y.qs + S::yoff(j));
    if (kVnni) {
      acc[j & 1] = dot_u8s8(acc[j & 1], a.u[j], b);
    } else {
      acc[j & 1] = dot_u8s8(acc[j & 1], _mm256_abs_epi8(a.u[j]), _mm256_sign_epi8(b, a.u[j]));
    }
  }
  return _mm256_add_epi32(acc[0], acc[1]);
}

// One superblock of A unpacked: kN vectors of 8 rows x 4 quant bytes and the
// activation byte offset each pairs with.
template <int32_t kType>
struct Super;

template <>
struct Super<LOOM_TYPE_Q4_0> {
  static constexpr int kN = 8;
  static constexpr int32_t kOffset = 8;
  static constexpr size_t kBytes = 8 * sizeof(loom_block_q4_0_t);
  static constexpr bool kMin = false;  // a per-row additive term m (Q4_1)
  // u[0..3]: low nibbles (quants 4t .. 4t+3); u[4..7]: high nibbles
  // (quants 16+4t ..). With VNNI the high nibbles stay in place, 16 x the
  // quant: their dots are 16 x the true ones, an exact multiple shifted back
  // once per block instead of once per vector (without VNNI, maddubs would
  // saturate its int16 pair sums on 240 x 127 x 2).
  static constexpr int kHighShift = kVnni ? 4 : 0;
  __m256i u[kN];
  static constexpr int yoff(int j) { return j < 4 ? 4 * j : 16 + 4 * (j - 4); }
  void load(const uint8_t* sb) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int t = 0; t < 4; ++t) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 16 + 32 * t));
      u[t] = _mm256_and_si256(v, low4);
      u[t + 4] = kVnni ? _mm256_andnot_si256(low4, v) : _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
    }
  }
  __m256i dot(const ActBlock& y) const {
    if (!kVnni) {
      // AVX2: the 8 maddubs results summed in int16 and widened once (one
      // madd per block instead of 8). A lane sums 8 pairs of nibble x qb
      // products: at most 8 x 2 x 15 x 127 = 30,480 < 32,767 (qb in
      // [-127, 127], ActBlock), so nothing saturates.
      __m256i s0 = _mm256_maddubs_epi16(u[0], bcast4(y.qs + yoff(0)));
      __m256i s1 = _mm256_maddubs_epi16(u[1], bcast4(y.qs + yoff(1)));
      for (int j = 2; j < kN; j += 2) {
        s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(u[j], bcast4(y.qs + yoff(j))));
        s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(u[j + 1], bcast4(y.qs + yoff(j + 1))));
      }
      return _mm256_madd_epi16(_mm256_add_epi16(s0, s1), _mm256_set1_epi16(1));
    }
    // Two chains of 4 (low, high): the integer dots' latency is not one
    // chain of 8. A high-nibble lane sums at most 4 x 4 products of
    // 240 x 127: far inside int32.
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) lo = dot_u8s8(lo, u[j], bcast4(y.qs + yoff(j)));
    for (int j = 4; j < kN; ++j) hi = dot_u8s8(hi, u[j], bcast4(y.qs + yoff(j)));
    return _mm256_add_epi32(lo, _mm256_srai_epi32(hi, kHighShift));
  }
};

template <>
struct Super<LOOM_TYPE_Q8_0> {
  static constexpr int kN = 8;
  static constexpr int32_t kOffset = kVnni ? 128 : 0;
  static constexpr size_t kBytes = 8 * sizeof(loom_block_q8_0_t);
  static constexpr bool kMin = false;
  __m256i u[kN];  // VNNI: q ^ 0x80; else: q itself (signed)
  static constexpr int yoff(int j) { return 4 * j; }
  void load(const uint8_t* sb) {
    for (int t = 0; t < kN; ++t) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 16 + 32 * t));
      u[t] = kVnni ? _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80))) : v;
    }
  }
  __m256i dot(const ActBlock& y) const { return signed_or_offset_dot(*this, y); }
};

// IQ4_NL: Q4_0's layout, each nibble an index into the 16 signed values
// (pshufb). VNNI: the values + 128 as unsigned bytes (offset 128, as
// Q8_0); else the signed values with the sign trick (maddubs would
// saturate on 241 x 127 x 2).
template <>
struct Super<LOOM_TYPE_IQ4_NL> {
  static constexpr int kN = 8;
  static constexpr int32_t kOffset = kVnni ? 128 : 0;
  static constexpr size_t kBytes = 8 * sizeof(loom_block_iq4_nl_t);
  static constexpr bool kMin = false;
  __m256i u[kN];
  static constexpr int yoff(int j) { return Super<LOOM_TYPE_Q4_0>::yoff(j); }
  void load(const uint8_t* sb) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(common::kIq4nlValues)));
    if (kVnni) table = _mm256_xor_si256(table, _mm256_set1_epi8(static_cast<char>(0x80)));
    for (int t = 0; t < 4; ++t) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 16 + 32 * t));
      u[t] = _mm256_shuffle_epi8(table, _mm256_and_si256(v, low4));
      u[t + 4] = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), low4));
    }
  }
  __m256i dot(const ActBlock& y) const { return signed_or_offset_dot(*this, y); }
};

// Q4_1: x = d q + m, q the nibble (no offset). Superblock: d of 8 rows at
// 0, m at 16, quants from 32 (Q4_0's units 16 bytes further on); per block
// and column the result also gains m d_b sum_k qb_k.
template <>
struct Super<LOOM_TYPE_Q4_1> : Super<LOOM_TYPE_Q4_0> {
  static constexpr int32_t kOffset = 0;
  static constexpr size_t kBytes = 8 * sizeof(loom_block_q4_1_t);
  static constexpr bool kMin = true;
  void load(const uint8_t* sb) { Super<LOOM_TYPE_Q4_0>::load(sb + 16); }
};

// Bits 4s .. 4s+3 of each 32-bit lane of qh as 0x10 (set) or 0 in the
// lane's bytes 0 .. 3: the fifth bits of one quant unit (s < 4: the low
// nibbles' quants 4s .., s >= 4: the high nibbles' 16 + 4(s - 4) ..).
inline __m256i fifth_bits(__m256i qh, int s) {
  const __m256i lanes = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0, 0, 0, 0, 4, 4, 4, 4,
                                         8, 8, 8, 8, 12, 12, 12, 12);
  const __m256i rep = _mm256_shuffle_epi8(qh, _mm256_add_epi8(lanes, _mm256_set1_epi8(static_cast<char>(s / 2))));
  const __m256i bit = s % 2 == 0 ? _mm256_set1_epi32(0x08040201) : _mm256_set1_epi32(static_cast<int>(0x80402010u));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(rep, bit), bit), _mm256_set1_epi8(0x10));
}

// Q5_0: x = d (q - 16) with q = nibble | fifth bit << 4 (0 .. 31, offset
// 16: maddubs' pair sums stay below 31 x 127 x 2). Superblock: d at 0, qh
// at 16, Q4_0's quant units at 48. Q5_1: x = d q + m; d at 0, m at 16, qh
// at 32, quants at 64.
template <int32_t kType>
struct Super5 {
  static constexpr bool kQ51 = kType == LOOM_TYPE_Q5_1;
  static constexpr int kN = 8;
  static constexpr int32_t kOffset = kQ51 ? 0 : 16;
  static constexpr size_t kBytes = 8 * (kQ51 ? sizeof(loom_block_q5_1_t) : sizeof(loom_block_q5_0_t));
  static constexpr bool kMin = kQ51;
  static constexpr size_t kQh = kQ51 ? 32 : 16;
  __m256i u[kN];
  static constexpr int yoff(int j) { return Super<LOOM_TYPE_Q4_0>::yoff(j); }
  void load(const uint8_t* sb) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + kQh));
    for (int t = 0; t < 4; ++t) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + kQh + 32 + 32 * t));
      u[t] = _mm256_or_si256(_mm256_and_si256(v, low4), fifth_bits(qh, t));
      u[t + 4] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), low4), fifth_bits(qh, t + 4));
    }
  }
  __m256i dot(const ActBlock& y) const {
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) lo = dot_u8s8(lo, u[j], bcast4(y.qs + yoff(j)));
    for (int j = 4; j < kN; ++j) hi = dot_u8s8(hi, u[j], bcast4(y.qs + yoff(j)));
    return _mm256_add_epi32(lo, hi);
  }
};
template <>
struct Super<LOOM_TYPE_Q5_0> : Super5<LOOM_TYPE_Q5_0> {};
template <>
struct Super<LOOM_TYPE_Q5_1> : Super5<LOOM_TYPE_Q5_1> {};

// Columns [n0, n0 + NC) (flat over B's rows) for rows m0 .. m0+7.
template <int32_t kType, int NC>
void group_cols(const loom_tensor_t* dst, const uint8_t* group, int64_t nblk, const ActBlock* act,
                int64_t n0, int64_t m0) {
  using S = Super<kType>;
  __m256 acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
  S a;
  for (int64_t i = 0; i < nblk; ++i) {
    const uint8_t* sb = group + static_cast<size_t>(i) * S::kBytes;
    if (n0 == 0) prefetch_ahead<S::kBytes>(sb);  // the first pass over the group streams it in
    a.load(sb);
    const __m256 da = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb)));
    const __m256 ma = S::kMin ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 16))) : da;
    for (int c = 0; c < NC; ++c) {
      const ActBlock& y = act[(n0 + c) * nblk + i];
      __m256i isum = a.dot(y);
      if (S::kOffset != 0) isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(S::kOffset * y.sum));
      const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(y.d));
      acc[c] = _mm256_fmadd_ps(da, v, acc[c]);
      if (S::kMin) acc[c] = _mm256_fmadd_ps(ma, _mm256_set1_ps(y.d * static_cast<float>(y.sum)), acc[c]);
    }
  }
  for (int c = 0; c < NC; ++c) store_group(dst, n0 + c, m0, acc[c]);
}

// ---- Two groups per 512-bit vector (AVX-512 VNNI with full-width units) --
//
// group_cols holds 8 rows x 4 quants in a ymm, so every activation broadcast
// and integer dot serves 8 rows. Here groups g and g + 1 share a zmm (their
// superblocks i side by side: rows m0 .. m0+15), so each broadcast and dot
// serves 16 rows: half the instructions per product. Where 512-bit
// operations run as two halves (AMD before Zen 5, CpuFeatures::split_avx512)
// the ymm kernel stays.
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512DQ__)
constexpr bool kPairs = true;
constexpr int kPairCols = 8;  // columns per pass (8 quant vectors + 8 sums + temporaries)
// Fewer columns stay on the 8-row kernel: from memory (a 464 MiB Q4_0
// model, Zen 5) the pairs ran 2 columns 10% slower, 4 as fast, 16 1.65x
// faster; one column 0.8x (decode), though 1.55x faster from the cache.
constexpr int64_t kPairMinCols = 4;

// (Masked forms throughout: see join in x8_groups.h.)
inline __m512 scales16(const uint8_t* p0, const uint8_t* p1) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1));
  return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_set_m128i(b, a));
}

// Superblock i of two groups unpacked: kN vectors of 16 rows x 4 quant
// bytes (unsigned, the type's offset added, as Super<kType> with VNNI).
// The types without their own loader combine two Super loads.
template <int32_t kType>
struct Pair {
  using S = Super<kType>;
  static constexpr int kShift = 0;  // dots of u[4..7] are 2^kShift x the true ones
  __m512i u[S::kN];
  void load(const uint8_t* sb0, const uint8_t* sb1) {
    S a0, a1;
    a0.load(sb0);
    a1.load(sb1);
    for (int j = 0; j < S::kN; ++j) u[j] = join(a0.u[j], a1.u[j]);
  }
};

inline __m512i load_pair(const uint8_t* p0, const uint8_t* p1) {
  return join(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0)),
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1)));
}

template <>
struct Pair<LOOM_TYPE_Q4_0> {
  static constexpr int kShift = 4;  // high nibbles in place (Super<Q4_0> with VNNI)
  __m512i u[8];
  void load(const uint8_t* sb0, const uint8_t* sb1) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    for (int t = 0; t < 4; ++t) {
      const __m512i v = load_pair(sb0 + 16 + 32 * t, sb1 + 16 + 32 * t);
      u[t] = _mm512_and_si512(v, low4);
      u[t + 4] = _mm512_and_si512(v, _mm512_set1_epi8(static_cast<char>(0xF0)));
    }
  }
};

template <>
struct Pair<LOOM_TYPE_Q4_1> : Pair<LOOM_TYPE_Q4_0> {
  void load(const uint8_t* sb0, const uint8_t* sb1) { Pair<LOOM_TYPE_Q4_0>::load(sb0 + 16, sb1 + 16); }
};

template <>
struct Pair<LOOM_TYPE_Q8_0> {
  static constexpr int kShift = 0;
  __m512i u[8];
  void load(const uint8_t* sb0, const uint8_t* sb1) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int t = 0; t < 8; ++t) u[t] = _mm512_xor_si512(load_pair(sb0 + 16 + 32 * t, sb1 + 16 + 32 * t), flip);
  }
};

// Columns [n0, n0 + NC) for rows m0 .. m0+15: g0 and g1 the two groups.
template <int32_t kType, int NC>
void pair_cols(const loom_tensor_t* dst, const uint8_t* g0, const uint8_t* g1, int64_t nblk, const ActBlock* act,
               int64_t n0, int64_t m0) {
  using S = Super<kType>;
  using P = Pair<kType>;
  __m512 acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
  P a;
  for (int64_t i = 0; i < nblk; ++i) {
    const uint8_t* sb0 = g0 + static_cast<size_t>(i) * S::kBytes;
    const uint8_t* sb1 = g1 + static_cast<size_t>(i) * S::kBytes;
    if (n0 == 0) prefetch_pair<S::kBytes>(g0, g1, i, nblk);  // the first pass streams the pair in
    a.load(sb0, sb1);
    const __m512 da = scales16(sb0, sb1);
    const __m512 ma = S::kMin ? scales16(sb0 + 16, sb1 + 16) : da;
    for (int c = 0; c < NC; ++c) {
      const ActBlock& y = act[(n0 + c) * nblk + i];
      __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
      for (int j = 0; j < 4; ++j) lo = _mm512_dpbusd_epi32(lo, a.u[j], _mm512_set1_epi32(load_i32(y.qs + S::yoff(j))));
      for (int j = 4; j < 8; ++j) hi = _mm512_dpbusd_epi32(hi, a.u[j], _mm512_set1_epi32(load_i32(y.qs + S::yoff(j))));
      __m512i isum = _mm512_add_epi32(lo, reinterpret_cast<__m512i>(reinterpret_cast<__v16si>(hi) >> P::kShift));
      if (S::kOffset != 0) isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(S::kOffset * y.sum));
      const __m512 v = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, isum), _mm512_set1_ps(y.d));
      acc[c] = _mm512_fmadd_ps(da, v, acc[c]);
      if (S::kMin) acc[c] = _mm512_fmadd_ps(ma, _mm512_set1_ps(y.d * static_cast<float>(y.sum)), acc[c]);
    }
  }
  for (int c = 0; c < NC; ++c) {
    store_group(dst, n0 + c, m0, _mm512_maskz_extractf32x8_ps(0xFF, acc[c], 0));
    store_group(dst, n0 + c, m0 + kWeightGroupRows, _mm512_maskz_extractf32x8_ps(0xFF, acc[c], 1));
  }
}

// Every column for the pair of groups from g0 (rows m0 .. m0+15).
template <int32_t kType>
void pair_all_cols(const loom_tensor_t* dst, const uint8_t* g0, size_t group_bytes, int64_t nblk,
                   const ActBlock* act, int64_t n_len, int64_t m0) {
  const uint8_t* g1 = g0 + group_bytes;
  int64_t n = 0;
  for (; n + kPairCols <= n_len; n += kPairCols) pair_cols<kType, kPairCols>(dst, g0, g1, nblk, act, n, m0);
  if (n + 4 <= n_len) {
    pair_cols<kType, 4>(dst, g0, g1, nblk, act, n, m0);
    n += 4;
  }
  static_assert(kPairCols <= 8, "the rest after whole passes is at most 7 columns");
  switch (n_len - n) {
    case 3: pair_cols<kType, 3>(dst, g0, g1, nblk, act, n, m0); break;
    case 2: pair_cols<kType, 2>(dst, g0, g1, nblk, act, n, m0); break;
    case 1: pair_cols<kType, 1>(dst, g0, g1, nblk, act, n, m0); break;
    default: break;
  }
}
#else
constexpr bool kPairs = false;
constexpr int64_t kPairMinCols = 4;
template <int32_t kType>
void pair_all_cols(const loom_tensor_t*, const uint8_t*, size_t, int64_t, const ActBlock*, int64_t, int64_t) {}
#endif

// ---- Many columns (batched decode steps, prefill) without VNNI ----------
//
// group_cols unpacks a superblock of A again for every pass of kCols
// columns and keeps its 8 quant vectors in registers, so on AVX2 (16
// registers) it passes 2 columns at a time. Here a chunk of groups is
// unpacked once into an L1/L2-resident scratch (the u vectors of
// Super<kType>::load, 256 bytes a superblock), and every tile of kBatchCols
// columns reads them as memory operands of maddubs: per 8 rows x 32 quants
// and column, 8 broadcasts, 8 maddubs and 7 adds, the unpacking shared by
// every column. Columns go in blocks whose activations stay in L1.
// For the types whose unpacked quants are unsigned (Q4_0 and Q4_1: 0..15;
// Q5_0 and Q5_1: 0..31), maddubs of those with an activation byte in
// [-127, 127] needs no sign trick. A run of kRun maddubs results is summed
// in int16 before widening: kRun x 2 x 15 x 127 <= 32,767 for 8 (4-bit),
// kRun x 2 x 31 x 127 for 4 (5-bit). IQ4_NL: below.
// On a 2-core Zen 3 (loom_ops_bench, old and new alternated, the best of 3
// each): Q4_0 1.12-1.43x at 8-32 columns, 1.23-1.45x at 64-1024 (s768-q4_0
// pp256 1.16-1.34x); IQ4_NL 1.09-1.26x at 64-1024 (two runs).
#ifndef __AVX512VL__
constexpr bool batch_type(int32_t type) {
  return !kVnni && (type == LOOM_TYPE_Q4_0 || type == LOOM_TYPE_Q4_1 || type == LOOM_TYPE_Q5_0 ||
                    type == LOOM_TYPE_Q5_1 || type == LOOM_TYPE_IQ4_NL);
}
#else
constexpr bool batch_type(int32_t) { return false; }  // 32 registers: group_cols holds 4 columns
#endif
constexpr int64_t kBatchMinCols = 3;  // 1-2 columns: group_cols streams A at the bound
constexpr int kBatchCols = 4;
constexpr size_t kBatchScratchBytes = 64 * 1024;        // unpacked groups of one chunk
constexpr size_t kBatchActBytes = 24 * 1024;            // one column block's activations
// IQ4_NL: signed quants (its table's values; maddubs would saturate on
// them + 128), so each superblock is unpacked as |v| and v (the sign trick:
// |v| times B's bytes with v's sign) and each maddubs widened at once. (Q8_0
// the same way ran 0.65-1.14x its 2-column kernel, which needs no table
// lookup: not taken.)
constexpr bool signed_quants(int32_t type) { return type == LOOM_TYPE_IQ4_NL; }
// Unpacked vectors per superblock.
constexpr int unpacked_vectors(int32_t type) { return signed_quants(type) ? 16 : 8; }

// Group `group`'s nblk superblocks unpacked into out (unpacked_vectors
// each).
template <int32_t kType>
void unpack_group(const uint8_t* group, int64_t nblk, __m256i* out) {
  using S = Super<kType>;
  S a;
  for (int64_t i = 0; i < nblk; ++i) {
    const uint8_t* sb = group + static_cast<size_t>(i) * S::kBytes;
    prefetch_ahead<S::kBytes>(sb);
    a.load(sb);
    constexpr int kV = unpacked_vectors(kType);
    for (int j = 0; j < 8; ++j) {
      if (signed_quants(kType)) {
        _mm256_store_si256(out + kV * i + j, _mm256_abs_epi8(a.u[j]));
        _mm256_store_si256(out + kV * i + 8 + j, a.u[j]);
      } else {
        _mm256_store_si256(out + kV * i + j, a.u[j]);
      }
    }
  }
}

// Bytes to ask for from memory while a tile computes: `lines` cache lines
// from p, `per_block` of them beside each superblock.
struct Prefetch {
  const char* p = nullptr;
  int64_t lines = 0;
  int64_t per_block = 0;
};

// Columns [n0, n0 + NC) for the 8 rows of a group from m0: `group` its
// packed superblocks (scales), `u` its unpacked quants. Not inlined: inside
// the dispatch's large function GCC spilled the column sums.
template <int32_t kType, int NC>
__attribute__((noinline)) void batch_tile(const loom_tensor_t* dst, const uint8_t* group,
                                          const __m256i* u, int64_t nblk, const ActBlock* act,
                                          int64_t n0, int64_t m0, Prefetch pf) {
  using S = Super<kType>;
  constexpr int kRun = signed_quants(kType)                             ? 1
                       : kType == LOOM_TYPE_Q5_0 || kType == LOOM_TYPE_Q5_1 ? 4
                                                                            : 8;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[NC];
  const ActBlock* ys[NC];
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) {
    acc[c] = _mm256_setzero_ps();
    ys[c] = act + (n0 + c) * nblk;
  }
  int64_t line = 0;
  for (int64_t i = 0; i < nblk; ++i) {
    for (int64_t k = 0; k < pf.per_block && line < pf.lines; ++k, ++line) {
      _mm_prefetch(pf.p + 64 * line, _MM_HINT_T1);
    }
    const __m256i* ui = u + unpacked_vectors(kType) * i;
    __m256i isum[NC];
#pragma GCC unroll 2
    for (int h = 0; h < 8; h += kRun) {
      __m256i s[NC];
#pragma GCC unroll 8
      for (int j = h; j < h + kRun; ++j) {
#pragma GCC unroll 4
        for (int c = 0; c < NC; ++c) {
          const __m256i b = bcast4(ys[c][i].qs + S::yoff(j));
          const __m256i p =
              signed_quants(kType)
                  ? _mm256_maddubs_epi16(_mm256_load_si256(ui + j), _mm256_sign_epi8(b, _mm256_load_si256(ui + 8 + j)))
                  : _mm256_maddubs_epi16(_mm256_load_si256(ui + j), b);
          // adds (saturating, which these sums never reach) keeps GCC
          // from reassociating the chain into a tree of live products.
          s[c] = j == h ? p : _mm256_adds_epi16(s[c], p);
        }
      }
#pragma GCC unroll 4
      for (int c = 0; c < NC; ++c) {
        const __m256i w = _mm256_madd_epi16(s[c], ones);
        isum[c] = h == 0 ? w : _mm256_add_epi32(isum[c], w);
      }
    }
    const uint8_t* sb = group + static_cast<size_t>(i) * S::kBytes;
    const __m256 da = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb)));
    const __m256 ma =
        S::kMin ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 16))) : da;
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) {
      const ActBlock& y = ys[c][i];
      if (S::kOffset != 0)
        isum[c] = _mm256_sub_epi32(isum[c], _mm256_set1_epi32(S::kOffset * y.sum));
      const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_set1_ps(y.d));
      acc[c] = _mm256_fmadd_ps(da, v, acc[c]);
      if (S::kMin)
        acc[c] = _mm256_fmadd_ps(ma, _mm256_set1_ps(y.d * static_cast<float>(y.sum)), acc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) store_group(dst, n0 + c, m0, acc[c]);
}

// Every column of the groups this slot claims: each chunk unpacked cg
// groups at a time, then column blocks of cb columns over those groups.
template <int32_t kType>
void batch_groups(const loom_tensor_t* dst, const ActBlock* act, Exec& ex, int ith, int nth) {
  using S = Super<kType>;
  const loom_tensor_t* a = dst->src[0];
  const int64_t nblk = a->ne[0] / kBlock;
  const int64_t n_len = nrows(dst);
  const auto* base = static_cast<const uint8_t*>(a->data);
  const size_t group_bytes = static_cast<size_t>(nblk) * S::kBytes;
  const size_t unpacked = static_cast<size_t>(nblk) * unpacked_vectors(kType) * sizeof(__m256i);
  const int64_t cg = std::max<int64_t>(1, static_cast<int64_t>(kBatchScratchBytes / unpacked));
  const int64_t cb = std::max<int64_t>(
      kBatchCols,
      static_cast<int64_t>(kBatchActBytes / (nblk * sizeof(ActBlock))) / kBatchCols * kBatchCols);
  thread_local std::vector<uint8_t> scratch_bytes;
  const size_t need = static_cast<size_t>(cg) * unpacked + 64;
  if (scratch_bytes.size() < need) scratch_bytes.resize(need);
  auto* scratch = reinterpret_cast<__m256i*>(
      (reinterpret_cast<uintptr_t>(scratch_bytes.data()) + 63) & ~uintptr_t{63});
  const int64_t groups = a->ne[1] / kWeightGroupRows;
  for_each_chunk(groups, ex, ith, nth, [&](int64_t g_begin, int64_t g_end) {
    for (int64_t g0 = g_begin; g0 < g_end; g0 += cg) {
      const int64_t ng = std::min(cg, g_end - g0);
      for (int64_t g = 0; g < ng; ++g) {
        unpack_group<kType>(base + static_cast<size_t>(g0 + g) * group_bytes, nblk,
                            scratch + g * nblk * unpacked_vectors(kType));
      }
      // The next chunk's packed bytes are asked for beside the first column
      // block's tiles, spread over their superblocks: unpacking it then
      // finds them in L2 instead of waiting on memory (at 16 columns the
      // weights' stream is ~10% of the step).
      // (Past this slot's claim too: its next claim is most often the
      // chunk that follows.)
      const int64_t next_groups = std::min(cg, groups - g0 - ng);
      const auto next_lines = static_cast<int64_t>((static_cast<size_t>(next_groups) * group_bytes + 63) / 64);
      const int64_t first_tiles = ng * ((std::min(n_len, cb) + kBatchCols - 1) / kBatchCols);
      const int64_t per_tile = (next_lines + first_tiles - 1) / first_tiles;
      Prefetch pf;
      pf.p = reinterpret_cast<const char*>(base + static_cast<size_t>(g0 + ng) * group_bytes);
      pf.per_block = (per_tile + nblk - 1) / nblk;
      int64_t asked = 0;
      for (int64_t n0 = 0; n0 < n_len; n0 += cb) {
        const int64_t n_end = std::min(n_len, n0 + cb);
        for (int64_t g = 0; g < ng; ++g) {
          const uint8_t* group = base + static_cast<size_t>(g0 + g) * group_bytes;
          const __m256i* u = scratch + g * nblk * unpacked_vectors(kType);
          const int64_t m0 = (g0 + g) * kWeightGroupRows;
          // This tile's share of the lines (none after the first block).
          auto share = [&]() {
            Prefetch t = pf;
            t.p += 64 * asked;
            t.lines = n0 == 0 ? std::min(per_tile, next_lines - asked) : 0;
            asked += t.lines;
            return t;
          };
          int64_t n = n0;
          for (; n + kBatchCols <= n_end; n += kBatchCols)
            batch_tile<kType, kBatchCols>(dst, group, u, nblk, act, n, m0, share());
          switch (n_end - n) {
            case 3: batch_tile<kType, 3>(dst, group, u, nblk, act, n, m0, share()); break;
            case 2: batch_tile<kType, 2>(dst, group, u, nblk, act, n, m0, share()); break;
            case 1: batch_tile<kType, 1>(dst, group, u, nblk, act, n, m0, share()); break;
            default: break;
          }
        }
      }
    }
  });
}

template <int32_t kType>
void mul_mat_type(const loom_tensor_t* dst, const ActBlock* act, Exec& ex, int ith, int nth) {
  using S = Super<kType>;
  const loom_tensor_t* a = dst->src[0];
  const int64_t nblk = a->ne[0] / kBlock;
  const int64_t n_len = nrows(dst);  // A is 2-D: every batch of B shares it
  const auto* base = static_cast<const uint8_t*>(a->data);
  const size_t group_bytes = static_cast<size_t>(nblk) * S::kBytes;
  // Columns [n, n_len) of group g on the AVX kernels.
  auto rest = [&](int64_t g, int64_t n) {
    const uint8_t* group = base + static_cast<size_t>(g) * group_bytes;
    const int64_t m0 = g * kWeightGroupRows;
    column_passes<kCols>(n, n_len, [&](auto nc, int64_t c) { group_cols<kType, nc>(dst, group, nblk, act, c, m0); });
  };
  const int64_t groups = a->ne[1] / kWeightGroupRows;
  if (amx_takes(kType, n_len)) {
    // Pairs of groups: whole tiles of 16 columns on AMX, the rest here.
    for_each_item((groups + 1) / 2, ex, ith, nth, [&](int64_t p) {
      const int64_t g = 2 * p;
      const uint8_t* ga = base + static_cast<size_t>(g) * group_bytes;
      const int64_t n = amx_columns(dst, ga, g + 1 < groups ? ga + group_bytes : nullptr, nblk, act, n_len,
                                    g * kWeightGroupRows);
      rest(g, n);
      if (g + 1 < groups) rest(g + 1, n);
    });
    amx_release();
    return;
  }
  if constexpr (kPairs) {
    // LOOM_CPU_ZMM_PAIRS: 1 on any AVX-512 CPU (tests reach this path on
    // a Zen 4), 0 never; unset, where 512-bit units are full width.
    static const bool on = common::plugin_env_flag("LOOM_CPU_ZMM_PAIRS", !common::cpu_features().split_avx512);
    if (on && n_len >= kPairMinCols && groups >= 2) {
      for_each_item((groups + 1) / 2, ex, ith, nth, [&](int64_t p) {
        const int64_t g = 2 * p;
        if (g + 1 < groups) {
          pair_all_cols<kType>(dst, base + static_cast<size_t>(g) * group_bytes, group_bytes, nblk, act, n_len,
                               g * kWeightGroupRows);
        } else {
          rest(g, 0);
        }
      });
      return;
    }
  }
  if constexpr (batch_type(kType)) {
    if (n_len >= kBatchMinCols) {
      batch_groups<kType>(dst, act, ex, ith, nth);
      return;
    }
  }
  for_each_item(groups, ex, ith, nth, [&](int64_t g) { rest(g, 0); });
}

}  // namespace

void mul_mat_x8(const loom_tensor_t* dst, const ActBlock* act, Exec& ex, int ith, int nth) {
  switch (dst->src[0]->type) {
    case LOOM_TYPE_Q8_0: mul_mat_type<LOOM_TYPE_Q8_0>(dst, act, ex, ith, nth); break;
    case LOOM_TYPE_IQ4_NL: mul_mat_type<LOOM_TYPE_IQ4_NL>(dst, act, ex, ith, nth); break;
    case LOOM_TYPE_Q4_1: mul_mat_type<LOOM_TYPE_Q4_1>(dst, act, ex, ith, nth); break;
    case LOOM_TYPE_Q5_0: mul_mat_type<LOOM_TYPE_Q5_0>(dst, act, ex, ith, nth); break;
    case LOOM_TYPE_Q5_1: mul_mat_type<LOOM_TYPE_Q5_1>(dst, act, ex, ith, nth); break;
    default: mul_mat_type<LOOM_TYPE_Q4_0>(dst, act, ex, ith, nth); break;
  }
}

}  // namespace loom::cpu

#endif  // LOOM_CPU_INT8_DOT
