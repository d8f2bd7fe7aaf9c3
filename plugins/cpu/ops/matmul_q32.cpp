// Dots of Q4_1 / Q5_0 / Q5_1 / IQ4_NL rows (GGUF's 32-element blocks read in
// place) with B's ActBlock columns (the int8 path's 8-bit blocks of 32).
// Each block's quants are unpacked in registers to bytes u with
// x = d * u + c: unsigned (Q4_1, Q5_1: c = m; Q5_0: u = q + 16, c = -16 d)
// or, for IQ4_NL, the signed table values (c = 0, dotted as |u| x sign(u) q
// like Q8_0). Per block and column: one exact integer dot, then
//   sum += d * d_b * isum + c * d_b * sum(q_b)
// in f32 (B's block sums come with the ActBlock). One unpacked block serves
// up to kQuantCols columns.
#include "ops/matmul_kquant.h"

#if LOOM_CPU_INT8_DOT

#include "common/quant.h"
#include "ops/avx.h"

namespace loom::cpu {
namespace {

inline __m256i bytes(int v) { return _mm256_set1_epi8(static_cast<char>(v)); }

// 16 bytes of nibbles -> 32 bytes: low nibbles (elements 0..15), then high.
inline __m256i nibbles(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i low4 = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), low4), _mm_and_si128(v, low4));
}

// Bit i of the 32-bit little-endian word at qh -> 0x10 in byte i.
inline __m256i high_bits(const uint8_t* qh) {
  uint32_t x;
  std::memcpy(&x, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(x)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), bytes(0x10));
}

struct Q41 {
  using Block = loom_block_q4_1_t;
  static constexpr bool kSigned = false;
  float d, c;
  __m256i u;
  explicit Q41(const Block& b) : d(_cvtsh_ss(b.d)), c(_cvtsh_ss(b.m)), u(nibbles(b.qs)) {}
};

struct Q50 {
  using Block = loom_block_q5_0_t;
  static constexpr bool kSigned = false;
  float d, c;
  __m256i u;
  explicit Q50(const Block& b)
      : d(_cvtsh_ss(b.d)), c(-16.0f * d), u(_mm256_or_si256(nibbles(b.qs), high_bits(b.qh))) {}
};

struct Q51 {
  using Block = loom_block_q5_1_t;
  static constexpr bool kSigned = false;
  float d, c;
  __m256i u;
  explicit Q51(const Block& b)
      : d(_cvtsh_ss(b.d)), c(_cvtsh_ss(b.m)), u(_mm256_or_si256(nibbles(b.qs), high_bits(b.qh))) {}
};

struct IQ4NL {
  using Block = loom_block_iq4_nl_t;
  static constexpr bool kSigned = true;
  float d, c = 0.0f;
  __m256i u;  // signed values
  explicit IQ4NL(const Block& b) : d(_cvtsh_ss(b.d)) {
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(common::kIq4nlValues)));
    u = _mm256_shuffle_epi8(table, nibbles(b.qs));
  }
};

// out[c] = row . column c for NC columns, nblk blocks; block i adds into
// accumulator i % kChains of its column (independent FMA chains).
template <typename T, int NC>
void dot(const typename T::Block* row, const ActBlock* const* y, int64_t nblk, float* out) {
  constexpr int kChains = NC == 1 ? 4 : NC == 2 ? 2 : 1;
  __m256 acc[NC][kChains];
  float corr[NC];
  for (int c = 0; c < NC; ++c) {
    for (int k = 0; k < kChains; ++k) acc[c][k] = _mm256_setzero_ps();
    corr[c] = 0.0f;
  }
  for (int64_t i = 0; i < nblk; ++i) {
    const T t(row[i]);
    const __m256i ua = T::kSigned ? _mm256_abs_epi8(t.u) : t.u;
    for (int c = 0; c < NC; ++c) {
      const ActBlock& yb = y[c][i];
      __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(yb.qs));
      if (T::kSigned) q = _mm256_sign_epi8(q, t.u);
      const __m256i isum = dot_u8s8(_mm256_setzero_si256(), ua, q);
      __m256& a = acc[c][i % kChains];
      a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(t.d * yb.d), a);
      if (!T::kSigned) corr[c] += t.c * yb.d * static_cast<float>(yb.sum);
    }
  }
  for (int c = 0; c < NC; ++c) {
    __m256 total = acc[c][0];
    for (int k = 1; k < kChains; ++k) total = _mm256_add_ps(total, acc[c][k]);
    out[c] = hsum_ps(total) + corr[c];
  }
}

template <typename T>
void mul_mat_type(const loom_tensor_t* dst, const ActBlock* act, int ith, int nth) {
  const int64_t nblk = dst->src[0]->ne[0] / 32;
  using Block = typename T::Block;
  quant_rows_times_b<Block>(dst, act, ith, nth,
                            [nblk](const Block* const* rows, int mr, const ActBlock* const* cols, int nc,
                                   float (*out)[kQuantCols]) {
                              for (int r = 0; r < mr; ++r) {
                                switch (nc) {
                                  case 1: dot<T, 1>(rows[r], cols, nblk, out[r]); break;
                                  case 2: dot<T, 2>(rows[r], cols, nblk, out[r]); break;
                                  case 3: dot<T, 3>(rows[r], cols, nblk, out[r]); break;
                                  default: dot<T, 4>(rows[r], cols, nblk, out[r]); break;
                                }
                              }
                            });
}

}  // namespace

void mul_mat_kquant_32(const loom_tensor_t* dst, const ActBlock* act, int ith, int nth) {
  switch (dst->src[0]->type) {
    case LOOM_TYPE_Q4_1: mul_mat_type<Q41>(dst, act, ith, nth); break;
    case LOOM_TYPE_Q5_0: mul_mat_type<Q50>(dst, act, ith, nth); break;
    case LOOM_TYPE_Q5_1: mul_mat_type<Q51>(dst, act, ith, nth); break;
    default: mul_mat_type<IQ4NL>(dst, act, ith, nth); break;
  }
}

}  // namespace loom::cpu

#endif  // LOOM_CPU_INT8_DOT
