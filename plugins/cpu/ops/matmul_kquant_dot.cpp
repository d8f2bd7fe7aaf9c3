// Dots of K-quant rows (Q2_K..Q6_K, and IQ4_XS, whose 6-bit sub-block scales
// and signed levels fit the same loop; GGUF's bytes read in place) with B's
// ActBlockK columns. Per super-block of 256: each chunk of 32 quants is
// unpacked to unsigned bytes u in registers, multiplied with the activation
// bytes (maddubs: u x q -> pairs in int16, exact since u <= 63 and
// |q| <= 127) and with the chunk's sub-block scales (madd, or AVX512-VNNI's
// dpwssd: int16 pairs -> int32), all in integers; then per super-block
//   sum = d_b * (d * isum - dmin * sum_j m_j * bsums_j)
// in f32, where the min term (Q2_K, Q4_K, Q5_K) or the offset that made u
// unsigned (Q3_K u = q + 4, Q6_K u = q + 32, counted as d * offset * s_j)
// comes from B's per-16 sums. Each unpacked chunk serves up to kQuantCols
// columns (Q6_K in the avx512 variant: 64 quants per zmm register, 4 rows
// per decode call). Integer sums are exact; the f32 accumulation over
// super-blocks rounds.
#include "ops/matmul_kquant.h"

#if LOOM_CPU_INT8_DOT

#include <cstring>
#include <type_traits>

#include "common/quant.h"
#include "ops/avx.h"

// zmm kernels: AVX-512BW for the byte ops, VNNI for dpwssd (the avx512 variant).
#if defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__AVX512DQ__)
#define LOOM_KQ_ZMM 1
#endif

namespace loom::cpu {
namespace {

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m256i bytes(int v) { return _mm256_set1_epi8(static_cast<char>(v)); }

#ifdef LOOM_KQ_ZMM
// The masked forms: GCC 12 warns about the undefined source register of
// the plain _mm512_broadcast_i64x4 / inserti64x4 / cvtepi32_ps.
inline __m512i dup256(__m256i v) { return _mm512_maskz_broadcast_i64x4(0xFF, v); }
inline __m512i join256(__m256i lo, __m256i hi) {
  const __m512i a = _mm512_maskz_broadcast_i64x4(0xFF, lo);
  return _mm512_mask_inserti64x4(a, 0xFF, a, hi, 1);
}
inline __m512 to_ps(__m512i v) { return _mm512_maskz_cvtepi32_ps(0xFFFF, v); }
#endif

// All 16 int16 lanes = lane j of v, where v = [s0..s7 | s0..s7].
inline __m256i bcast16(__m256i v, int j) { return _mm256_shuffle_epi8(v, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * j))); }
// [s(2j) x 8 | s(2j+1) x 8] from v = [s0..s7 | s0..s7]: the scales of a
// chunk of 32 whose halves have their own scale.
inline __m256i pair16(__m256i v, int j) {
  return _mm256_shuffle_epi8(v, _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(0x0302 + 0x0404 * j)),
                                                 _mm_set1_epi16(static_cast<short>(0x0100 + 0x0404 * j))));
}
// 8 signed bytes of scales at p, widened to int16, in both 128-bit lanes.
inline __m256i scales8_s(const int8_t* p) {
  return _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
// v shifted right by s bits (left by -s) in 16-bit lanes.
inline __m256i shift16(__m256i v, int s) {
  return s >= 0 ? _mm256_srl_epi16(v, _mm_cvtsi32_si128(s)) : _mm256_sll_epi16(v, _mm_cvtsi32_si128(-s));
}

// acc + (u . q per pair, int16) . sc per pair of int16 lanes.
inline __m256i dot_scaled(__m256i acc, __m256i u, __m256i q, __m256i sc) {
  const __m256i p = _mm256_maddubs_epi16(u, q);
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpwssd_epi32(acc, p, sc);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
#endif
}

// Each type: explicit T(block) decodes the scales; group(g, u) unpacks
// chunks g * kPer .. g * kPer + kPer - 1 (elements 32 t .. 32 t + 31 of
// chunk t) as unsigned bytes, called for g = 0, 1, ... in order; scale(t)
// gives chunk t's 16 int16 scale lanes (first 8 for its elements 0..15);
// mins(bsums) the int32 lanes whose sum is the min / offset term, which
// the result subtracts times dmin.

// Q4_K / Q5_K's scales: 8 sub-blocks of 32, 6-bit scales and mins packed
// in 12 bytes; x = d sc q - dmin m.
struct KScales {
  float d, dmin;
  __m256i sc, mn;  // [sc0..sc7 | sc0..sc7]; [m0, m0, m1, m1, .., m7, m7]
  // blk: the block's first 16 bytes (d, dmin, the 12 packed scales).
  explicit KScales(const void* blk) {
    int32_t dd;
    std::memcpy(&dd, blk, 4);
    const __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128(dd));
    d = _mm_cvtss_f32(dm);
    dmin = _mm_cvtss_f32(_mm_movehdup_ps(dm));
    const __m128i sm = unpack(_mm_loadu_si128(static_cast<const __m128i*>(blk)));
    sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    mn = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
  }
  // [d|dmin, u0, u1, u2] (the 12 packed bytes as 3 words) -> 8 scales
  // (bytes 0..7) and 8 mins (bytes 8..15): common::k_scale_min for every j
  // at once, in vector lanes.
  static __m128i unpack(__m128i v) {
    const __m128i k1 = _mm_set1_epi32(0x3f3f3f3f), k2 = _mm_set1_epi32(0x0f0f0f0f), k3 = _mm_set1_epi32(0x03030303);
    const __m128i a = _mm_shuffle_epi32(v, _MM_SHUFFLE(3, 2, 3, 1));  // u0 u2 u1 u2
    const __m128i b = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 1, 1));  // u0 u0 u1 u1
    const __m128i low = _mm_and_si128(a, k1);                          // sc0..3 . m0..3 .
    const __m128i high = _mm_or_si128(_mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)), k2),
                                      _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(b, 6), k3), 4));  // . sc4..7 . m4..7
    return _mm_blend_epi32(low, high, 0xA);
  }
  __m256i scale(int t) const { return bcast16(sc, t); }
  __m256i mins(const int16_t* bsums) const { return _mm256_madd_epi16(mn, load256(bsums)); }
};

// Q4_K: chunk 2g is the low nibbles of qs[32 g ..], 2g + 1 the high ones.
struct Q4K : KScales {
  using Block = loom_block_q4_k_t;
  static constexpr int kGroups = 4, kPer = 2;
  const Block& b;
  explicit Q4K(const Block& blk) : KScales(&blk), b(blk) {}
  void group(int g, __m256i* u) const {
    const __m256i q = load256(b.qs + 32 * g);
    u[0] = _mm256_and_si256(q, bytes(0x0F));
    u[1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), bytes(0x0F));
  }
};

// Q5_K: Q4_K plus a fifth bit per quant (qh bit 2g of byte l: element l of
// chunk 2g; bit 2g + 1: of chunk 2g + 1).
struct Q5K : KScales {
  using Block = loom_block_q5_k_t;
  static constexpr int kGroups = 4, kPer = 2;
  const Block& b;
  __m256i hb;  // qh >> 2g (per 16-bit lane; only each byte's bits 0, 1 are read)
  explicit Q5K(const Block& blk) : KScales(&blk), b(blk), hb(load256(blk.qh)) {}
  void group(int g, __m256i* u) {
    const __m256i q = load256(b.qs + 32 * g);
    const __m256i h4 = bytes(0x10);
    u[0] = _mm256_or_si256(_mm256_and_si256(q, bytes(0x0F)), _mm256_and_si256(_mm256_slli_epi16(hb, 4), h4));
    u[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), bytes(0x0F)),
                           _mm256_and_si256(_mm256_slli_epi16(hb, 3), h4));
    hb = _mm256_srli_epi16(hb, 2);
  }
};

// Q6_K: 16 sub-blocks of 16, int8 scales; x = d sc (q - 32), q 6 bits
// (low 4 in ql, high 2 in qh); u = q.
struct Q6K {
  using Block = loom_block_q6_k_t;
  static constexpr int kGroups = 2, kPer = 4;
  const Block& b;
  float d, dmin;
  __m256i sc[2], all;  // scales 8h..8h+7 in both lanes; all 16
  explicit Q6K(const Block& blk) : b(blk), d(_cvtsh_ss(blk.d)), dmin(32.0f * d) {
    sc[0] = scales8_s(blk.scales);
    sc[1] = scales8_s(blk.scales + 8);
    all = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
  }
  void group(int h, __m256i* u) const {
    const __m256i l0 = load256(b.ql + 64 * h), l1 = load256(b.ql + 64 * h + 32), qh = load256(b.qh + 32 * h);
    const __m256i m4 = bytes(0x0F), m30 = bytes(0x30);
    u[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
    u[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
    u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, m30));
    u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                           _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
  }
  __m256i scale(int t) const { return pair16(sc[t / 4], t % 4); }
  __m256i mins(const int16_t* bsums) const { return _mm256_madd_epi16(all, load256(bsums)); }
#ifdef LOOM_KQ_ZMM
  static constexpr int kPer512 = 2;
  // Elements 128h + 64j .. + 63 (j = 0, 1): [u0 | u1], [u2 | u3] of group().
  void group512(int h, __m512i* u) const {
    const __m512i l = _mm512_loadu_si512(b.ql + 64 * h);               // ql0 | ql1
    const __m512i qh = dup256(load256(b.qh + 32 * h));                  // qh | qh
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    const __m512i sh01 = join256(_mm256_set1_epi16(4), _mm256_set1_epi16(2));
    const __m512i sh23 = join256(_mm256_setzero_si256(), _mm256_set1_epi16(2));
    // a | (b & c): ternary-logic immediate 0xF8.
    u[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(l, m4), _mm512_sllv_epi16(qh, sh01), m30, 0xF8);
    u[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), _mm512_srlv_epi16(qh, sh23),
                                     m30, 0xF8);
  }
  // Scales of elements 64p .. 64p + 63: s(4p) .. s(4p + 3), 8 lanes each.
  __m512i scale512(int p) const {
    const __m512i idx = join256(
        _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(4 * p + 1)), _mm_set1_epi16(static_cast<short>(4 * p))),
        _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(4 * p + 3)), _mm_set1_epi16(static_cast<short>(4 * p + 2))));
    return _mm512_permutexvar_epi16(idx, dup256(all));
  }
#endif
};

// Q3_K: 16 sub-blocks of 16, 6-bit signed scales; x = d sc q, q in -4..3 =
// 2 low bits (qs, plane j of each 32 bytes) - 4 unless the hmask bit is set;
// u = q + 4.
struct Q3K {
  using Block = loom_block_q3_k_t;
  static constexpr int kGroups = 2, kPer = 4;
  const Block& b;
  float d, dmin;
  __m256i sc[2], all;
  explicit Q3K(const Block& blk) : b(blk), d(_cvtsh_ss(blk.d)), dmin(4.0f * d) {
    const __m128i s = scales(blk.scales);
    sc[0] = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(s));
    sc[1] = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_srli_si128(s, 8)));
    all = _mm256_cvtepi8_epi16(s);
  }
  // The 16 6-bit scales (common::q3_k_scales, minus 32) in vector lanes:
  // scale j's low 4 bits are nibble j / 8 of byte j % 8, its high 2 bits
  // bits 2 (j / 4) .. of byte 8 + j % 4.
  static __m128i scales(const uint8_t* p) {
    int32_t w2;
    std::memcpy(&w2, p + 8, 4);
    const __m128i w01 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));  // 8 + 4 bytes: none past the 12
    const __m128i lo = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(w01, _MM_SHUFFLE(1, 0, 1, 0)), _mm_setr_epi32(0, 0, 4, 4)),
                                     _mm_set1_epi8(0x0F));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(w2), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(0x03));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi32(hi, 4)), _mm_set1_epi8(32));
  }
  void group(int h, __m256i* u) const {
    const __m256i q = load256(b.qs + 32 * h), hm = load256(b.hmask);
    for (int j = 0; j < kPer; ++j) {
      // hmask bit 4h + j of byte l -> bit 2 (value 4).
      u[j] = _mm256_or_si256(_mm256_and_si256(shift16(q, 2 * j), bytes(3)),
                             _mm256_and_si256(shift16(hm, 4 * h + j - 2), bytes(4)));
    }
  }
  __m256i scale(int t) const { return pair16(sc[t / 4], t % 4); }
  __m256i mins(const int16_t* bsums) const { return _mm256_madd_epi16(all, load256(bsums)); }
};

// Q2_K: 16 sub-blocks of 16, 4-bit scales and mins; x = d sc q - dmin m,
// q = 2 bits (plane j of each 32 bytes of qs).
struct Q2K {
  using Block = loom_block_q2_k_t;
  static constexpr int kGroups = 2, kPer = 4;
  const Block& b;
  float d, dmin;
  __m256i sc[2], mn;
  explicit Q2K(const Block& blk) : b(blk), d(_cvtsh_ss(blk.d)), dmin(_cvtsh_ss(blk.dmin)) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales));
    const __m128i lo = _mm_and_si128(raw, _mm_set1_epi8(0x0F));
    sc[0] = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(lo));
    sc[1] = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_srli_si128(lo, 8)));
    mn = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F)));
  }
  void group(int h, __m256i* u) const {
    const __m256i q = load256(b.qs + 32 * h);
    for (int j = 0; j < kPer; ++j) u[j] = _mm256_and_si256(shift16(q, 2 * j), bytes(3));
  }
  __m256i scale(int t) const { return pair16(sc[t / 4], t % 4); }
  __m256i mins(const int16_t* bsums) const { return _mm256_madd_epi16(mn, load256(bsums)); }
};

// IQ4_XS: 8 sub-blocks of 32, 6-bit scales; x = d (ls - 32) v, v a signed
// level of IQ4_NL's table (common::kIq4nlValues). No min and no offset: the
// quants are signed, so a group yields |v| as u and v itself as the sign
// that B's bytes take (psignb), as the int8 path dots Q8_0 (|v| <= 127, so
// maddubs' int16 pairs stay exact). Group h holds chunks 4h .. 4h + 3; chunk
// t is the 16 bytes qs[16 t ..], low nibbles its elements 0..15, high ones
// 16..31.
struct IQ4XS {
  using Block = loom_block_iq4_xs_t;
  static constexpr int kGroups = 2, kPer = 4;
  static constexpr bool kSigned = true;
  const Block& b;
  float d, dmin = 0.0f;
  __m256i sc;  // [ls0 - 32 .. ls7 - 32 | the same], int16
  explicit IQ4XS(const Block& blk) : b(blk), d(_cvtsh_ss(blk.d)) {
    // ls(s): bits 4s.. of the 32-bit word scales_l, bits 2s.. of scales_h.
    uint32_t lo;
    std::memcpy(&lo, blk.scales_l, 4);
    const __m256i l = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(lo)),
                                                         _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                       _mm256_set1_epi32(0x0F));
    const __m256i h = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(blk.scales_h),
                                                         _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                                       _mm256_set1_epi32(3));
    const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(l, _mm256_slli_epi32(h, 4)), _mm256_set1_epi32(32));
    const __m128i s16 = _mm_packs_epi32(_mm256_castsi256_si128(ls), _mm256_extracti128_si256(ls, 1));
    sc = _mm256_broadcastsi128_si256(s16);
  }
  static __m256i table() {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(common::kIq4nlValues)));
  }
  // 16 bytes of nibbles -> the 32 levels of one chunk, in element order.
  static __m256i levels(const uint8_t* qs, __m256i tab) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m4 = _mm_set1_epi8(0x0F);
    return _mm256_shuffle_epi8(tab, _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4)));
  }
  void group(int h, __m256i* u, __m256i* sign) const {
    const __m256i tab = table();
    for (int j = 0; j < kPer; ++j) {
      sign[j] = levels(b.qs + 64 * h + 16 * j, tab);
      u[j] = _mm256_abs_epi8(sign[j]);
    }
  }
  __m256i scale(int t) const { return bcast16(sc, t); }
  __m256i mins(const int16_t*) const { return _mm256_setzero_si256(); }
#ifdef LOOM_KQ_ZMM
  static constexpr int kPer512 = 2;
  // Elements 128h + 64j .. + 63 (chunks 4h + 2j, 4h + 2j + 1): |v| and the
  // lanes where v < 0 (nibbles 0..7 are the table's negative levels).
  void group512(int h, __m512i* u, __mmask64* neg) const {
    const __m512i abs_tab = _mm512_abs_epi8(
        _mm512_maskz_broadcast_i32x4(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(common::kIq4nlValues))));
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int j = 0; j < kPer512; ++j) {
      const __m256i q = load256(b.qs + 64 * h + 32 * j);
      const __m256i lo = _mm256_and_si256(q, _mm256_set1_epi8(0x0F));
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(0x0F));
      // [lo 0..15 | lo 16..31 | hi 0..15 | hi 16..31] -> [lo, hi] of each chunk.
      const __m512i both = join256(lo, hi);
      const __m512i nib = _mm512_maskz_shuffle_i64x2(0xFF, both, both, _MM_SHUFFLE(3, 1, 2, 0));
      neg[j] = _mm512_testn_epi8_mask(nib, _mm512_set1_epi8(8));
      u[j] = _mm512_shuffle_epi8(abs_tab, _mm512_and_si512(nib, m4));
    }
  }
  // Scales of elements 64p .. 64p + 63: s(2p) in the low 16 lanes, s(2p + 1) in the high.
  __m512i scale512(int p) const {
    const __m512i idx = join256(_mm256_set1_epi16(static_cast<short>(2 * p)), _mm256_set1_epi16(static_cast<short>(2 * p + 1)));
    return _mm512_permutexvar_epi16(idx, dup256(sc));
  }
#endif
};

// Whether T's quants are signed (IQ4_XS): its groups also give the signs
// B's bytes take, and it has no min / offset term.
template <typename T, typename = void>
struct IsSigned : std::false_type {};
template <typename T>
struct IsSigned<T, decltype(void(T::kSigned))> : std::bool_constant<T::kSigned> {};

// out[c] = row . column c for NC columns, nsb super-blocks. kChains
// independent integer accumulators per column (chunk t adds into chain
// t % kChains): one chain of dpwssd would wait its latency per chunk.
template <typename T, int NC>
void dot(const typename T::Block* row, const ActBlockK* const* y, int64_t nsb, float* out) {
  constexpr int kChains = NC == 1 ? 4 : NC == 2 ? 2 : 1;
  __m256 acc[NC], accm[NC];
  for (int c = 0; c < NC; ++c) acc[c] = accm[c] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nsb; ++i) {
    T t(row[i]);
    __m256i isum[NC][kChains];
    for (int c = 0; c < NC; ++c)
      for (int k = 0; k < kChains; ++k) isum[c][k] = _mm256_setzero_si256();
    for (int g = 0; g < T::kGroups; ++g) {
      __m256i u[T::kPer], sign[T::kPer];
      if constexpr (IsSigned<T>::value) {
        t.group(g, u, sign);
      } else {
        t.group(g, u);
      }
      for (int j = 0; j < T::kPer; ++j) {
        const int ch = g * T::kPer + j;
        const __m256i s = t.scale(ch);
        for (int c = 0; c < NC; ++c) {
          __m256i& sum = isum[c][ch % kChains];
          __m256i q = load256(y[c][i].qs + 32 * ch);
          if constexpr (IsSigned<T>::value) q = _mm256_sign_epi8(q, sign[j]);
          sum = dot_scaled(sum, u[j], q, s);
        }
      }
    }
    for (int c = 0; c < NC; ++c) {
      const ActBlockK& yb = y[c][i];
      __m256i total = isum[c][0];
      for (int k = 1; k < kChains; ++k) total = _mm256_add_epi32(total, isum[c][k]);
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_set1_ps(t.d * yb.d), acc[c]);
      if constexpr (!IsSigned<T>::value) {
        accm[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t.mins(yb.bsums)), _mm256_set1_ps(t.dmin * yb.d), accm[c]);
      }
    }
  }
  for (int c = 0; c < NC; ++c) out[c] = hsum_ps(_mm256_sub_ps(acc[c], accm[c]));
}

#ifdef LOOM_KQ_ZMM
template <typename T, typename = void>
struct HasZmm : std::false_type {};
template <typename T>
struct HasZmm<T, decltype(void(T::kPer512))> : std::true_type {};

// dot() with 64 elements per vector (AVX-512BW): about half the
// instructions, for the types whose chunks pair up in zmm registers (Q4_K,
// Q6_K); MR rows at a time (independent chains, one reduction for all).
template <typename T, int MR, int NC>
void dot512(const typename T::Block* const* rows, const ActBlockK* const* y, int64_t nsb,
            float (*out)[kQuantCols]) {
  constexpr int kChains = MR * NC == 1 ? 2 : 1;
  __m512 acc[MR][NC];
  __m256 accm[MR][NC];
  for (int r = 0; r < MR; ++r) {
    for (int c = 0; c < NC; ++c) {
      acc[r][c] = _mm512_setzero_ps();
      accm[r][c] = _mm256_setzero_ps();
    }
  }
  for (int64_t i = 0; i < nsb; ++i) {
    for (int r = 0; r < MR; ++r) {
      T t(rows[r][i]);
      __m512i isum[NC][kChains];
      for (int c = 0; c < NC; ++c)
        for (int k = 0; k < kChains; ++k) isum[c][k] = _mm512_setzero_si512();
      for (int g = 0; g < T::kGroups; ++g) {
        __m512i u[T::kPer512];
        __mmask64 neg[T::kPer512];
        if constexpr (IsSigned<T>::value) {
          t.group512(g, u, neg);
        } else {
          t.group512(g, u);
        }
        for (int j = 0; j < T::kPer512; ++j) {
          const int p = g * T::kPer512 + j;
          const __m512i s = t.scale512(p);
          for (int c = 0; c < NC; ++c) {
            __m512i& sum = isum[c][p % kChains];
            __m512i q = _mm512_loadu_si512(y[c][i].qs + 64 * p);
            if constexpr (IsSigned<T>::value) q = _mm512_mask_sub_epi8(q, neg[j], _mm512_setzero_si512(), q);
            sum = _mm512_dpwssd_epi32(sum, _mm512_maddubs_epi16(u[j], q), s);
          }
        }
      }
      for (int c = 0; c < NC; ++c) {
        const ActBlockK& yb = y[c][i];
        __m512i total = isum[c][0];
        for (int k = 1; k < kChains; ++k) total = _mm512_add_epi32(total, isum[c][k]);
        acc[r][c] = _mm512_fmadd_ps(to_ps(total), _mm512_set1_ps(t.d * yb.d), acc[r][c]);
        if constexpr (!IsSigned<T>::value) {
          accm[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t.mins(yb.bsums)), _mm256_set1_ps(t.dmin * yb.d), accm[r][c]);
        }
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int c = 0; c < NC; ++c) {
      const __m256 a = _mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xFF, acc[r][c], 0), _mm512_maskz_extractf32x8_ps(0xFF, acc[r][c], 1));
      out[r][c] = hsum_ps(_mm256_sub_ps(a, accm[r][c]));
    }
  }
}
#endif

// Rows x columns through the zmm dot where the build and the type have it
// (4 rows at a time for one column), else dot() row by row.
template <typename T, int NC>
void dot_rows(const typename T::Block* const* rows, int mr, const ActBlockK* const* y, int64_t nsb,
              float (*out)[kQuantCols]) {
#ifdef LOOM_KQ_ZMM
  if constexpr (HasZmm<T>::value) {
    if (NC == 1 && mr == kQuantRows) {
      dot512<T, kQuantRows, 1>(rows, y, nsb, out);
    } else {
      for (int r = 0; r < mr; ++r) dot512<T, 1, NC>(rows + r, y, nsb, out + r);
    }
    return;
  }
#endif
  for (int r = 0; r < mr; ++r) dot<T, NC>(rows[r], y, nsb, out[r]);
}

template <typename T>
void mul_mat_type(const loom_tensor_t* dst, const ActBlockK* act, int ith, int nth) {
  const int64_t nsb = dst->src[0]->ne[0] / LOOM_QK_K;
  using Block = typename T::Block;
  quant_rows_times_b<Block>(
      dst, act, ith, nth,
      [nsb](const Block* const* rows, int mr, const ActBlockK* const* cols, int nc, float (*out)[kQuantCols]) {
        switch (nc) {
          case 1: dot_rows<T, 1>(rows, mr, cols, nsb, out); break;
          case 2: dot_rows<T, 2>(rows, mr, cols, nsb, out); break;
          case 3: dot_rows<T, 3>(rows, mr, cols, nsb, out); break;
          default: dot_rows<T, 4>(rows, mr, cols, nsb, out); break;
        }
      });
}

}  // namespace

void mul_mat_kquant_k(const loom_tensor_t* dst, const ActBlockK* act, int ith, int nth) {
  switch (dst->src[0]->type) {
    case LOOM_TYPE_Q2_K: mul_mat_type<Q2K>(dst, act, ith, nth); break;
    case LOOM_TYPE_Q3_K: mul_mat_type<Q3K>(dst, act, ith, nth); break;
    case LOOM_TYPE_Q4_K: mul_mat_type<Q4K>(dst, act, ith, nth); break;
    case LOOM_TYPE_Q5_K: mul_mat_type<Q5K>(dst, act, ith, nth); break;
    case LOOM_TYPE_IQ4_XS: mul_mat_type<IQ4XS>(dst, act, ith, nth); break;
    default: mul_mat_type<Q6K>(dst, act, ith, nth); break;
  }
}

}  // namespace loom::cpu

#endif  // LOOM_CPU_INT8_DOT
