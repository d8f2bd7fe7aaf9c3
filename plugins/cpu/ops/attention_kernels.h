// ATTENTION's kernels over blocks of K and V rows (attention.cpp schedules
// them over heads, queries and threads): the 8-key dot steps, the weighted
// V rows, the stream asked ahead into L2, and two_pass, the exact softmax
// of a run of queries over one kv head's rows. Each query's numbers follow
// one fixed order whatever queries it is grouped with, so results do not
// depend on how a node's work is cut.
//
// Precision: dots, exp, the sums and the accumulator are f32 (dots in
// vector lanes, 16 wide with AVX-512; exp in lanes: simd_exp, < 2e-7
// relative); F16 rows are converted exactly in registers (F16C); Q8_0 rows
// (an 8-bit cache) are widened in registers block by block, a key block's
// dot with q times the block's scale d and a V row's weight times d (the
// same values as d * q dequantized first, up to f32 rounding of the
// products); BF16 and strided rows widened to f32 first.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common/type_traits.h"
#include "ops/ops.h"
#include "ops/simd.h"

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace loom::cpu {
namespace {

constexpr int64_t kBlock = 32;  // keys scored before the accumulator is touched

// Row (i1, i2) of a float tensor as contiguous f32: the row itself when it
// already is, else widened into scratch.
inline const float* f32_row(const loom_tensor_t* t, int64_t i1, int64_t i2, float* scratch) {
  if (t->type == LOOM_TYPE_F32 && t->nb[0] == sizeof(float)) {
    return reinterpret_cast<const float*>(row_ptr(t, i1, i2, 0));
  }
  load_row(t, i1, i2, 0, scratch);
  return scratch;
}

// How K or V rows are read: F16 rows straight from the cache, converted in
// registers (F16C, builds with AVX2; rows a multiple of 8 wide), Q8_0 rows
// the same way (whole blocks, as op_check requires), any other layout as
// f32 rows (contiguous F32 in place, the rest widened to scratch).
#if defined(__AVX2__) && defined(__F16C__)
inline bool reads_f16(const loom_tensor_t* t) {
  return t->type == LOOM_TYPE_F16 && t->nb[0] == sizeof(uint16_t) && t->ne[0] % 8 == 0;
}
inline bool reads_q8(const loom_tensor_t* t) { return t->type == LOOM_TYPE_Q8_0; }
#endif

// A Q8_0 row read in place: `const Q8Row*` points at its first block (32
// int8 with an F16 scale d ahead of them, 34 bytes); the Q8_0 kernels
// (below) read it block by block.
struct Q8Row;

// Bytes of one row of K or V (whole blocks for a quantized type).
inline int64_t kv_row_bytes(const loom_tensor_t* t) {
  const common::TypeTraits& tr = common::type_traits(t->type);
  return t->ne[0] / tr.block_size * static_cast<int64_t>(tr.type_size);
}

// Rows j0 .. j0+nb of head g of K or V (scratch: nb rows of ne[0] floats,
// used only for rows that need widening).
template <typename T>
void block_rows(const loom_tensor_t* t, int64_t j0, int64_t nb, int64_t g, float* scratch, const T** rows) {
  if (std::is_same_v<T, uint16_t> || std::is_same_v<T, Q8Row> ||
      (t->type == LOOM_TYPE_F32 && t->nb[0] == sizeof(float))) {
    // Rows read in place (F16 bits, reads_f16; Q8_0 blocks, reads_q8; or
    // f32): one row stride apart.
    const char* base = row_ptr(t, j0, g, 0);
    for (int64_t jj = 0; jj < nb; ++jj) rows[jj] = reinterpret_cast<const T*>(base + jj * static_cast<int64_t>(t->nb[1]));
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    for (int64_t jj = 0; jj < nb; ++jj) rows[jj] = f32_row(t, j0 + jj, g, scratch + jj * t->ne[0]);
  }
}

// kSimdLanes values from f32 or (F16C) F16 memory.
inline simd_f lanes(const float* p) { return simd_load(p); }
#if defined(__AVX2__) && defined(__F16C__)
inline simd_f lanes(const uint16_t* p) {
  return reinterpret_cast<simd_f>(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
#endif

#ifdef __AVX512F__
// 16 values from f32 or F16 memory (AVX-512: one conversion for 16).
inline __m512 lanes16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 lanes16(const uint16_t* p) {
  // The maskz forms: GCC 12's unmasked ones start from an "undefined"
  // register and warn (-Wmaybe-uninitialized).
  return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
#endif

#ifdef __AVX2__
// Lane r: the sum of acc[r]'s 8 lanes (a transposing reduction).
inline __m256 hsum8(const __m256* acc) {
  const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
  const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(acc[4], acc[5]), _mm256_hadd_ps(acc[6], acc[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

#ifdef __AVX512F__
// hsum8 of 8 accumulators of 16 lanes, each's halves added first (maskz
// extracts: GCC 12 warns on the plain cast).
inline __m256 hsum8_wide(const __m512* wide) {
  __m256 h[8];
  for (int r = 0; r < 8; ++r) {
    h[r] = _mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xFF, wide[r], 0), _mm512_maskz_extractf32x8_ps(0xFF, wide[r], 1));
  }
  return hsum8(h);
}
#endif

// The 8 dots q . k[r] (d % 8 == 0), one per lane: 8 accumulators, then a
// transposing reduction (hadd) instead of 8 horizontal sums. With AVX-512
// and d % 16 == 0 the accumulators are 16 lanes wide (half the
// instructions; the halves are added before the reduction).
template <typename T>
inline __m256 dot8(const float* q, const T* const* k, int64_t d) {
#ifdef __AVX512F__
  if (d % 16 == 0) {
    __m512 wide[8];
    for (int r = 0; r < 8; ++r) wide[r] = _mm512_setzero_ps();
    for (int64_t e = 0; e < d; e += 16) {
      const __m512 qv = _mm512_loadu_ps(q + e);
      for (int r = 0; r < 8; ++r) wide[r] = _mm512_fmadd_ps(qv, lanes16(k[r] + e), wide[r]);
    }
    return hsum8_wide(wide);
  }
#endif
  __m256 acc[8];
  for (int r = 0; r < 8; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t e = 0; e < d; e += 8) {
    const __m256 qv = _mm256_loadu_ps(q + e);
    for (int r = 0; r < 8; ++r) acc[r] = _mm256_fmadd_ps(qv, reinterpret_cast<__m256>(lanes(k[r] + e)), acc[r]);
  }
  return hsum8(acc);
}
#endif

#ifdef __AVX512F__
// The 8 dots of dot8 for two queries q0, q1 over the same keys (d % 16 ==
// 0): each query's lanes computed exactly as dot8 computes them (the same
// accumulators, in the same order), each key row read and converted once
// for both. A prefill's queries read their head's K and V from L2: two
// queries a row halve that traffic.
template <typename T>
inline void dot8x2(const float* q0, const float* q1, const T* const* k, int64_t d, __m256* out0, __m256* out1) {
  __m512 w0[8], w1[8];
  for (int r = 0; r < 8; ++r) w0[r] = w1[r] = _mm512_setzero_ps();
  for (int64_t e = 0; e < d; e += 16) {
    const __m512 a = _mm512_loadu_ps(q0 + e), b = _mm512_loadu_ps(q1 + e);
    for (int r = 0; r < 8; ++r) {
      const __m512 kv = lanes16(k[r] + e);
      w0[r] = _mm512_fmadd_ps(a, kv, w0[r]);
      w1[r] = _mm512_fmadd_ps(b, kv, w1[r]);
    }
  }
  *out0 = hsum8_wide(w0);
  *out1 = hsum8_wide(w1);
}
#endif

// s[jj] = scale * q . k[jj] for jj < nb. With AVX2 and d % 8 == 0 every key
// goes through dot8 (a last partial group repeats its last row and keeps
// the lanes it needs), so a key's score does not depend on its position.
template <typename T>
void block_scores(const float* q, const T* const* k, int64_t nb, int64_t d, float scale, float* s) {
#ifdef __AVX2__
  if (d % 8 == 0) {
    const __m256 sc = _mm256_set1_ps(scale);
    int64_t jj = 0;
    for (; jj + 8 <= nb; jj += 8) _mm256_storeu_ps(s + jj, _mm256_mul_ps(dot8(q, k + jj, d), sc));
    if (jj < nb) {
      const T* kk[8];
      for (int r = 0; r < 8; ++r) kk[r] = k[std::min<int64_t>(jj + r, nb - 1)];
      float tail[8];
      _mm256_storeu_ps(tail, _mm256_mul_ps(dot8(q, kk, d), sc));
      for (int64_t r = 0; jj + r < nb; ++r) s[jj + r] = tail[r];
    }
    return;
  }
#endif
  if constexpr (std::is_same_v<T, float>) {
    for (int64_t jj = 0; jj < nb; ++jj) s[jj] = scale * simd_dot(q, k[jj], d);
  }
}

#ifdef __AVX512F__
// block_axpy's last lanes [e0, dv) (dv % 16 == 0), 16 at a time.
template <typename T>
inline void axpy_tail16(float* acc, const float* p, const T* const* v, int64_t nb, int64_t e0, int64_t dv) {
  for (int64_t e = e0; e < dv; e += 16) {
    __m512 a = _mm512_loadu_ps(acc + e);
    for (int64_t jj = 0; jj < nb; ++jj) a = _mm512_fmadd_ps(_mm512_set1_ps(p[jj]), lanes16(v[jj] + e), a);
    _mm512_storeu_ps(acc + e, a);
  }
}
#endif

// The KV stream a pass reads next (rows [0, n_rows) of kv head g of K or
// V), asked into L2 at the pace the current pass consumes its own rows:
// a few lines at a time, between the kernel's loads. Asked for a block (64
// lines) at once, the requests filled the core's miss buffers and the
// pass's own loads waited behind them: decode ATTENTION per call in a
// s768 step 41-50 -> 35-39 us (Q8_0 and F16 models, 5 alternations).
class Ahead {
 public:
  Ahead() = default;  // asks for nothing
  Ahead(const loom_tensor_t* t, int64_t g, int64_t n_rows)
      : t_(t), g_(g), n_rows_(n_rows), row_bytes_(kv_row_bytes(t)) {}
  // The next n rows.
  void rows(int64_t n) { upto(asked_ + n); }
  // Every row before `row` (after kernels that do not call rows()).
  void upto(int64_t row) {
    row = std::min(row, n_rows_);
    if (t_ == nullptr || row <= asked_) return;
#ifdef __AVX2__
    if (static_cast<int64_t>(t_->nb[1]) == row_bytes_) {
      // Rows back to back (the llama cache): one flat range of lines.
      const char* first = row_ptr(t_, 0, g_, 0);
      const char* line0 = first - reinterpret_cast<uintptr_t>(first) % 64;
      const int64_t stop = (first - line0) + row * row_bytes_;
      for (; next_line_ < stop; next_line_ += 64) _mm_prefetch(line0 + next_line_, _MM_HINT_T1);
    } else {
      for (int64_t j = asked_; j < row; ++j) {
        const char* r = row_ptr(t_, j, g_, 0);
        for (int64_t off = 0; off < row_bytes_; off += 64) _mm_prefetch(r + off, _MM_HINT_T1);
      }
    }
#endif
    asked_ = row;
  }

 private:
  const loom_tensor_t* t_ = nullptr;
  [[maybe_unused]] int64_t g_ = 0;  // (read only where the build asks: AVX2)
  int64_t n_rows_ = 0, row_bytes_ = 0;
  int64_t asked_ = 0;                        // rows asked for
  [[maybe_unused]] int64_t next_line_ = 0;  // rows back to back: bytes from line0 asked for
};

// acc[e] += sum_jj p[jj] * v[jj][e]: up to kGroups lane groups of acc stay
// in registers over the block's rows, independent chains so the FMAs do not
// wait on each other's latency. F16 rows (uint16_t) have dv % 8 == 0.
template <typename T>
void block_axpy(float* acc, const float* p, const T* const* v, int64_t nb, int64_t dv, Ahead* ahead = nullptr) {
  (void)ahead;  // builds without AVX-512: two_pass asks after the block (Ahead::upto)
#ifdef __AVX512F__
  if (dv % 16 == 0 && (std::is_same_v<T, uint16_t> || std::is_same_v<T, float>)) {
    // 16 lanes per group: 4 groups cover a head of 64. Even and odd rows
    // go to their own accumulators: 8 FMA chains, so a row does not wait
    // on the previous row's FMA latency (4 chains held the V pass to one
    // FMA per cycle).
    constexpr int kWide = 4;
    int64_t e = 0;
    for (; e + kWide * 16 <= dv; e += kWide * 16) {
      __m512 a[kWide], b[kWide];
      for (int g = 0; g < kWide; ++g) {
        a[g] = _mm512_loadu_ps(acc + e + 16 * g);
        b[g] = _mm512_setzero_ps();
      }
      int64_t jj = 0;
      for (; jj + 2 <= nb; jj += 2) {
        if (ahead != nullptr && e == 0) ahead->rows(2);
        const __m512 p0 = _mm512_set1_ps(p[jj]), p1 = _mm512_set1_ps(p[jj + 1]);
        for (int g = 0; g < kWide; ++g) {
          a[g] = _mm512_fmadd_ps(p0, lanes16(v[jj] + e + 16 * g), a[g]);
          b[g] = _mm512_fmadd_ps(p1, lanes16(v[jj + 1] + e + 16 * g), b[g]);
        }
      }
      if (jj < nb) {
        const __m512 pj = _mm512_set1_ps(p[jj]);
        for (int g = 0; g < kWide; ++g) a[g] = _mm512_fmadd_ps(pj, lanes16(v[jj] + e + 16 * g), a[g]);
      }
      for (int g = 0; g < kWide; ++g) _mm512_storeu_ps(acc + e + 16 * g, _mm512_add_ps(a[g], b[g]));
    }
    axpy_tail16(acc, p, v, nb, e, dv);
    return;
  }
#endif
  constexpr int kGroups = 8;
  int64_t e = 0;
  for (; e + kGroups * kSimdLanes <= dv; e += kGroups * kSimdLanes) {
    simd_f a[kGroups];
    for (int g = 0; g < kGroups; ++g) a[g] = simd_load(acc + e + g * kSimdLanes);
    for (int64_t jj = 0; jj < nb; ++jj) {
      const T* vr = v[jj] + e;
      for (int g = 0; g < kGroups; ++g) a[g] += p[jj] * lanes(vr + g * kSimdLanes);
    }
    for (int g = 0; g < kGroups; ++g) simd_store(acc + e + g * kSimdLanes, a[g]);
  }
  for (; e + kSimdLanes <= dv; e += kSimdLanes) {
    simd_f a = simd_load(acc + e);
    for (int64_t jj = 0; jj < nb; ++jj) a += p[jj] * lanes(v[jj] + e);
    simd_store(acc + e, a);
  }
  if constexpr (std::is_same_v<T, float>) {
    for (; e < dv; ++e) {
      for (int64_t jj = 0; jj < nb; ++jj) acc[e] += p[jj] * v[jj][e];
    }
  }
}

#ifdef __AVX512F__
// Two queries at once over the same K / V rows, with each query's
// numbers exactly those of block_scores / block_axpy (their AVX-512
// paths), so results do not depend on which queries were paired.
constexpr bool kPairs = true;

// block_scores for q0 and q1 (d % 16 == 0).
template <typename T>
void block_scores2(const float* q0, const float* q1, const T* const* k, int64_t nb, int64_t d, float scale, float* s0,
                   float* s1) {
  const __m256 sc = _mm256_set1_ps(scale);
  __m256 r0, r1;
  int64_t jj = 0;
  for (; jj + 8 <= nb; jj += 8) {
    dot8x2(q0, q1, k + jj, d, &r0, &r1);
    _mm256_storeu_ps(s0 + jj, _mm256_mul_ps(r0, sc));
    _mm256_storeu_ps(s1 + jj, _mm256_mul_ps(r1, sc));
  }
  if (jj < nb) {
    const T* kk[8];
    for (int r = 0; r < 8; ++r) kk[r] = k[std::min<int64_t>(jj + r, nb - 1)];
    float t0[8], t1[8];
    dot8x2(q0, q1, kk, d, &r0, &r1);
    _mm256_storeu_ps(t0, _mm256_mul_ps(r0, sc));
    _mm256_storeu_ps(t1, _mm256_mul_ps(r1, sc));
    for (int64_t r = 0; jj + r < nb; ++r) {
      s0[jj + r] = t0[r];
      s1[jj + r] = t1[r];
    }
  }
}

// block_axpy for (acc0, p0) and (acc1, p1) over the same nb rows (dv % 16
// == 0): each V row read and converted once for both.
template <typename T>
void block_axpy2(float* acc0, float* acc1, const float* p0, const float* p1, const T* const* v, int64_t nb,
                 int64_t dv, Ahead* ahead = nullptr) {
  constexpr int kWide = 4;
  int64_t e = 0;
  for (; e + kWide * 16 <= dv; e += kWide * 16) {
    __m512 a0[kWide], b0[kWide], a1[kWide], b1[kWide];
    for (int g = 0; g < kWide; ++g) {
      a0[g] = _mm512_loadu_ps(acc0 + e + 16 * g);
      a1[g] = _mm512_loadu_ps(acc1 + e + 16 * g);
      b0[g] = b1[g] = _mm512_setzero_ps();
    }
    int64_t jj = 0;
    for (; jj + 2 <= nb; jj += 2) {
      if (ahead != nullptr && e == 0) ahead->rows(2);
      const __m512 p00 = _mm512_set1_ps(p0[jj]), p01 = _mm512_set1_ps(p0[jj + 1]);
      const __m512 p10 = _mm512_set1_ps(p1[jj]), p11 = _mm512_set1_ps(p1[jj + 1]);
      for (int g = 0; g < kWide; ++g) {
        const __m512 v0 = lanes16(v[jj] + e + 16 * g), v1 = lanes16(v[jj + 1] + e + 16 * g);
        a0[g] = _mm512_fmadd_ps(p00, v0, a0[g]);
        b0[g] = _mm512_fmadd_ps(p01, v1, b0[g]);
        a1[g] = _mm512_fmadd_ps(p10, v0, a1[g]);
        b1[g] = _mm512_fmadd_ps(p11, v1, b1[g]);
      }
    }
    if (jj < nb) {
      const __m512 q0 = _mm512_set1_ps(p0[jj]), q1 = _mm512_set1_ps(p1[jj]);
      for (int g = 0; g < kWide; ++g) {
        const __m512 v0 = lanes16(v[jj] + e + 16 * g);
        a0[g] = _mm512_fmadd_ps(q0, v0, a0[g]);
        a1[g] = _mm512_fmadd_ps(q1, v0, a1[g]);
      }
    }
    for (int g = 0; g < kWide; ++g) {
      _mm512_storeu_ps(acc0 + e + 16 * g, _mm512_add_ps(a0[g], b0[g]));
      _mm512_storeu_ps(acc1 + e + 16 * g, _mm512_add_ps(a1[g], b1[g]));
    }
  }
  axpy_tail16(acc0, p0, v, nb, e, dv);
  axpy_tail16(acc1, p1, v, nb, e, dv);
}
#else
constexpr bool kPairs = false;
template <typename T>
void block_scores2(const float*, const float*, const T* const*, int64_t, int64_t, float, float*, float*) {}
template <typename T>
void block_axpy2(float*, float*, const float*, const float*, const T* const*, int64_t, int64_t, Ahead* = nullptr) {}
#endif

#if defined(__AVX2__) && defined(__F16C__)
// Q8_0 rows (an 8-bit cache, reads_q8): blocks of 32 int8 with an F16
// scale d. A dot with q is, block by block, d * (q . x) (the int8 widened
// to f32 in registers, the block's products summed, then one multiply-add
// with d); a weighted V row adds (p * d) * x. The same order whichever
// queries go together (the pair kernels do each query's steps exactly so).
constexpr int64_t kQ8Block = 32;
constexpr int64_t kQ8Bytes = static_cast<int64_t>(sizeof(loom_block_q8_0_t));

inline float q8_scale(const Q8Row* row, int64_t b) {
  uint16_t h;
  std::memcpy(&h, reinterpret_cast<const char*>(row) + b * kQ8Bytes, sizeof h);
  return _cvtsh_ss(h);
}
inline const int8_t* q8_quants(const Q8Row* row, int64_t b) {
  return reinterpret_cast<const int8_t*>(row) + b * kQ8Bytes + static_cast<int64_t>(sizeof(uint16_t));
}
inline __m256 i8x8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

#ifdef __AVX512F__
// 16 int8 as f32 (maskz forms: see lanes16).
inline __m512 i8x16(const int8_t* p) {
  const __m512i w = _mm512_maskz_cvtepi8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm512_maskz_cvtepi32_ps(0xFFFF, w);
}
// Block b's unscaled dot with q's block (32 values): 16 lanes.
inline __m512 q8_block_dot(const float* qb, const int8_t* x) {
  return _mm512_fmadd_ps(_mm512_loadu_ps(qb + 16), i8x16(x + 16), _mm512_mul_ps(_mm512_loadu_ps(qb), i8x16(x)));
}
#else
inline __m256 q8_block_dot(const float* qb, const int8_t* x) {
  __m256 t = _mm256_mul_ps(_mm256_loadu_ps(qb), i8x8(x));
  for (int i = 1; i < 4; ++i) t = _mm256_fmadd_ps(_mm256_loadu_ps(qb + 8 * i), i8x8(x + 8 * i), t);
  return t;
}
#endif

// dot8 over Q8_0 keys (d % 32 == 0).
inline __m256 dot8(const float* q, const Q8Row* const* k, int64_t d) {
#ifdef __AVX512F__
  using Acc = __m512;
#else
  using Acc = __m256;
#endif
  Acc acc[8];
  for (int r = 0; r < 8; ++r) acc[r] = Acc{};
  for (int64_t b = 0; b < d / kQ8Block; ++b) {
    for (int r = 0; r < 8; ++r) {
#ifdef __AVX512F__
      acc[r] = _mm512_fmadd_ps(q8_block_dot(q + b * kQ8Block, q8_quants(k[r], b)), _mm512_set1_ps(q8_scale(k[r], b)),
                               acc[r]);
#else
      acc[r] = _mm256_fmadd_ps(q8_block_dot(q + b * kQ8Block, q8_quants(k[r], b)), _mm256_set1_ps(q8_scale(k[r], b)),
                               acc[r]);
#endif
    }
  }
#ifdef __AVX512F__
  return hsum8_wide(acc);
#else
  return hsum8(acc);
#endif
}

// block_axpy over Q8_0 rows (dv % 32 == 0): each row's weight times its
// block's scale, then the widened int8; up to 4 blocks of acc held in
// registers, even and odd rows in their own accumulators (as block_axpy).
inline void block_axpy(float* acc, const float* p, const Q8Row* const* v, int64_t nb, int64_t dv,
                       Ahead* ahead = nullptr) {
  (void)ahead;  // builds without AVX-512: two_pass asks after the block (Ahead::upto)
  constexpr int64_t kChunk = 4;  // blocks of acc per pass
  for (int64_t b0 = 0; b0 < dv / kQ8Block; b0 += kChunk) {
    const int64_t n = std::min(kChunk, dv / kQ8Block - b0);
#ifdef __AVX512F__
    constexpr int kLanes = 16;
    __m512 a[2 * kChunk], o[2 * kChunk];
    for (int64_t i = 0; i < 2 * n; ++i) {
      a[i] = _mm512_loadu_ps(acc + b0 * kQ8Block + kLanes * i);
      o[i] = _mm512_setzero_ps();
    }
    for (int64_t jj = 0; jj < nb; ++jj) {
      if (ahead != nullptr && b0 == 0) ahead->rows(1);
      __m512* t = (jj & 1) ? o : a;
      for (int64_t bi = 0; bi < n; ++bi) {
        const __m512 w = _mm512_set1_ps(p[jj] * q8_scale(v[jj], b0 + bi));
        const int8_t* x = q8_quants(v[jj], b0 + bi);
        t[2 * bi] = _mm512_fmadd_ps(w, i8x16(x), t[2 * bi]);
        t[2 * bi + 1] = _mm512_fmadd_ps(w, i8x16(x + kLanes), t[2 * bi + 1]);
      }
    }
    for (int64_t i = 0; i < 2 * n; ++i) _mm512_storeu_ps(acc + b0 * kQ8Block + kLanes * i, _mm512_add_ps(a[i], o[i]));
#else
    constexpr int kLanes = 8;
    __m256 a[4 * kChunk];
    for (int64_t i = 0; i < 4 * n; ++i) a[i] = _mm256_loadu_ps(acc + b0 * kQ8Block + kLanes * i);
    for (int64_t jj = 0; jj < nb; ++jj) {
      for (int64_t bi = 0; bi < n; ++bi) {
        const __m256 w = _mm256_set1_ps(p[jj] * q8_scale(v[jj], b0 + bi));
        const int8_t* x = q8_quants(v[jj], b0 + bi);
        for (int i = 0; i < 4; ++i) a[4 * bi + i] = _mm256_fmadd_ps(w, i8x8(x + kLanes * i), a[4 * bi + i]);
      }
    }
    for (int64_t i = 0; i < 4 * n; ++i) _mm256_storeu_ps(acc + b0 * kQ8Block + kLanes * i, a[i]);
#endif
  }
}

#ifdef __AVX512F__
// dot8x2 over Q8_0 keys: each query's lanes exactly as dot8 computes them.
inline void dot8x2(const float* q0, const float* q1, const Q8Row* const* k, int64_t d, __m256* out0, __m256* out1) {
  __m512 w0[8], w1[8];
  for (int r = 0; r < 8; ++r) w0[r] = w1[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < d / kQ8Block; ++b) {
    const __m512 a0 = _mm512_loadu_ps(q0 + b * kQ8Block), a1 = _mm512_loadu_ps(q0 + b * kQ8Block + 16);
    const __m512 c0 = _mm512_loadu_ps(q1 + b * kQ8Block), c1 = _mm512_loadu_ps(q1 + b * kQ8Block + 16);
    for (int r = 0; r < 8; ++r) {
      const int8_t* x = q8_quants(k[r], b);
      const __m512 lo = i8x16(x), hi = i8x16(x + 16), s = _mm512_set1_ps(q8_scale(k[r], b));
      w0[r] = _mm512_fmadd_ps(_mm512_fmadd_ps(a1, hi, _mm512_mul_ps(a0, lo)), s, w0[r]);
      w1[r] = _mm512_fmadd_ps(_mm512_fmadd_ps(c1, hi, _mm512_mul_ps(c0, lo)), s, w1[r]);
    }
  }
  *out0 = hsum8_wide(w0);
  *out1 = hsum8_wide(w1);
}

// block_axpy for (acc0, p0) and (acc1, p1) over the same Q8_0 rows: each
// query's steps exactly as block_axpy's, each row widened once for both.
inline void block_axpy2(float* acc0, float* acc1, const float* p0, const float* p1, const Q8Row* const* v, int64_t nb,
                        int64_t dv, Ahead* ahead = nullptr) {
  constexpr int64_t kChunk = 2;  // blocks of acc per pass (two queries' accumulators in registers)
  for (int64_t b0 = 0; b0 < dv / kQ8Block; b0 += kChunk) {
    const int64_t n = std::min(kChunk, dv / kQ8Block - b0);
    __m512 a0[2 * kChunk], o0[2 * kChunk], a1[2 * kChunk], o1[2 * kChunk];
    for (int64_t i = 0; i < 2 * n; ++i) {
      a0[i] = _mm512_loadu_ps(acc0 + b0 * kQ8Block + 16 * i);
      a1[i] = _mm512_loadu_ps(acc1 + b0 * kQ8Block + 16 * i);
      o0[i] = o1[i] = _mm512_setzero_ps();
    }
    for (int64_t jj = 0; jj < nb; ++jj) {
      if (ahead != nullptr && b0 == 0) ahead->rows(1);
      __m512* t0 = (jj & 1) ? o0 : a0;
      __m512* t1 = (jj & 1) ? o1 : a1;
      for (int64_t bi = 0; bi < n; ++bi) {
        const float s = q8_scale(v[jj], b0 + bi);
        const __m512 w0 = _mm512_set1_ps(p0[jj] * s), w1 = _mm512_set1_ps(p1[jj] * s);
        const int8_t* x = q8_quants(v[jj], b0 + bi);
        const __m512 lo = i8x16(x), hi = i8x16(x + 16);
        t0[2 * bi] = _mm512_fmadd_ps(w0, lo, t0[2 * bi]);
        t0[2 * bi + 1] = _mm512_fmadd_ps(w0, hi, t0[2 * bi + 1]);
        t1[2 * bi] = _mm512_fmadd_ps(w1, lo, t1[2 * bi]);
        t1[2 * bi + 1] = _mm512_fmadd_ps(w1, hi, t1[2 * bi + 1]);
      }
    }
    for (int64_t i = 0; i < 2 * n; ++i) {
      _mm512_storeu_ps(acc0 + b0 * kQ8Block + 16 * i, _mm512_add_ps(a0[i], o0[i]));
      _mm512_storeu_ps(acc1 + b0 * kQ8Block + 16 * i, _mm512_add_ps(a1[i], o1[i]));
    }
  }
}
#endif
#endif

// Running softmax state of one query head: max m, sum l, output acc.
struct HeadState {
  float m = -std::numeric_limits<float>::infinity();
  float l = 0.0f;
  float* acc = nullptr;  // dv floats
  const float* q = nullptr;
};

// One block of rows [j0, j0 + nb) for one query head: scores, the online
// softmax update, the weighted V rows added to the accumulator.
template <typename KT, typename VT>
struct BlockStep {
  const loom_tensor_t* k;
  const loom_tensor_t* v;
  int64_t d, dv;
  float scale;
  float* kscratch;  // kBlock rows of d (rows that need widening)
  float* vscratch;  // kBlock rows of dv

  void operator()(HeadState& hs, int64_t g, int64_t j0, int64_t nb) const {
    const KT* krows[kBlock];
    const VT* vrows[kBlock];
    float s[kBlock];
    block_rows(k, j0, nb, g, kscratch, krows);
    block_scores(hs.q, krows, nb, d, scale, s);
    const float bm = simd_max(s, nb);
    if (bm > hs.m) {
      const float c = std::exp(hs.m - bm);  // 0 on the first block
      hs.l *= c;
      simd_scale(hs.acc, c, dv);
      hs.m = bm;
    }
    hs.l += simd_exp_shifted_sum(s, hs.m, nb);
    block_rows(v, j0, nb, g, vscratch, vrows);
    block_axpy(hs.acc, s, vrows, nb, dv);
  }
};

// Queries st[0, nq) of kv head g, query i over rows [0, ns[i]), in two
// passes: every score first (K read front to back), each query's softmax,
// then the weighted V rows (V read front to back). Queries go in pairs
// where the kernels allow (kPairs: each row read once for two; a query's
// scores past its own rows are computed and not used). Each pass asks for
// the stream read after it (the K pass for this head's V rows, the V pass
// for k_ahead: the K rows the caller reads next, or nothing) at its own
// pace, so two streams are in flight and the hardware prefetchers follow
// the pass's own. scores: nq * max(ns) floats.
template <typename KT, typename VT>
void two_pass(const BlockStep<KT, VT>& step, HeadState* st, const int64_t* ns, int64_t nq, int64_t g, Ahead k_ahead,
              float* scores) {
  int64_t n = 0;
  for (int64_t i = 0; i < nq; ++i) n = std::max(n, ns[i]);
  const bool pair_k = kPairs && step.d % 16 == 0;
  const bool pair_v = kPairs && step.dv % 16 == 0;
  const KT* krows[kBlock];
  const VT* vrows[kBlock];
  Ahead v_ahead(step.v, g, n);  // read next: this head's V rows
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t nb = std::min(kBlock, n - j0);
    block_rows(step.k, j0, nb, g, step.kscratch, krows);
    // Scores 8 keys at a time (each key's score is the same whichever
    // group it falls in), V's next 8 rows asked for before each group.
    for (int64_t c = 0; c < nb; c += 8) {
      const int64_t nc = std::min<int64_t>(8, nb - c);
      v_ahead.rows(nc);
      int64_t i = 0;
      for (; pair_k && i + 2 <= nq; i += 2) {
        block_scores2(st[i].q, st[i + 1].q, krows + c, nc, step.d, step.scale, scores + i * n + j0 + c,
                      scores + (i + 1) * n + j0 + c);
      }
      for (; i < nq; ++i) block_scores(st[i].q, krows + c, nc, step.d, step.scale, scores + i * n + j0 + c);
    }
  }
  for (int64_t i = 0; i < nq; ++i) {
    float* sc = scores + i * n;
    st[i].m = simd_max(sc, ns[i]);
    st[i].l = simd_exp_shifted_sum(sc, st[i].m, ns[i]);
  }
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t nb = std::min(kBlock, n - j0);
    block_rows(step.v, j0, nb, g, step.vscratch, vrows);
    auto rows_of = [&](int64_t i) { return std::clamp<int64_t>(ns[i] - j0, 0, kBlock); };
    for (int64_t i = 0; i < nq;) {
      const int64_t nb_i = rows_of(i);
      Ahead* ahead = i == 0 ? &k_ahead : nullptr;  // one query's pass paces the next stream
      if (pair_v && i + 1 < nq && nb_i > 0 && rows_of(i + 1) == nb_i) {
        block_axpy2(st[i].acc, st[i + 1].acc, scores + i * n + j0, scores + (i + 1) * n + j0, vrows, nb_i, step.dv,
                    ahead);
        i += 2;
        continue;
      }
      if (nb_i > 0) block_axpy(st[i].acc, scores + i * n + j0, vrows, nb_i, step.dv, ahead);
      ++i;
    }
    k_ahead.upto(j0 + nb);
  }
}

}  // namespace
}  // namespace loom::cpu
