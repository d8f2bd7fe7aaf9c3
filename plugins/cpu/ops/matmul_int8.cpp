// MUL_MAT of Q8_0 / Q4_0 weights (A) against activations (B) quantized to
// 8-bit blocks (ActBlock), with integer dot products: per pair of blocks,
// sum_i |a_i| * (sign(a_i) * b_i) in 8x8-bit multiply-adds — AVX2's maddubs +
// madd, or AVX512-VNNI / AVX-VNNI's dpbusd — then one f32 multiply-add by
// d_a * d_b. The integer part is exact, so the result is sum_k a_k * b'_k with
// b' = B rounded to 8 bits per block of 32 (relative error ~1/254 of the
// block's largest |b|) and f32 accumulation over blocks.
//
// Work is split over (tile of kTileRows rows of A, i2, i3); each tile of rows
// runs against every column of B in tiles of kTileCols, accumulators in
// registers. B is quantized once per node: for at most kQuantSmallN rows each
// slot quantizes all of B into its own slice, else one parallel run
// quantizes B and a second one runs the dots (run_on_quantized_b).
#include "ops/matmul.h"
#include "ops/matmul_kquant.h"
#include "weight_layout.h"

#if LOOM_CPU_INT8_DOT

#include "ops/avx.h"

#include <algorithm>
#include <cstring>

namespace loom::cpu {
namespace {

constexpr int kBlock = 32;
constexpr int kTileRows = 4;
#ifdef __AVX512VL__
constexpr int kTileCols = 4;  // 32 vector registers: 16 accumulators
#else
constexpr int kTileCols = 2;  // 16 vector registers: 8 accumulators
#endif

// A block's 32 quants as signed bytes in element order, and its scale.
inline __m256i unpack(const loom_block_q8_0_t& b, float* d) {
  *d = _cvtsh_ss(b.d);
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
}
inline __m256i unpack(const loom_block_q4_0_t& b, float* d) {
  *d = _cvtsh_ss(b.d);
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  const __m128i low4 = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(v, low4);                      // elements 0..15
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), low4);  // elements 16..31
  return _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(8));
}

// out[r][c] = sum over nblk blocks of A row r . B column c.
template <typename Block, int MR, int NR>
inline void tile(const Block* const* a, const ActBlock* const* b, int64_t nblk, float out[][kTileCols]) {
  __m256 acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nblk; ++i) {
    for (int r = 0; r < MR; ++r) {
      float da;
      const __m256i x = unpack(a[r][i], &da);
      const __m256i ax = _mm256_abs_epi8(x);
      const __m256 dav = _mm256_set1_ps(da);
      for (int c = 0; c < NR; ++c) {
        const ActBlock& y = b[c][i];
        const __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs)), x);
        const __m256 p = _mm256_cvtepi32_ps(dot_u8s8(_mm256_setzero_si256(), ax, sy));
        acc[r][c] = _mm256_fmadd_ps(p, _mm256_mul_ps(dav, _mm256_broadcast_ss(&y.d)), acc[r][c]);
      }
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) out[r][c] = hsum_ps(acc[r][c]);
}

// k floats (k % 32 == 0) -> k / 32 blocks.
void quantize_row(const float* x, int64_t k, ActBlock* out) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t i = 0; i < k / kBlock; ++i) {
    const float* p = x + i * kBlock;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    __m256 nan = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(p + 8 * j);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v[j]));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v[j], v[j], _CMP_UNORD_Q));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    float d = _mm_cvtss_f32(m) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (_mm256_movemask_ps(nan) != 0) d = __builtin_nanf("");
    out[i].d = d;
    const __m256 idv = _mm256_set1_ps(id);
    __m256i q[4];
    for (int j = 0; j < 4; ++j) q[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], idv));
    const __m256i qsum = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    out[i].sum = hsum_epi32(qsum);
    const __m256i q01 = _mm256_packs_epi32(q[0], q[1]);
    const __m256i q23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q01, q23), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[i].qs), q8);
  }
}

inline void store(const loom_tensor_t* dst, int64_t m, int64_t n, int64_t i2, int64_t i3, float v) {
  std::memcpy(elem_ptr(dst, m, n, i2, i3), &v, 4);
}

// Rows [m0, m0 + MR) of A (batch a2, a3) against every column of B (batch
// i2, i3); act_rows(n) is column n's blocks.
template <typename Block, int MR, typename ActRow>
void rows_times_b(const loom_tensor_t* dst, const loom_tensor_t* a, int64_t m0, int64_t i2, int64_t i3, int64_t a2,
                  int64_t a3, ActRow act_row) {
  const int64_t nblk = a->ne[0] / kBlock;
  const int64_t n_len = dst->ne[1];
  const Block* arows[MR];
  for (int r = 0; r < MR; ++r) arows[r] = reinterpret_cast<const Block*>(row_ptr(a, m0 + r, a2, a3));
  float out[MR][kTileCols];
  int64_t n = 0;
  for (; n + kTileCols <= n_len; n += kTileCols) {
    const ActBlock* bcols[kTileCols];
    for (int c = 0; c < kTileCols; ++c) bcols[c] = act_row(n + c);
    tile<Block, MR, kTileCols>(arows, bcols, nblk, out);
    for (int r = 0; r < MR; ++r)
      for (int c = 0; c < kTileCols; ++c) store(dst, m0 + r, n + c, i2, i3, out[r][c]);
  }
  for (; n < n_len; ++n) {
    const ActBlock* bcol = act_row(n);
    tile<Block, MR, 1>(arows, &bcol, nblk, out);
    for (int r = 0; r < MR; ++r) store(dst, m0 + r, n, i2, i3, out[r][0]);
  }
}

template <typename Block>
void mul_mat_blocks(const loom_tensor_t* dst, const ActBlock* act, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  const MatDims d(dst);
  const int64_t nblk = d.k / kBlock;
  const int64_t m_tiles = (d.m + kTileRows - 1) / kTileRows;
  for_share(d, m_tiles, ith, nth, [&](int64_t mt, int64_t i2, int64_t i3) {
    const ActBlock* batch = act + ((i3 * d.b2 + i2) * d.n) * nblk;
    auto act_row = [&](int64_t n) { return batch + n * nblk; };
    const int64_t m0 = mt * kTileRows;
    if (m0 + kTileRows <= d.m) {
      rows_times_b<Block, kTileRows>(dst, a, m0, i2, i3, i2 / d.r2, i3 / d.r3, act_row);
    } else {
      for (int64_t m = m0; m < d.m; ++m) rows_times_b<Block, 1>(dst, a, m, i2, i3, i2 / d.r2, i3 / d.r3, act_row);
    }
  });
}

// B's rows [r0, r1) (flat over n, i2, i3) into act.
void quantize_rows(const loom_tensor_t* b, int64_t r0, int64_t r1, ActBlock* act) {
  const int64_t nblk = b->ne[0] / kBlock;
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(b, r, &i1, &i2, &i3);
    quantize_row(reinterpret_cast<const float*>(row_ptr(b, i1, i2, i3)), b->ne[0], act + r * nblk);
  }
}

}  // namespace

bool int8_dot_built() { return true; }

void quantize_act_rows(const loom_tensor_t* b, int64_t r0, int64_t r1, ActBlock* act) {
  quantize_rows(b, r0, r1, act);
}

void mul_mat_int8_act(const loom_tensor_t* dst, const ActBlock* act, int ith, int nth) {
  if (dst->src[0]->type == LOOM_TYPE_Q8_0) {
    mul_mat_blocks<loom_block_q8_0_t>(dst, act, ith, nth);
  } else {
    mul_mat_blocks<loom_block_q4_0_t>(dst, act, ith, nth);
  }
}

void run_mul_mat_int8(const loom_tensor_t* dst, Exec& ex) {
  const bool q8 = dst->src[0]->type == LOOM_TYPE_Q8_0;
  const bool repacked = is_repacked(dst->src[0]);
  run_on_quantized_b<ActBlock>(dst, ex, quantize_rows, [&](const ActBlock* act, int ith, int nth) {
    if (repacked) {
      mul_mat_x8(dst, act, ex, ith, nth);
    } else if (q8) {
      mul_mat_blocks<loom_block_q8_0_t>(dst, act, ith, nth);
    } else {
      mul_mat_blocks<loom_block_q4_0_t>(dst, act, ith, nth);
    }
  });
}

}  // namespace loom::cpu

#else  // no 8-bit dot instructions in this build: int8_path() is false

namespace loom::cpu {
bool int8_dot_built() { return false; }
void run_mul_mat_int8(const loom_tensor_t*, Exec&) {}
void quantize_act_rows(const loom_tensor_t*, int64_t, int64_t, ActBlock*) {}
void mul_mat_x8(const loom_tensor_t*, const ActBlock*, Exec&, int, int) {}
void mul_mat_int8_act(const loom_tensor_t*, const ActBlock*, int, int) {}
}  // namespace loom::cpu

#endif
