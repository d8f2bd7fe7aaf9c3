// MUL_MAT with F32 / F16 / BF16 A: for at most 4 columns of B (decode) a
// GEMV that converts A in registers (row_dots); for prefill-sized B a
// packed GEMM in the BLIS style. Per block of kKc values of k, a block of
// kMc rows of A is packed (widened to f32) as micro-panels [k][kMr], and kNr
// columns of B at a time as [k][kNr]; the micro-kernel keeps a kMr x kNr tile of the result in
// vector registers (kMr rows of A = two vectors, times kNr broadcast B
// values) and adds it to dst after the first k block. Register tiles per
// ISA: AVX-512 32 x 12 (24 of 32 zmm accumulators), AVX2 16 x 6 (12 of 16).
// B is packed once, its panels split over the pool; then the work is split
// over (batch, block of kMc rows), each thread packing its rows of A. Both
// packings transpose 8 x 8 floats in registers. Results are f32 sums in a
// fixed order per element (independent of the thread count).
#include "ops/matmul.h"

#if LOOM_CPU_GEMM

#include "ops/avx.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/cpu_features.h"
#include "common/fp16.h"

namespace loom::cpu {
namespace {

#ifdef __AVX512F__
constexpr int kVl = 16;
constexpr int kNr = 12;
typedef float vec __attribute__((vector_size(64)));
#else
constexpr int kVl = 8;
constexpr int kNr = 6;
typedef float vec __attribute__((vector_size(32)));
#endif
constexpr int kMr = 2 * kVl;
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 8 * kMr;

inline vec loadv(const float* p) {
  vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void storev(float* p, vec v) { std::memcpy(p, &v, sizeof v); }

// The micro-kernel: c[j] (column j of the tile, kMr floats) (+)= sum_k
// ap[k][:] * bp[k][j]. `c` is the tile's top-left in dst, ldc the byte
// distance between columns; rows / cols below kMr / kNr mark an edge tile.
void micro(const float* ap, const float* bp, int64_t kc, char* c, int64_t ldc, int rows, int cols, bool add) {
  vec acc0[kNr] = {}, acc1[kNr] = {};
  for (int64_t k = 0; k < kc; ++k) {
    const vec a0 = loadv(ap + k * kMr);
    const vec a1 = loadv(ap + k * kMr + kVl);
    const float* b = bp + k * kNr;
    for (int j = 0; j < kNr; ++j) {
      acc0[j] += a0 * b[j];
      acc1[j] += a1 * b[j];
    }
  }
  for (int j = 0; j < cols; ++j) {
    auto* col = reinterpret_cast<float*>(c + j * ldc);
    if (rows == kMr) {
      storev(col, add ? loadv(col) + acc0[j] : acc0[j]);
      storev(col + kVl, add ? loadv(col + kVl) + acc1[j] : acc1[j]);
    } else {
      alignas(64) float t[kMr];
      storev(t, acc0[j]);
      storev(t + kVl, acc1[j]);
      for (int r = 0; r < rows; ++r) col[r] = add ? col[r] + t[r] : t[r];
    }
  }
}

// 8 elements of a float row from element k as f32 lanes.
inline __m256 load8(int32_t type, const char* row, int64_t k) {
  if (type == LOOM_TYPE_F32) return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k);
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k));
  if (type == LOOM_TYPE_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));  // BF16
}

// 8 x 8 floats transposed in registers: r[i] lane j <- r[j] lane i.
inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int h = 0; h < 8; h += 4) {
    u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
    u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
    u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
    u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// Up to 8 rows `src` (nullptr: a row of zeros) of a float type, elements
// [k0, k0 + kc), stored transposed: element k of row i at out[k * ld + i]
// for i < width (8 lanes per store, or the first `width` under a mask).
void pack_rows(int32_t type, const char* const* src, int width, int64_t k0, int64_t kc, float* out, int64_t ld) {
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(width), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  int64_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    __m256 r[8];
    for (int i = 0; i < 8; ++i) r[i] = src[i] != nullptr ? load8(type, src[i], k0 + k) : _mm256_setzero_ps();
    transpose8(r);
    for (int i = 0; i < 8; ++i) {
      if (width == 8) {
        _mm256_storeu_ps(out + (k + i) * ld, r[i]);
      } else {
        _mm256_maskstore_ps(out + (k + i) * ld, mask, r[i]);
      }
    }
  }
  for (; k < kc; ++k) {
    for (int i = 0; i < width; ++i) {
      float v = 0.0f;
      if (src[i] != nullptr) widen_range(type, src[i], k0 + k, 1, &v);
      out[k * ld + i] = v;
    }
  }
}

// Rows [m0, m0 + mc) of A (batch a2, a3), k in [k0, k0 + kc), into
// micro-panels [k][kMr], zero rows past mc.
void pack_a(const loom_tensor_t* a, int64_t m0, int64_t mc, int64_t a2, int64_t a3, int64_t k0, int64_t kc,
            float* out) {
  const int64_t rows = (mc + kMr - 1) / kMr * kMr;
  for (int64_t r = 0; r < rows; r += 8) {
    const char* src[8];
    for (int i = 0; i < 8; ++i) src[i] = r + i < mc ? row_ptr(a, m0 + r + i, a2, a3) : nullptr;
    pack_rows(a->type, src, 8, k0, kc, out + (r / kMr) * kMr * kc + r % kMr, kMr);
  }
}

// Columns [n0, n0 + kNr) of B (batch i2, i3; zero past n_len), k in
// [k0, k0 + kc), as [k][kNr].
void pack_b(const loom_tensor_t* b, int64_t n0, int64_t n_len, int64_t i2, int64_t i3, int64_t k0, int64_t kc,
            float* out) {
  for (int j = 0; j < kNr; j += 8) {
    const char* src[8];
    for (int i = 0; i < 8; ++i) src[i] = j + i < kNr && n0 + j + i < n_len ? row_ptr(b, n0 + j + i, i2, i3) : nullptr;
    pack_rows(LOOM_TYPE_F32, src, std::min(8, kNr - j), k0, kc, out + j, kNr);
  }
}

// How far ahead of the bytes being read the decode GEMVs ask for A's rows
// (rows follow each other in memory, so past a row's end is the next row).
// The hardware prefetcher alone left the F16 GEMV of a 606 MiB model (2048
// wide, 7 layers) at 25.7-28.5 tg16 t/s on the 2-core Xeon (AVX-512); 2, 4,
// 8 and 16 KiB ahead gave 32.5-33.0, 34.2-38.5, 33.1-33.6 and 33.3-33.6
// (2 alternations, 2026-11-29).
constexpr int64_t kFloatPrefetchAhead = 4096;

// A prefetch per 64 bytes of [p, p + kBytes) + kFloatPrefetchAhead (one
// per step when a step reads less than a line).
template <int kBytes>
inline void prefetch_row(const char* p) {
  for (int o = 0; o < kBytes; o += 64) _mm_prefetch(p + kFloatPrefetchAhead + o, _MM_HINT_T0);
}

// Row `row` of float A dotted with NC columns of B: A converted in
// registers (no widened copy), kAcc accumulators per column. For one column
// (decode) kAcc is 4 for F32 and 8 for F16 / BF16: 128 bytes of the row per
// step, so the FMA chains do not hold back the loads of a row streamed from
// memory (F32 with 2 chains was 6-10% slower, with 8 ~3%; F16 with 8
// against 4: tg64 195 vs 176 t/s on the 768-dim model, medians of 4
// alternations), 2 for more columns.
template <int NC, int kAcc>
void row_dots(int32_t type, const char* row, const float* const* b, int64_t k_len, float* out) {
  __m256 acc[NC][kAcc];
  for (int c = 0; c < NC; ++c) {
    for (int i = 0; i < kAcc; ++i) acc[c][i] = _mm256_setzero_ps();
  }
  int64_t k = 0;
  const int64_t es = type == LOOM_TYPE_F32 ? 4 : 2;
  for (; k + 8 * kAcc <= k_len; k += 8 * kAcc) {
    if (es == 4) {
      prefetch_row<4 * 8 * kAcc>(row + 4 * k);
    } else {
      prefetch_row<2 * 8 * kAcc>(row + 2 * k);
    }
    __m256 av[kAcc];
    for (int i = 0; i < kAcc; ++i) av[i] = load8(type, row, k + 8 * i);
    for (int c = 0; c < NC; ++c) {
      for (int i = 0; i < kAcc; ++i) acc[c][i] = _mm256_fmadd_ps(av[i], _mm256_loadu_ps(b[c] + k + 8 * i), acc[c][i]);
    }
  }
  for (; k + 8 <= k_len; k += 8) {  // rows not a multiple of 8 * kAcc wide
    const __m256 av = load8(type, row, k);
    for (int c = 0; c < NC; ++c) acc[c][0] = _mm256_fmadd_ps(av, _mm256_loadu_ps(b[c] + k), acc[c][0]);
  }
  for (int c = 0; c < NC; ++c) {
    __m256 t = acc[c][0];
    for (int i = 1; i < kAcc; ++i) t = _mm256_add_ps(t, acc[c][i]);
    float sum = hsum_ps(t);
    for (int64_t kk = k; kk < k_len; ++kk) {
      float av;
      if (type == LOOM_TYPE_F32) {
        std::memcpy(&av, row + 4 * kk, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, row + 2 * kk, 2);
        av = type == LOOM_TYPE_F16 ? common::f16_to_f32(h) : common::bf16_to_f32(h);
      }
      sum += av * b[c][kk];
    }
    out[c] = sum;
  }
}

}  // namespace

#ifdef __AVX512F__
// One F16 row dotted with one column, 16 lanes a conversion and FMA (the
// AVX2 form converts 8): 4 chains of 16, 64 elements a step; the tail
// through row_dots. Not on a CPU that splits 512-bit operations (Zen 4:
// s768-f16 tg64 176 -> 149 t/s in the eighth session); on a 2-core Zen 5,
// 768x2048 in L3 35.5 -> 24.8 us, 131072x2048 from memory 10.4 -> 7.8 ms,
// s768-f16 tg64 median 332 -> 342 t/s (6 alternations). The maskz forms:
// GCC 12 warns about the undefined source of the plain ones.
float f16_row_dot16(const char* row, const float* b, int64_t k_len) {
  constexpr int kAcc = 4;
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_setzero_ps();
  const auto* h = reinterpret_cast<const uint16_t*>(row);
  int64_t k = 0;
  for (; k + 16 * kAcc <= k_len; k += 16 * kAcc) {
    prefetch_row<2 * 16 * kAcc>(row + 2 * k);
    for (int i = 0; i < kAcc; ++i) {
      const __m512 av =
          _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + k + 16 * i)));
      acc[i] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + k + 16 * i), acc[i]);
    }
  }
  const __m512 s = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
  float sum = hsum_ps(_mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xFF, s, 0), _mm512_maskz_extractf32x8_ps(0xFF, s, 1)));
  if (k < k_len) {
    float tail;
    const float* bt = b + k;
    row_dots<1, 1>(LOOM_TYPE_F16, row + 2 * k, &bt, k_len - k, &tail);
    sum += tail;
  }
  return sum;
}
#endif

bool gemv_path(const loom_tensor_t* dst) { return float_rows(dst->src[0]) && dst->src[1]->ne[1] <= 4; }

void mul_mat_gemv(const loom_tensor_t* dst, int ith, int nth, Exec& ex) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  const MatDims d(dst);
#ifdef __AVX512F__
  static const bool split_avx512 = common::cpu_features().split_avx512;
#endif
  const auto dot_row = [&](int64_t m, int64_t i2, int64_t i3) {
    const float* bc[4];
    for (int64_t c = 0; c < d.n; ++c) bc[c] = reinterpret_cast<const float*>(row_ptr(b, c, i2, i3));
    const char* row = row_ptr(a, m, i2 / d.r2, i3 / d.r3);
    float out[4];
    switch (d.n) {
      case 1:
        if (a->type == LOOM_TYPE_F32) {
          row_dots<1, 4>(a->type, row, bc, d.k, out);
        } else {
#ifdef __AVX512F__
          if (a->type == LOOM_TYPE_F16 && !split_avx512) {
            out[0] = f16_row_dot16(row, bc[0], d.k);
            break;
          }
#endif
          row_dots<1, 8>(a->type, row, bc, d.k, out);
        }
        break;
      case 2: row_dots<2, 2>(a->type, row, bc, d.k, out); break;
      case 3: row_dots<3, 2>(a->type, row, bc, d.k, out); break;
      default: row_dots<4, 2>(a->type, row, bc, d.k, out); break;
    }
    for (int64_t c = 0; c < d.n; ++c) std::memcpy(elem_ptr(dst, m, c, i2, i3), &out[c], 4);
  };
  // Rows (over the batches) in kGemvChunksPerThread chunks a thread, each
  // thread's own share first.
  const int64_t units = d.m * d.b2 * d.b3;
  const int64_t chunks = std::min<int64_t>(units, kGemvChunksPerThread * nth);
  for (int64_t c = ex.claim_chunk(ith, nth, chunks); c >= 0; c = ex.claim_chunk(ith, nth, chunks)) {
    for (int64_t w = units * c / chunks; w < units * (c + 1) / chunks; ++w) {
      dot_row(w % d.m, (w / d.m) % d.b2, w / (d.m * d.b2));
    }
  }
}

bool gemm_path(const loom_tensor_t* dst) {
  return float_rows(dst->src[0]) && dst->nb[0] == 4 && dst->src[1]->ne[1] >= kGemmMinN;
}

void run_mul_mat_gemm(const loom_tensor_t* dst, Exec& ex) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  const MatDims d(dst);
  const int64_t n_panels = (d.n + kNr - 1) / kNr;
  const int64_t k_blocks = (d.k + kKc - 1) / kKc;
  const int64_t m_blocks = (d.m + kMc - 1) / kMc;
  const int64_t batches = d.b2 * d.b3;
  // B packed once for all threads: per batch, per block of k (k0, kc), the
  // panels [kc][kNr] one after another (panel np at k0 * n_panels * kNr +
  // np * kNr * kc of the batch).
  const int64_t batch_floats = n_panels * kNr * d.k;
  auto* bp = static_cast<float*>(ex.scratch(static_cast<size_t>(batches * batch_floats) * sizeof(float)));
  ex.run([&](int ith, int nth) {
    int64_t w0, w1;
    common::split_range(batches * k_blocks * n_panels, ith, nth, &w0, &w1);
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t np = w % n_panels;
      const int64_t k0 = (w / n_panels) % k_blocks * kKc;
      const int64_t batch = w / (n_panels * k_blocks);
      const int64_t kc = std::min(kKc, d.k - k0);
      pack_b(b, np * kNr, d.n, batch % d.b2, batch / d.b2, k0, kc,
             bp + batch * batch_floats + k0 * n_panels * kNr + np * kNr * kc);
    }
  });
  const auto ldc = static_cast<int64_t>(dst->nb[1]);
  ex.run([&](int ith, int nth) {
    int64_t w0, w1;
    common::split_range(m_blocks * batches, ith, nth, &w0, &w1);
    thread_local std::vector<float> ap;
    ap.resize(static_cast<size_t>((kMc + kMr - 1) / kMr * kMr * kKc));
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t batch = w / m_blocks;
      const int64_t i2 = batch % d.b2, i3 = batch / d.b2;
      const int64_t m0 = (w % m_blocks) * kMc;
      const int64_t mc = std::min(kMc, d.m - m0);
      for (int64_t k0 = 0; k0 < d.k; k0 += kKc) {
        const int64_t kc = std::min(kKc, d.k - k0);
        pack_a(a, m0, mc, i2 / d.r2, i3 / d.r3, k0, kc, ap.data());
        const float* bk = bp + batch * batch_floats + k0 * n_panels * kNr;
        for (int64_t np = 0; np < n_panels; ++np) {
          const int64_t n0 = np * kNr;
          const int cols = static_cast<int>(std::min<int64_t>(kNr, d.n - n0));
          for (int64_t r0 = 0; r0 < mc; r0 += kMr) {
            const int rows = static_cast<int>(std::min<int64_t>(kMr, mc - r0));
            micro(ap.data() + (r0 / kMr) * kMr * kc, bk + np * kNr * kc, kc, elem_ptr(dst, m0 + r0, n0, i2, i3), ldc,
                  rows, cols, k0 > 0);
          }
        }
      }
    }
  });
}

}  // namespace loom::cpu

#else

namespace loom::cpu {
bool gemm_path(const loom_tensor_t*) { return false; }
void run_mul_mat_gemm(const loom_tensor_t*, Exec&) {}
bool gemv_path(const loom_tensor_t*) { return false; }
void mul_mat_gemv(const loom_tensor_t*, int, int, Exec&) {}
}  // namespace loom::cpu

#endif
