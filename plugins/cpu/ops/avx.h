// x86 vector helpers shared by the AVX2 / AVX-512 kernels (matmul_int8,
// matmul_x8, matmul_gemm). Include only in code built with AVX2 + FMA.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace loom::cpu {

// Sum of the 8 lanes.
inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// acc + per int32 lane: the sum of 4 products u (unsigned bytes) x s
// (signed bytes). AVX512-VNNI / AVX-VNNI: one vpdpbusd; AVX2: maddubs +
// madd (exact while each pair of products fits int16, as for |u| <= 128).
inline __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, u, s);
#elif defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

}  // namespace loom::cpu
