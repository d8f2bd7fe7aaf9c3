// MUL_MAT with Q4_K / Q5_K / Q6_K A repacked in groups of 8 rows (weight_layout.h)
// against B quantized to ActBlockK: as for Q4_0 (matmul_x8.cpp), the 8 int32
// lanes of an accumulator are the 8 rows of a group, so one 32-byte load of
// A gives 4 quants of 8 rows and the matching 4 activation bytes are
// broadcast; one integer dot instruction per 32 products (AVX512-VNNI's
// dpbusd; AVX2's maddubs + madd).
//
// Per super-block of 256 and group of 8 rows:
//   Q4_K  sub-block j (32 quants, unsigned 4 bits u) dot_j = sum u * qb;
//         isum = sum_j sc_j dot_j (vpmulld by the 6-bit scales, unpacked
//         from the 3 packed words of 8 rows at once; AVX2: the dot in
//         int16 pairs, maddubs per unit, then one madd by the scales);
//         result += d_a d_b isum - dmin_a d_b sum_j m_j B_j, B_j = the
//         activations' sum over sub-block j.
//         VNNI: the high nibbles are read as (byte & 0xF0) = 16 u (dpbusd
//         does not saturate) and the dot shifted right by 4, exactly.
//   Q6_K  sub-block j (16 quants, u = q + 32 unsigned 6 bits, from the
//         layout's planes A, B, C: 3 loads, 11 bit ops per 4 vectors):
//         isum = sum_j sc_j (dot_j - 32 S_j), S_j the activations' sum over
//         the 16; the offset term sum_j sc_j S_j is itself a dpbusd of the
//         scales (sc + 128, unsigned) against S_j split in bytes.
// The min / offset terms need the per-column activation sums as byte pairs
// (lo 0..63, hi signed: S = 64 hi + lo; small enough for AVX2's maddubs
// against unsigned bytes up to 255, without saturation), prepared once per node and
// thread for every column (ColSums). Integer sums are exact; per
// super-block one f32 multiply-add per row, as on the in-place K-quant path
// (matmul_kquant_dot.cpp) whose numerics this matches (same activations,
// f32 accumulation over super-blocks in lanes instead of a reduction).
// Q4_K, Q5_K and Q6_K over 3 or more columns without VNNI (kquant_batch): each
// chunk of groups unpacked once, then tiles of columns over it (as
// matmul_x8.cpp's "many columns"), with the same sums: the same bits.
#include "ops/matmul_kquant.h"
#include "weight_layout.h"

#if LOOM_CPU_INT8_DOT

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/cpu_features.h"
#include "common/env.h"
#include "ops/x8_groups.h"

namespace loom::cpu {
namespace {

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
constexpr bool kVnni = true;
constexpr int kCols = 4;  // columns per pass: 32 vector registers
#else
constexpr bool kVnni = false;
constexpr int kCols = 2;
#endif

constexpr int kSuper = 256;

inline __m256i load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
inline __m256i bytes(int v) { return _mm256_set1_epi8(static_cast<char>(v)); }

// One column's per-super-block activation sums, split into bytes for dpbusd
// (S = 64 hi + lo, lo in 0..63, |hi| <= 64): Q4_K's 8 sums over 32, Q6_K's
// 16 over 16 (and their total).
struct ColSums {
  int8_t lo[16], hi[16];
  int32_t total;
};

void col_sums(int32_t type, const ActBlockK& y, ColSums* out) {
  int32_t s[16];
  int n = 16;
  if (type == LOOM_TYPE_Q4_K || type == LOOM_TYPE_Q5_K) {
    n = 8;
    for (int j = 0; j < 8; ++j) s[j] = y.bsums[2 * j] + y.bsums[2 * j + 1];
  } else {
    for (int j = 0; j < 16; ++j) s[j] = y.bsums[j];
  }
  out->total = 0;
  for (int j = 0; j < 16; ++j) {
    const int32_t v = j < n ? s[j] : 0;
    out->total += v;
    out->hi[j] = static_cast<int8_t>(v >> 6);  // arithmetic: floor(v / 64)
    out->lo[j] = static_cast<int8_t>(v & 63);
  }
}

// int32 lanes: sum over 4 u bytes x 4 (lo + 64 hi) activation sums, as
// the lo part (returned) and the hi part (*out_hi).
inline __m256i dot_sums(__m256i acc_lo, __m256i acc_hi, __m256i u, const int8_t* lo, const int8_t* hi,
                        __m256i* out_hi) {
  *out_hi = dot_u8s8(acc_hi, u, bcast4(hi));
  return dot_u8s8(acc_lo, u, bcast4(lo));
}

// 8 f16 at p and p + stride 4 bytes (lane j at p + 4 j) -> 8 floats.
inline __m256 halves(const uint8_t* p, int shift) {
  const __m256i v = _mm256_srli_epi32(load(p), shift);
  const __m256i w = _mm256_and_si256(v, _mm256_set1_epi32(0xFFFF));
  // Packed to 16 bits: [r0..r3 r0..r3 | r4..r7 r4..r7] -> [r0..r7].
  const __m256i p16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(w, w), 0x88);
  return _mm256_cvtph_ps(_mm256_castsi256_si128(p16));
}

// Byte b of each dword, zero-extended: pshufb index pattern.
inline __m256i byte_of_dwords(int b) {
  const int32_t base = static_cast<int32_t>(0x80808000u) + b;
  return _mm256_setr_epi32(base, base + 4, base + 8, base + 12, base, base + 4, base + 8, base + 12);
}

// Q4_K's per-unit step: VNNI, a dpbusd into int32 lanes; AVX2, maddubs into
// int16 pairs summed over the sub-block's 8 units (at most 8 * 2 * 15 * 127
// = 30480: no overflow), scaled and widened by one madd per sub-block.
// kWide: int32 lanes on AVX2 too (Q5_K: 8 * 2 * 31 * 127 would overflow).
template <bool kWide>
inline __m256i q4k_step(__m256i acc, __m256i u, __m256i y) {
  if (kWide) return dot_u8s8(acc, u, y);
  return _mm256_add_epi16(acc, _mm256_maddubs_epi16(u, y));
}
// The pshufb pattern giving each row's scale byte b: kWide (int32 sums), as
// an int32; else as both int16 halves of its lane (the madd operand).
template <bool kWide>
inline __m256i scale_pattern(int b) {
  if (kWide) return byte_of_dwords(b);
  const int32_t base = static_cast<int32_t>(0x80008000u) + b * 0x10001;
  const __m256i step = _mm256_setr_epi32(0, 0x40004, 0x80008, 0xC000C, 0, 0x40004, 0x80008, 0xC000C);
  return _mm256_add_epi32(_mm256_set1_epi32(base), step);
}

// ---------------------------------------------------------------- Q4_K, Q5_K
// Superblock (1152 bytes): [0, 32) d|dmin of 8 rows; [32, 128) the packed
// scale words u0, u1, u2 of 8 rows; [128, 1152) qs in 32 units of 4 bytes
// (unit 8g + t: qs bytes 32g + 4t .. +3 of the 8 rows, at 128 + 32 (4t + g);
// byte l of qs holds element 64 (l / 32) + l % 32 low, + 32 high).
// Q5_K (1408 bytes): the same, then [1152, 1408) qh in 8 units (unit t: qh
// bytes 4t .. +3 of the 8 rows; bit 2g of byte l: the fifth bit of element
// 64g + l, bit 2g + 1 of element 64g + 32 + l).
constexpr size_t kQ4KBytes = 8 * sizeof(loom_block_q4_k_t);
constexpr size_t kQ5KBytes = 8 * sizeof(loom_block_q5_k_t);


// The rows one q4k_cols pass reads, as vectors: a group of 8 (ymm lanes)
// or, on full-width AVX-512, groups g and g + 1 side by side (zmm lanes,
// rows m0 .. m0+15; matmul_x8.cpp's pair kernel). The operations below are
// overloaded on the two widths; the 16-row form exists only with VNNI.
template <size_t kBytes>
struct Rows8 {
  using I = __m256i;
  using F = __m256;
  const uint8_t* group;
  I load_at(int64_t i, size_t off) const { return load(group + static_cast<size_t>(i) * kBytes + off); }
  F halves_at(int64_t i, int shift) const { return halves(group + static_cast<size_t>(i) * kBytes, shift); }
  // 8 f16 side by side at the superblock's start (Q6_K's d).
  F f16_at(int64_t i) const {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group + static_cast<size_t>(i) * kBytes)));
  }
  void prefetch(int64_t i, int64_t) const { prefetch_ahead<kBytes>(group + static_cast<size_t>(i) * kBytes); }
};
inline __m256i zero_i(__m256i) { return _mm256_setzero_si256(); }
inline __m256i splat8(__m256i, int v) { return bytes(v); }
inline __m256i bcast4(__m256i, const int8_t* p) { return bcast4(p); }
inline __m256i vand(__m256i a, __m256i b) { return _mm256_and_si256(a, b); }
inline __m256i vor(__m256i a, __m256i b) { return _mm256_or_si256(a, b); }
inline __m256i vxor(__m256i a, __m256i b) { return _mm256_xor_si256(a, b); }
inline __m256i vsub(__m256i a, __m256i b) { return _mm256_sub_epi32(a, b); }
inline __m256i splat32(__m256i, int32_t v) { return _mm256_set1_epi32(v); }
inline __m256i vadd(__m256i a, __m256i b) { return _mm256_add_epi32(a, b); }
inline __m256i vmullo(__m256i a, __m256i b) { return _mm256_mullo_epi32(a, b); }
inline __m256i vsrl32(__m256i a, int n) { return _mm256_srli_epi32(a, n); }
inline __m256i vsll32(__m256i a, int n) { return _mm256_slli_epi32(a, n); }
inline __m256i vsra32(__m256i a, int n) { return _mm256_srai_epi32(a, n); }
inline __m256i vsrl16(__m256i a, int n) { return _mm256_srli_epi16(a, n); }
inline __m256i vsll16(__m256i a, int n) { return _mm256_slli_epi16(a, n); }
inline __m256i vshuffle(__m256i a, __m256i idx) { return _mm256_shuffle_epi8(a, idx); }
inline __m256i vdot(__m256i acc, __m256i u, __m256i s) { return dot_u8s8(acc, u, s); }
inline __m256 vcvt(__m256i a) { return _mm256_cvtepi32_ps(a); }
inline __m256 vsplat(__m256, float v) { return _mm256_set1_ps(v); }
inline __m256 vmul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
inline __m256 vfmadd(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
inline __m256 vfnmadd(__m256 a, __m256 b, __m256 c) { return _mm256_fnmadd_ps(a, b, c); }
inline __m256i pattern_like(__m256i, __m256i p) { return p; }

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512DQ__)
// (Masked forms: see join in x8_groups.h.)
inline __m512 join_f(__m256 lo, __m256 hi) {
  return _mm512_mask_broadcast_f32x8(_mm512_maskz_broadcast_f32x8(0xFF, lo), 0xFF00, hi);
}
template <size_t kBytes>
struct Rows16 {
  using I = __m512i;
  using F = __m512;
  const uint8_t* g0;
  const uint8_t* g1;
  I load_at(int64_t i, size_t off) const {
    const size_t o = static_cast<size_t>(i) * kBytes + off;
    return join(load(g0 + o), load(g1 + o));
  }
  F halves_at(int64_t i, int shift) const {
    const size_t o = static_cast<size_t>(i) * kBytes;
    return join_f(halves(g0 + o, shift), halves(g1 + o, shift));
  }
  F f16_at(int64_t i) const {
    const size_t o = static_cast<size_t>(i) * kBytes;
    return join_f(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g0 + o))),
                  _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g1 + o))));
  }
  void prefetch(int64_t i, int64_t nsb) const { prefetch_pair<kBytes>(g0, g1, i, nsb); }
};
inline __m512i zero_i(__m512i) { return _mm512_setzero_si512(); }
inline __m512i splat8(__m512i, int v) { return _mm512_set1_epi8(static_cast<char>(v)); }
inline __m512i bcast4(__m512i, const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}
inline __m512i vand(__m512i a, __m512i b) { return _mm512_and_si512(a, b); }
inline __m512i vor(__m512i a, __m512i b) { return _mm512_or_si512(a, b); }
inline __m512i vxor(__m512i a, __m512i b) { return _mm512_xor_si512(a, b); }
inline __m512i vsub(__m512i a, __m512i b) { return _mm512_sub_epi32(a, b); }
inline __m512i splat32(__m512i, int32_t v) { return _mm512_set1_epi32(v); }
inline __m512i vadd(__m512i a, __m512i b) { return _mm512_add_epi32(a, b); }
inline __m512i vmullo(__m512i a, __m512i b) { return _mm512_maskz_mullo_epi32(0xFFFF, a, b); }
inline __m512i vsrl32(__m512i a, int n) { return reinterpret_cast<__m512i>(reinterpret_cast<__v16su>(a) >> n); }
inline __m512i vsll32(__m512i a, int n) { return reinterpret_cast<__m512i>(reinterpret_cast<__v16su>(a) << n); }
inline __m512i vsra32(__m512i a, int n) { return reinterpret_cast<__m512i>(reinterpret_cast<__v16si>(a) >> n); }
inline __m512i vsrl16(__m512i a, int n) { return reinterpret_cast<__m512i>(reinterpret_cast<__v32hu>(a) >> n); }
inline __m512i vsll16(__m512i a, int n) { return reinterpret_cast<__m512i>(reinterpret_cast<__v32hu>(a) << n); }
inline __m512i vshuffle(__m512i a, __m512i idx) { return _mm512_maskz_shuffle_epi8(~0ULL, a, idx); }
inline __m512i vdot(__m512i acc, __m512i u, __m512i s) { return _mm512_dpbusd_epi32(acc, u, s); }
inline __m512 vcvt(__m512i a) { return _mm512_maskz_cvtepi32_ps(0xFFFF, a); }
inline __m512 vsplat(__m512, float v) { return _mm512_set1_ps(v); }
inline __m512 vmul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
inline __m512 vfmadd(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
inline __m512 vfnmadd(__m512 a, __m512 b, __m512 c) { return _mm512_fnmadd_ps(a, b, c); }
// A ymm pshufb pattern (the same in both 128-bit lanes) in all four lanes.
inline __m512i pattern_like(__m512i, __m256i p) { return join(p, p); }
#endif

// Bit b of each byte of v at bit 4, the other bits 0.
template <typename I>
inline I bit_to_4(I v, int b) {
  const I s = b <= 4 ? vsll16(v, 4 - b) : vsrl16(v, b - 4);
  return vand(s, splat8(I{}, 0x10));
}

// The activation sums' dot with 4 min bytes of each row (dot_sums' form).
template <typename I>
inline I dot_sums_v(I acc_lo, I acc_hi, I u, const int8_t* lo, const int8_t* hi, I* out_hi) {
  *out_hi = vdot(acc_hi, u, bcast4(I{}, hi));
  return vdot(acc_lo, u, bcast4(I{}, lo));
}

// kQ5: Q5_K (the fifth bit from qh ORed into each quant; the high nibbles
// shifted down, as 16 x 31 does not fit a byte). R: the rows read (Rows8,
// Rows16).
template <int NC, bool kQ5, typename R>
void q4k_cols(const R& rows, int64_t nsb, bool prefetch, const ActBlockK* const* y, const ColSums* const* cs,
              typename R::F acc[NC]) {
  using I = typename R::I;
  using F = typename R::F;
  constexpr bool kWide = kVnni || kQ5;            // int32 dot sums
  constexpr bool kHighAsIs = kVnni && !kQ5;       // high nibbles read as 16 u
  // Sub-block pairs (2g, 2g + 1) interleaved: 2 * NC * G dot chains (AVX2:
  // fewer, its 16 vector registers).
  constexpr int G = kVnni ? (NC == 1 ? 4 : NC == 2 ? 2 : 1) : (NC == 1 ? 2 : 1);
  const I m3f = splat8(I{}, 0x3F), m0f = splat8(I{}, 0x0F), m30 = splat8(I{}, 0x30);
  for (int64_t i = 0; i < nsb; ++i) {
    if (prefetch) rows.prefetch(i, nsb);
    const I u0 = rows.load_at(i, 32), u2 = rows.load_at(i, 96);
    const I sc_lo = vand(u0, m3f);
    const I sc_hi = vor(vand(u2, m0f), vand(vsrl32(u0, 2), m30));
    I isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = zero_i(I{});
    for (int g0 = 0; g0 < 4; g0 += G) {
      I lo[G][NC], hi[G][NC];
      for (int g = 0; g < G; ++g)
        for (int c = 0; c < NC; ++c) lo[g][c] = hi[g][c] = zero_i(I{});
      for (int t = 0; t < 8; ++t) {
        const I qh = kQ5 ? rows.load_at(i, kQ4KBytes + 32 * t) : zero_i(I{});
        for (int g = 0; g < G; ++g) {
          const int gg = g0 + g;
          const I v = rows.load_at(i, 128 + 32 * (4 * t + gg));
          I ul = vand(v, m0f);
          I uh = kHighAsIs ? vand(v, splat8(I{}, 0xF0)) : vand(vsrl16(v, 4), m0f);
          if (kQ5) {
            ul = vor(ul, bit_to_4(qh, 2 * gg));
            uh = vor(uh, bit_to_4(qh, 2 * gg + 1));
          }
          for (int c = 0; c < NC; ++c) {
            if constexpr (kWide) {
              lo[g][c] = vdot(lo[g][c], ul, bcast4(I{}, y[c][i].qs + 64 * gg + 4 * t));
              hi[g][c] = vdot(hi[g][c], uh, bcast4(I{}, y[c][i].qs + 64 * gg + 32 + 4 * t));
            } else {
              lo[g][c] = q4k_step<false>(lo[g][c], ul, bcast4(y[c][i].qs + 64 * gg + 4 * t));
              hi[g][c] = q4k_step<false>(hi[g][c], uh, bcast4(y[c][i].qs + 64 * gg + 32 + 4 * t));
            }
          }
        }
      }
      for (int g = 0; g < G; ++g) {
        const int gg = g0 + g;
        // Scales of sub-blocks 2gg, 2gg + 1: bytes of sc_lo (j < 4) / sc_hi.
        const I& src_a = 2 * gg < 4 ? sc_lo : sc_hi;
        const I s_a = vshuffle(src_a, pattern_like(I{}, scale_pattern<kWide>((2 * gg) % 4)));
        const I s_b = vshuffle(src_a, pattern_like(I{}, scale_pattern<kWide>((2 * gg + 1) % 4)));
        for (int c = 0; c < NC; ++c) {
          if constexpr (kWide) {
            const I h = kHighAsIs ? vsra32(hi[g][c], 4) : hi[g][c];
            isum[c] = vadd(isum[c], vadd(vmullo(lo[g][c], s_a), vmullo(h, s_b)));
          } else {
            isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(_mm256_madd_epi16(lo[g][c], s_a),
                                                                 _mm256_madd_epi16(hi[g][c], s_b)));
          }
        }
      }
    }
    const F d = rows.halves_at(i, 0), dmin = rows.halves_at(i, 16);
    const I w1 = rows.load_at(i, 64), w2 = rows.load_at(i, 96);  // again: fewer live registers in the loop
    const I mn_lo = vand(w1, m3f);
    const I mn_hi = vor(vand(vsrl32(w2, 4), m0f), vand(vsrl32(w1, 2), m30));
    for (int c = 0; c < NC; ++c) {
      const ColSums& s = cs[c][i];
      I mh;
      I ml = dot_sums_v(zero_i(I{}), zero_i(I{}), mn_lo, s.lo, s.hi, &mh);
      ml = dot_sums_v(ml, mh, mn_hi, s.lo + 4, s.hi + 4, &mh);
      const I mins = vadd(ml, vsll32(mh, 6));
      const F yd = vsplat(F{}, y[c][i].d);
      acc[c] = vfmadd(vcvt(isum[c]), vmul(d, yd), acc[c]);
      acc[c] = vfnmadd(vcvt(mins), vmul(dmin, yd), acc[c]);
    }
  }
}

// Q4_K (and Q5_K) over many columns without VNNI (prefill, a server's batched steps):
// q4k_cols unpacks each superblock again per pair of columns. Here a chunk
// of groups is unpacked once (quant bytes, scale patterns, mins, d and
// dmin) into a cache-resident scratch, and tiles of kBatchCols columns read
// it, in blocks of columns whose activations stay in L1: the sums, their
// order and the f32 steps are q4k_cols' own, so the results are the same
// bits (the conformance case ColumnsDoNotDependOnTheColumnCount).
#ifndef __AVX512VL__
constexpr bool kBatch = true;
#else
constexpr bool kBatch = false;  // VNNI: q4k_cols / q6k_cols hold 4 columns
#endif
constexpr int64_t kBatchMinCols = 3;
constexpr int kBatchCols = 2;
constexpr size_t kBatchScratchBytes = 64 * 1024;  // unpacked groups of one chunk
constexpr size_t kBatchActBytes = 24 * 1024;      // one column block's activations

// One Q4_K superblock of 8 rows, unpacked.
struct Q4KUnpacked {
  __m256i u[4][8][2];  // [sub-block pair][unit][low, high nibbles]
  __m256i sc[4][2];    // the pair's scales as madd operands (scale_pattern)
  __m256i mn[2];       // mins, low and high four
  __m256 d, dmin;
};

// kQ5: Q5_K (the first 1152 bytes are Q4_K's; each quant's fifth bit from
// qh ORed in as bit 4, as q4k_cols does).
template <bool kQ5>
void unpack_q4k(const uint8_t* sb, Q4KUnpacked* out) {
  const __m256i m3f = bytes(0x3F), m0f = bytes(0x0F), m30 = bytes(0x30);
  const __m256i u0 = load(sb + 32), u2 = load(sb + 96);
  const __m256i sc_lo = _mm256_and_si256(u0, m3f);
  const __m256i sc_hi = _mm256_or_si256(_mm256_and_si256(u2, m0f), _mm256_and_si256(_mm256_srli_epi32(u0, 2), m30));
  for (int gg = 0; gg < 4; ++gg) {
    const __m256i& src = 2 * gg < 4 ? sc_lo : sc_hi;
    out->sc[gg][0] = _mm256_shuffle_epi8(src, scale_pattern<false>((2 * gg) % 4));
    out->sc[gg][1] = _mm256_shuffle_epi8(src, scale_pattern<false>((2 * gg + 1) % 4));
    for (int t = 0; t < 8; ++t) {
      const __m256i v = load(sb + 128 + 32 * (4 * t + gg));
      out->u[gg][t][0] = _mm256_and_si256(v, m0f);
      out->u[gg][t][1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m0f);
      if (kQ5) {
        const __m256i qh = load(sb + kQ4KBytes + 32 * t);
        out->u[gg][t][0] = _mm256_or_si256(out->u[gg][t][0], bit_to_4(qh, 2 * gg));
        out->u[gg][t][1] = _mm256_or_si256(out->u[gg][t][1], bit_to_4(qh, 2 * gg + 1));
      }
    }
  }
  const __m256i w1 = load(sb + 64), w2 = load(sb + 96);
  out->mn[0] = _mm256_and_si256(w1, m3f);
  out->mn[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, 4), m0f), _mm256_and_si256(_mm256_srli_epi32(w1, 2), m30));
  out->d = halves(sb, 0);
  out->dmin = halves(sb, 16);
}

// Columns [n0, n0 + NC) of the group whose nsb superblocks are unpacked at q.
// kQ5: quants up to 31, so the int16 runs are 4 units (4 x 2 x 31 x 127),
// each widened by its own madd with the scales (the same exact sums).
template <int NC, bool kQ5>
__attribute__((noinline)) void q4k_tile(const loom_tensor_t* dst, const Q4KUnpacked* q, int64_t nsb,
                                        const ActBlockK* act, const ColSums* sums, int64_t n0, int64_t m0) {
  __m256 acc[NC];
  const ActBlockK* y[NC];
  const ColSums* cs[NC];
  for (int c = 0; c < NC; ++c) {
    acc[c] = _mm256_setzero_ps();
    y[c] = act + (n0 + c) * nsb;
    cs[c] = sums + (n0 + c) * nsb;
  }
  for (int64_t i = 0; i < nsb; ++i) {
    const Q4KUnpacked& sb = q[i];
    __m256i isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = _mm256_setzero_si256();
    for (int gg = 0; gg < 4; ++gg) {
      // Units summed in int16 (adds: never saturating here, 8 x 2 x 15 x 127
      // (Q5_K: runs of 4, 4 x 2 x 31 x 127); adds also keep GCC from
      // reassociating the chains into trees of live products), then widened
      // by madd with the scales.
      constexpr int kRun = kQ5 ? 4 : 8;
      for (int t0 = 0; t0 < 8; t0 += kRun) {
        __m256i lo[NC], hi[NC];
        for (int c = 0; c < NC; ++c) lo[c] = hi[c] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int t = t0; t < t0 + kRun; ++t) {
#pragma GCC unroll 2
          for (int c = 0; c < NC; ++c) {
            lo[c] = _mm256_adds_epi16(lo[c], _mm256_maddubs_epi16(sb.u[gg][t][0], bcast4(y[c][i].qs + 64 * gg + 4 * t)));
            hi[c] = _mm256_adds_epi16(hi[c],
                                      _mm256_maddubs_epi16(sb.u[gg][t][1], bcast4(y[c][i].qs + 64 * gg + 32 + 4 * t)));
          }
        }
        for (int c = 0; c < NC; ++c) {
          isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(_mm256_madd_epi16(lo[c], sb.sc[gg][0]),
                                                               _mm256_madd_epi16(hi[c], sb.sc[gg][1])));
        }
      }
    }
    for (int c = 0; c < NC; ++c) {
      const ColSums& s = cs[c][i];
      __m256i mh;
      __m256i ml = dot_sums(_mm256_setzero_si256(), _mm256_setzero_si256(), sb.mn[0], s.lo, s.hi, &mh);
      ml = dot_sums(ml, mh, sb.mn[1], s.lo + 4, s.hi + 4, &mh);
      const __m256i mins = _mm256_add_epi32(ml, _mm256_slli_epi32(mh, 6));
      const __m256 yd = _mm256_set1_ps(y[c][i].d);
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(sb.d, yd), acc[c]);
      acc[c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_mul_ps(sb.dmin, yd), acc[c]);
    }
  }
  for (int c = 0; c < NC; ++c) store_group(dst, n0 + c, m0, acc[c]);
}

// ---------------------------------------------------------------- Q6_K
// Superblock (1680 bytes): [0, 16) d of 8 rows (f16); [16, 144) the 16 int8
// scales in 4 units (unit c: scales 4c .. 4c+3 of the 8 rows); then unit k
// of planes A, B, C (weight_layout.h) at 144 + 96k, + 32, + 64. For half h
// and t in 0..7, unit 8h + t gives elements 128h + 32p + 4t .. +3 (p =
// 0..3), sub-block 8h + 2p + t / 4.
constexpr size_t kQ6KBytes = 8 * sizeof(loom_block_q6_k_t);

// R: the rows read (Rows8, Rows16), as q4k_cols.
template <int NC, typename R>
void q6k_cols(const R& rows, int64_t nsb, bool prefetch, const ActBlockK* const* y, const ColSums* const* cs,
              typename R::F acc[NC]) {
  using I = typename R::I;
  using F = typename R::F;
  // Both quarters of 4 (t / 4 = 0, 1) at once for one column: 8 chains
  // (AVX2: 4, its 16 vector registers).
  constexpr int Q = kVnni && NC == 1 ? 2 : 1;
  const I m3f = splat8(I{}, 0x3F), m30 = splat8(I{}, 0x30), m03 = splat8(I{}, 0x03), m0c = splat8(I{}, 0x0C);
  for (int64_t i = 0; i < nsb; ++i) {
    if (prefetch) rows.prefetch(i, nsb);
    I sc[4];
    for (int c = 0; c < 4; ++c) sc[c] = rows.load_at(i, 16 + 32 * c);
    I isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = zero_i(I{});
    for (int h = 0; h < 2; ++h) {
      for (int q0 = 0; q0 < 2; q0 += Q) {
        I dp[Q][4][NC];
        for (int q = 0; q < Q; ++q)
          for (int p = 0; p < 4; ++p)
            for (int c = 0; c < NC; ++c) dp[q][p][c] = zero_i(I{});
        for (int q = 0; q < Q; ++q) {  // t in order: the superblock read front to back
          for (int tt = 0; tt < 4; ++tt) {
            const int t = 4 * (q0 + q) + tt;
            const size_t unit = 144 + 96 * static_cast<size_t>(8 * h + t);
            const I pa = rows.load_at(i, unit), pb = rows.load_at(i, unit + 32), pc = rows.load_at(i, unit + 64);
            I u[4];
            u[0] = vand(pa, m3f);
            u[1] = vand(pb, m3f);
            u[2] = vand(pc, m3f);
            u[3] = vor(vor(vand(vsrl16(pa, 6), m03), vand(vsrl16(pb, 4), m0c)), vand(vsrl16(pc, 2), m30));
            for (int p = 0; p < 4; ++p) {
              for (int c = 0; c < NC; ++c) {
                dp[q][p][c] = vdot(dp[q][p][c], u[p], bcast4(I{}, y[c][i].qs + 128 * h + 32 * p + 4 * t));
              }
            }
          }
        }
        for (int q = 0; q < Q; ++q) {
          for (int p = 0; p < 4; ++p) {
            const int j = 8 * h + 2 * p + q0 + q;  // sub-block
            // Scale j, sign-extended: byte j % 4 of unit j / 4 to the top, then down.
            const I s = vsra32(vsll32(sc[j / 4], 24 - 8 * (j % 4)), 24);
            for (int c = 0; c < NC; ++c) isum[c] = vadd(isum[c], vmullo(dp[q][p][c], s));
          }
        }
      }
    }
    const F d = rows.f16_at(i);
    for (int c = 0; c < NC; ++c) {
      const ColSums& s = cs[c][i];
      // sum_j sc_j S_j = sum_j (sc_j + 128) S_j - 128 total.
      I ol = zero_i(I{}), oh = zero_i(I{});
      for (int k = 0; k < 4; ++k) ol = dot_sums_v(ol, oh, vxor(sc[k], splat8(I{}, 0x80)), s.lo + 4 * k, s.hi + 4 * k, &oh);
      const I off = vsub(vadd(ol, vsll32(oh, 6)), splat32(I{}, 128 * s.total));
      const I total = vsub(isum[c], vsll32(off, 5));
      acc[c] = vfmadd(vcvt(total), vmul(d, vsplat(F{}, y[c][i].d)), acc[c]);
    }
  }
}

// Q6_K over many columns without VNNI, as Q4_K above: the 6-bit values,
// the 16 scales sign-extended to int32 lanes and their offset operands
// unpacked once; a unit pair's maddubs summed in int16 (2 x 2 x 63 x 127 <=
// 32,767), widened by madd. The integer sums are q6k_cols' (exact in any
// grouping) and the f32 steps its own: the same bits.
struct Q6KUnpacked {
  __m256i u[2][8][4];  // [half][unit][p]: u = q + 32
  __m256i sc[16];      // scale j in each int32 lane of its row
  __m256i scx[4];      // the scale bytes + 128 (unsigned, the offset term)
  __m256 d;
};

[[maybe_unused]] void unpack_q6k(const uint8_t* sb, Q6KUnpacked* out) {
  const __m256i m3f = bytes(0x3F), m30 = bytes(0x30);
  __m256i sc[4];
  for (int c = 0; c < 4; ++c) {
    sc[c] = load(sb + 16 + 32 * c);
    out->scx[c] = _mm256_xor_si256(sc[c], bytes(0x80));
  }
  for (int j = 0; j < 16; ++j) out->sc[j] = _mm256_srai_epi32(_mm256_slli_epi32(sc[j / 4], 24 - 8 * (j % 4)), 24);
  for (int h = 0; h < 2; ++h) {
    for (int t = 0; t < 8; ++t) {
      const uint8_t* unit = sb + 144 + 96 * (8 * h + t);
      const __m256i pa = load(unit), pb = load(unit + 32), pc = load(unit + 64);
      out->u[h][t][0] = _mm256_and_si256(pa, m3f);
      out->u[h][t][1] = _mm256_and_si256(pb, m3f);
      out->u[h][t][2] = _mm256_and_si256(pc, m3f);
      out->u[h][t][3] = _mm256_or_si256(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(pa, 6), bytes(0x03)),
                                                        _mm256_and_si256(_mm256_srli_epi16(pb, 4), bytes(0x0C))),
                                        _mm256_and_si256(_mm256_srli_epi16(pc, 2), m30));
    }
  }
  out->d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb)));
}

template <int NC>
__attribute__((noinline)) void q6k_tile(const loom_tensor_t* dst, const Q6KUnpacked* q, int64_t nsb,
                                        const ActBlockK* act, const ColSums* sums, int64_t n0, int64_t m0) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[NC];
  const ActBlockK* y[NC];
  const ColSums* cs[NC];
  for (int c = 0; c < NC; ++c) {
    acc[c] = _mm256_setzero_ps();
    y[c] = act + (n0 + c) * nsb;
    cs[c] = sums + (n0 + c) * nsb;
  }
  for (int64_t i = 0; i < nsb; ++i) {
    const Q6KUnpacked& sb = q[i];
    __m256i isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      for (int qq = 0; qq < 2; ++qq) {
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
          const int j = 8 * h + 2 * p + qq;  // sub-block
#pragma GCC unroll 2
          for (int c = 0; c < NC; ++c) {
            const int8_t* yq = y[c][i].qs + 128 * h + 32 * p + 16 * qq;  // unit t = 4 qq: 4 t bytes on
            const __m256i* u = &sb.u[h][4 * qq][p];
            // Units 4qq .. 4qq+3 of element group p (u[t][p] lies 4 vectors after u[t-1][p]).
            const __m256i x = _mm256_adds_epi16(_mm256_maddubs_epi16(u[0], bcast4(yq)),
                                                _mm256_maddubs_epi16(u[4], bcast4(yq + 4)));
            const __m256i z = _mm256_adds_epi16(_mm256_maddubs_epi16(u[8], bcast4(yq + 8)),
                                                _mm256_maddubs_epi16(u[12], bcast4(yq + 12)));
            const __m256i dp = _mm256_add_epi32(_mm256_madd_epi16(x, ones), _mm256_madd_epi16(z, ones));
            isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(dp, sb.sc[j]));
          }
        }
      }
    }
    for (int c = 0; c < NC; ++c) {
      const ColSums& s = cs[c][i];
      __m256i ol = _mm256_setzero_si256(), oh = _mm256_setzero_si256();
      for (int k = 0; k < 4; ++k) ol = dot_sums(ol, oh, sb.scx[k], s.lo + 4 * k, s.hi + 4 * k, &oh);
      const __m256i off =
          _mm256_sub_epi32(_mm256_add_epi32(ol, _mm256_slli_epi32(oh, 6)), _mm256_set1_epi32(128 * s.total));
      const __m256i total = _mm256_sub_epi32(isum[c], _mm256_slli_epi32(off, 5));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(sb.d, _mm256_set1_ps(y[c][i].d)), acc[c]);
    }
  }
  for (int c = 0; c < NC; ++c) store_group(dst, n0 + c, m0, acc[c]);
}

// Every column of the groups this slot claims (Q4_K, Q5_K, Q6_K): each chunk
// unpacked cg groups at a time, then column blocks of cb columns over them.
template <int32_t kType>
void kquant_batch(const loom_tensor_t* dst, const ActBlockK* act, const ColSums* sums, Exec& ex, int ith, int nth) {
  constexpr bool kQ5 = kType == LOOM_TYPE_Q5_K;
  constexpr bool kQ4 = kType == LOOM_TYPE_Q4_K || kQ5;  // the Q4_K scheme
  using U = std::conditional_t<kQ4, Q4KUnpacked, Q6KUnpacked>;
  constexpr size_t kBytes = kQ5 ? kQ5KBytes : kQ4 ? kQ4KBytes : kQ6KBytes;
  const loom_tensor_t* a = dst->src[0];
  const int64_t nsb = a->ne[0] / kSuper;
  const int64_t n_len = nrows(dst);
  const auto* base = static_cast<const uint8_t*>(a->data);
  const size_t group_bytes = static_cast<size_t>(nsb) * kBytes;
  const int64_t cg = std::max<int64_t>(1, static_cast<int64_t>(kBatchScratchBytes / (static_cast<size_t>(nsb) * sizeof(U))));
  const int64_t cb = std::max<int64_t>(
      kBatchCols, static_cast<int64_t>(kBatchActBytes / (static_cast<size_t>(nsb) * sizeof(ActBlockK))) / kBatchCols *
                      kBatchCols);
  thread_local std::vector<U> scratch;
  if (scratch.size() < static_cast<size_t>(cg * nsb)) scratch.resize(static_cast<size_t>(cg * nsb));
  for_each_chunk(a->ne[1] / kWeightGroupRows, ex, ith, nth, [&](int64_t g_begin, int64_t g_end) {
    for (int64_t g0 = g_begin; g0 < g_end; g0 += cg) {
      const int64_t ng = std::min(cg, g_end - g0);
      for (int64_t g = 0; g < ng; ++g) {
        const uint8_t* group = base + static_cast<size_t>(g0 + g) * group_bytes;
        for (int64_t i = 0; i < nsb; ++i) {
          const uint8_t* sb = group + static_cast<size_t>(i) * kBytes;
          prefetch_ahead<kBytes>(sb);
          if constexpr (kQ4) {
            unpack_q4k<kQ5>(sb, &scratch[static_cast<size_t>(g * nsb + i)]);
          } else {
            unpack_q6k(sb, &scratch[static_cast<size_t>(g * nsb + i)]);
          }
        }
      }
      for (int64_t n0 = 0; n0 < n_len; n0 += cb) {
        const int64_t n_end = std::min(n_len, n0 + cb);
        for (int64_t g = 0; g < ng; ++g) {
          const U* q = &scratch[static_cast<size_t>(g * nsb)];
          const int64_t m0 = (g0 + g) * kWeightGroupRows;
          int64_t n = n0;
          for (; n + kBatchCols <= n_end; n += kBatchCols) {
            if constexpr (kQ4) {
              q4k_tile<kBatchCols, kQ5>(dst, q, nsb, act, sums, n, m0);
            } else {
              q6k_tile<kBatchCols>(dst, q, nsb, act, sums, n, m0);
            }
          }
          for (; n < n_end; ++n) {
            if constexpr (kQ4) {
              q4k_tile<1, kQ5>(dst, q, nsb, act, sums, n, m0);
            } else {
              q6k_tile<1>(dst, q, nsb, act, sums, n, m0);
            }
          }
        }
      }
    }
  });
}

// ---------------------------------------------------------------- driver

// Superblock bytes of a group (or of each group of a pair) of kType.
template <int32_t kType>
constexpr size_t kGroupSuperBytes =
    kType == LOOM_TYPE_Q4_K ? kQ4KBytes : kType == LOOM_TYPE_Q5_K ? kQ5KBytes : kQ6KBytes;

// acc for columns [n0, n0 + NC) of the rows R reads (Rows8: one group;
// Rows16: a pair), the first pass over them streaming them in.
template <int32_t kType, int NC, typename R>
void kquant_cols(const R& rows, int64_t nsb, const ActBlockK* act, const ColSums* sums, int64_t n0,
                 typename R::F acc[NC]) {
  const ActBlockK* y[NC];
  const ColSums* cs[NC];
  for (int c = 0; c < NC; ++c) {
    acc[c] = typename R::F{};
    y[c] = act + (n0 + c) * nsb;
    cs[c] = sums + (n0 + c) * nsb;
  }
  if constexpr (kType == LOOM_TYPE_Q6_K) {
    q6k_cols<NC>(rows, nsb, n0 == 0, y, cs, acc);
  } else {
    q4k_cols<NC, kType == LOOM_TYPE_Q5_K>(rows, nsb, n0 == 0, y, cs, acc);
  }
}

// (Not inlined, nor pair_cols: inside the dispatch's lambdas, beside the
// other column counts' instantiations, GCC's register allocation of the
// 4-column pass lost ~20% at Q4_K.)
template <int32_t kType, int NC>
__attribute__((noinline)) void group_cols(const loom_tensor_t* dst, const uint8_t* group, int64_t nsb,
                                          const ActBlockK* act, const ColSums* sums, int64_t n0, int64_t m0) {
  __m256 acc[NC];
  kquant_cols<kType, NC>(Rows8<kGroupSuperBytes<kType>>{group}, nsb, act, sums, n0, acc);
  for (int c = 0; c < NC; ++c) store_group(dst, n0 + c, m0, acc[c]);
}

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512DQ__)
// Columns [n0, n0 + NC) of K-quant groups g0, g0 + 1 (rows m0 .. m0+15)
// on zmm lanes: the same sums per lane as group_cols, so the same bits.
template <int32_t kType, int NC>
__attribute__((noinline)) void pair_cols(const loom_tensor_t* dst, const uint8_t* g0, size_t group_bytes,
                                         int64_t nsb, const ActBlockK* act, const ColSums* sums, int64_t n0,
                                         int64_t m0) {
  __m512 acc[NC];
  kquant_cols<kType, NC>(Rows16<kGroupSuperBytes<kType>>{g0, g0 + group_bytes}, nsb, act, sums, n0, acc);
  for (int c = 0; c < NC; ++c) {
    store_group(dst, n0 + c, m0, _mm512_maskz_extractf32x8_ps(0xFF, acc[c], 0));
    store_group(dst, n0 + c, m0 + kWeightGroupRows, _mm512_maskz_extractf32x8_ps(0xFF, acc[c], 1));
  }
}
#endif

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512DQ__)
// Columns of the K-quant products on two groups per zmm (Q4_K, Q5_K, Q6_K; 4+
// columns, as matmul_x8.cpp decides for its types: LOOM_CPU_ZMM_PAIRS,
// else where 512-bit units are full width).
constexpr int64_t kPairMinCols = 4;
inline bool pairs_on() {
  static const bool on = common::plugin_env_flag("LOOM_CPU_ZMM_PAIRS", !common::cpu_features().split_avx512);
  return on;
}
#endif

template <int32_t kType>
void mul_mat_type(const loom_tensor_t* dst, const ActBlockK* act, Exec& ex, int ith, int nth) {
  constexpr size_t kBytes = kGroupSuperBytes<kType>;
  const loom_tensor_t* a = dst->src[0];
  const int64_t nsb = a->ne[0] / kSuper;
  const int64_t n_len = nrows(dst);  // A is 2-D: every batch of B shares it
  thread_local std::vector<ColSums> sums;
  sums.resize(static_cast<size_t>(n_len * nsb));
  for (int64_t b = 0; b < n_len * nsb; ++b) col_sums(kType, act[b], &sums[static_cast<size_t>(b)]);
  if constexpr (kBatch) {
    if (n_len >= kBatchMinCols) {
      kquant_batch<kType>(dst, act, sums.data(), ex, ith, nth);
      return;
    }
  }
  const auto* base = static_cast<const uint8_t*>(a->data);
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512DQ__)
  const int64_t groups = a->ne[1] / kWeightGroupRows;
  if (n_len >= kPairMinCols && groups >= 2 && pairs_on()) {
    const size_t group_bytes = static_cast<size_t>(nsb) * kBytes;
    for_each_item((groups + 1) / 2, ex, ith, nth, [&](int64_t p) {
      const int64_t g = 2 * p;
      const uint8_t* group = base + static_cast<size_t>(g) * group_bytes;
      const int64_t m0 = g * kWeightGroupRows;
      if (g + 1 < groups) {
        column_passes<kCols>(0, n_len, [&](auto nc, int64_t c) {
          pair_cols<kType, nc>(dst, group, group_bytes, nsb, act, sums.data(), c, m0);
        });
      } else {
        column_passes<kCols>(0, n_len, [&](auto nc, int64_t c) {
          group_cols<kType, nc>(dst, group, nsb, act, sums.data(), c, m0);
        });
      }
    });
    return;
  }
#endif
  for_each_group(a->ne[1], ex, ith, nth, [&](int64_t g) {
    const uint8_t* group = base + static_cast<size_t>(g * nsb) * kBytes;
    const int64_t m0 = g * kWeightGroupRows;
    column_passes<kCols>(0, n_len, [&](auto nc, int64_t c) {
      group_cols<kType, nc>(dst, group, nsb, act, sums.data(), c, m0);
    });
  });
}

}  // namespace

void mul_mat_kquant_x8(const loom_tensor_t* dst, const ActBlockK* act, Exec& ex, int ith, int nth) {
  switch (dst->src[0]->type) {
    case LOOM_TYPE_Q4_K: mul_mat_type<LOOM_TYPE_Q4_K>(dst, act, ex, ith, nth); break;
    case LOOM_TYPE_Q5_K: mul_mat_type<LOOM_TYPE_Q5_K>(dst, act, ex, ith, nth); break;
    default: mul_mat_type<LOOM_TYPE_Q6_K>(dst, act, ex, ith, nth); break;
  }
}

}  // namespace loom::cpu

#else

namespace loom::cpu {
void mul_mat_kquant_x8(const loom_tensor_t*, const ActBlockK*, Exec&, int, int) {}
}  // namespace loom::cpu

#endif  // LOOM_CPU_INT8_DOT
