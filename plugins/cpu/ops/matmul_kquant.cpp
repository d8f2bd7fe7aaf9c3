// The ABI 1.2 weight types' MUL_MAT driver: B quantized once per node (to
// ActBlockK for the K-quants, to the int8 path's ActBlock for Q4_1 / Q5_0 /
// Q5_1 / IQ4_NL), then every thread's rows of A against it. As on the int8
// path, for at most kQuantSmallN rows of B (decode) each slot quantizes all of
// B into its own slice, else one parallel run quantizes B and a second one
// runs the dots (run_on_quantized_b).
#include "ops/matmul_kquant.h"
#include "weight_layout.h"

namespace loom::cpu {

bool kquant_type(int32_t type) {
  switch (type) {
    case LOOM_TYPE_Q4_1:
    case LOOM_TYPE_Q5_0:
    case LOOM_TYPE_Q5_1:
    case LOOM_TYPE_IQ4_NL:
      return true;
    default:
      return kquant_superblock(type);
  }
}

bool kquant_superblock(int32_t type) {
  return type == LOOM_TYPE_Q2_K || type == LOOM_TYPE_Q3_K || type == LOOM_TYPE_Q4_K || type == LOOM_TYPE_Q5_K ||
         type == LOOM_TYPE_Q6_K || type == LOOM_TYPE_IQ4_XS;
}

}  // namespace loom::cpu

#if LOOM_CPU_INT8_DOT

#include "ops/avx.h"

namespace loom::cpu {
namespace {

constexpr int kSuper = 256;

// The 16 lanes' sums of s[0..3] (4 x 8 int32 lanes, one group of 16
// elements per pair of vectors): [sum(s0), sum(s1), sum(s2), sum(s3)].
inline __m128i group_sums(__m256i s0, __m256i s1, __m256i s2, __m256i s3) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s0, s1), _mm256_hadd_epi32(s2, s3));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// k floats (k % 256 == 0) -> k / 256 blocks.
void quantize_row_k(const float* x, int64_t k, ActBlockK* out) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t i = 0; i < k / kSuper; ++i) {
    const float* p = x + i * kSuper;
    __m256 amax = _mm256_setzero_ps();
    __m256 nan = _mm256_setzero_ps();
    for (int j = 0; j < kSuper / 8; ++j) {
      const __m256 v = _mm256_loadu_ps(p + 8 * j);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    float d = _mm_cvtss_f32(m) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (_mm256_movemask_ps(nan) != 0) d = __builtin_nanf("");
    out[i].d = d;
    const __m256 idv = _mm256_set1_ps(id);
    __m256i g[16];  // per group of 16 elements: the two vectors added lane-wise
    for (int j = 0; j < kSuper / 32; ++j) {
      __m256i q[4];
      for (int t = 0; t < 4; ++t) q[t] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p + 32 * j + 8 * t), idv));
      g[2 * j] = _mm256_add_epi32(q[0], q[1]);
      g[2 * j + 1] = _mm256_add_epi32(q[2], q[3]);
      const __m256i q01 = _mm256_packs_epi32(q[0], q[1]);
      const __m256i q23 = _mm256_packs_epi32(q[2], q[3]);
      const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q01, q23), order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[i].qs + 32 * j), q8);
    }
    const __m128i s0 = group_sums(g[0], g[1], g[2], g[3]);
    const __m128i s1 = group_sums(g[4], g[5], g[6], g[7]);
    const __m128i s2 = group_sums(g[8], g[9], g[10], g[11]);
    const __m128i s3 = group_sums(g[12], g[13], g[14], g[15]);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[i].bsums), _mm_packs_epi32(s0, s1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[i].bsums + 8), _mm_packs_epi32(s2, s3));
  }
}


}  // namespace

void quantize_act_rows_k(const loom_tensor_t* b, int64_t r0, int64_t r1, ActBlockK* act) {
  const int64_t nblk = b->ne[0] / kSuper;
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(b, r, &i1, &i2, &i3);
    quantize_row_k(reinterpret_cast<const float*>(row_ptr(b, i1, i2, i3)), b->ne[0], act + r * nblk);
  }
}

void run_mul_mat_kquant(const loom_tensor_t* dst, Exec& ex) {
  // Q4_1 / Q5_0 / Q5_1 / IQ4_NL / Q4_K / Q5_K / Q6_K may lie in groups of 8 rows.
  const bool repacked = is_repacked(dst->src[0]);
  if (kquant_superblock(dst->src[0]->type)) {
    run_on_quantized_b<ActBlockK>(dst, ex, quantize_act_rows_k, [&](const ActBlockK* act, int ith, int nth) {
      if (repacked) {
        mul_mat_kquant_x8(dst, act, ex, ith, nth);
      } else {
        mul_mat_kquant_k(dst, act, ith, nth);
      }
    });
  } else {
    run_on_quantized_b<ActBlock>(dst, ex, quantize_act_rows, [&](const ActBlock* act, int ith, int nth) {
      if (repacked) {
        mul_mat_x8(dst, act, ex, ith, nth);
      } else {
        mul_mat_kquant_32(dst, act, ith, nth);
      }
    });
  }
}

}  // namespace loom::cpu

#else  // no 8-bit dot instructions in this build: kquant_path() is false

namespace loom::cpu {
void run_mul_mat_kquant(const loom_tensor_t*, Exec&) {}
void quantize_act_rows_k(const loom_tensor_t*, int64_t, int64_t, ActBlockK*) {}
void mul_mat_kquant_k(const loom_tensor_t*, const ActBlockK*, int, int) {}
void mul_mat_kquant_32(const loom_tensor_t*, const ActBlock*, int, int) {}
}  // namespace loom::cpu

#endif
