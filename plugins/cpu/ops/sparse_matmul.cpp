// The activation-sparse products of ABI 1.3 (semantics in loom/plugin.h):
//
// MUL_MAT_SPARSE_ROWS: dst[m, n] = S[m, n] > t ? A[:, m] . B[:, n] : 0.
// The active (m, n) pairs are listed first (column by column), inactive
// results written as 0; then the threads claim chunks of the list and dot
// each run of consecutive active rows with its column on MUL_MAT's own
// kernels, called on a view of those rows: Q8_0 / Q4_0 on the int8 path and
// the ABI 1.2 types on their integer dots (B quantized once per node, as
// MUL_MAT does), float A through simd_dot; anything else (baseline builds)
// widens the row and dots in f32. Only active rows of A are read.
//
// MUL_MAT_SPARSE_COLS (AXPY): dst[:, n] = sum_{k active} H[k, n] W[:, k],
// W neuron-major [M, K]. The threads claim slices of the M outputs (whole
// quant blocks; 128 outputs for Q8_0 / Q4_0); for each column, every
// active neuron's slice of its row is added in increasing k: Q8_0 / Q4_0
// dequantized in registers into sums that stay in registers for the whole
// active list (axpy_group), other types widened to f32 and added with
// simd_axpy into a slice in memory. Each output is
// owned by one thread and summed in a fixed order, so results do not depend
// on the thread count.
//
// Weights repacked for the int8 GEMV (cpu_weights) are never read here:
// supports_op declines such sources (dispatch.cpp) and the llama loader
// keeps the weights of sparse layers in GGUF's layout.
#include <algorithm>
#include <cstring>
#include <vector>

#include "common/quant.h"
#include "common/type_traits.h"
#include "ops/matmul.h"
#include "ops/matmul_kquant.h"
#include "ops/ops.h"
#include "ops/simd.h"

#if LOOM_CPU_INT8_DOT
#include "ops/avx.h"
#endif
#ifdef __AVX512F__
#include <immintrin.h>
#endif

namespace loom::cpu {
namespace {

constexpr int64_t kRowChunk = 64;   // active (m, n) pairs per claimed chunk
constexpr int64_t kColSlice = 512;  // outputs per claimed slice (whole blocks of every type)
constexpr int64_t kColSlice32 = 128;  // for Q8_0 / Q4_0: one register group (AVX-512) per slice

// Active rows are scattered through the weight (one in ten, say): the
// hardware prefetcher does not follow, so the rows (or row pieces) the next
// items need are fetched by hand, into L2 (prefetcht2: a core has more L2
// than L1 misses in flight; with prefetcht0 the row-sparse product read
// ~9 GB/s against ~13 with L2 hints, LOOM_CPU_PROFILE on the bench model).
constexpr int64_t kAhead = 8;       // rows of MUL_MAT_SPARSE_ROWS in flight per thread
#if LOOM_CPU_INT8_DOT
constexpr int64_t kColsAhead = 16;  // neurons' slice pieces in flight per thread (AXPY)
#endif
inline void prefetch_bytes(const char* p, int64_t bytes) {
  for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, 1);
}

float threshold_of(const loom_tensor_t* dst) {
  float t;
  std::memcpy(&t, &dst->op_params[0], sizeof t);
  return t;
}

// Active entries of scores [J, N] column by column: the j of column n are
// idx[off[n] .. off[n + 1]), increasing.
struct ActiveSet {
  std::vector<int32_t> idx;
  std::vector<int64_t> off;
  std::vector<int64_t> col;  // the column of each entry of idx
};

// Appends to a.idx the j < len with p[j] > t (contiguous f32 scores):
// AVX-512 compares 16 at a time and compresses the passing indices in a
// register; otherwise branchless (every j written, the count advanced by
// the comparison), so a random 10% does not cost a mispredict per score.
void append_active_f32(ActiveSet& a, const float* p, int64_t len, float t) {
  const size_t base = a.idx.size();
  a.idx.resize(base + static_cast<size_t>(len) + 16);
  int32_t* out = a.idx.data() + base;
  int64_t cnt = 0, j = 0;
#ifdef __AVX512F__
  const __m512 tv = _mm512_set1_ps(t);
  __m512i jv = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (; j + 16 <= len; j += 16) {
    const __mmask16 m = _mm512_cmp_ps_mask(_mm512_loadu_ps(p + j), tv, _CMP_GT_OQ);  // NaN: inactive
    _mm512_storeu_si512(out + cnt, _mm512_maskz_compress_epi32(m, jv));
    cnt += __builtin_popcount(m);
    jv = _mm512_add_epi32(jv, _mm512_set1_epi32(16));
  }
#endif
  for (; j < len; ++j) {
    out[cnt] = static_cast<int32_t>(j);
    cnt += p[j] > t ? 1 : 0;  // NaN: inactive
  }
  a.idx.resize(base + static_cast<size_t>(cnt));
}

ActiveSet active_set(const loom_tensor_t* s, float t) {
  ActiveSet a;
  a.off.push_back(0);
  for (int64_t n = 0; n < s->ne[1]; ++n) {
    if (s->type == LOOM_TYPE_F32 && s->nb[0] == sizeof(float)) {
      append_active_f32(a, reinterpret_cast<const float*>(row_ptr(s, n, 0, 0)), s->ne[0], t);
    } else {
      for (int64_t j = 0; j < s->ne[0]; ++j) {
        if (load_elem(s->type, elem_ptr(s, j, n, 0, 0)) > t) a.idx.push_back(static_cast<int32_t>(j));  // NaN: inactive
      }
    }
    a.off.push_back(static_cast<int64_t>(a.idx.size()));
    a.col.resize(a.idx.size(), n);
  }
  return a;
}

// B [K, N] with dense f32 rows: B itself when its rows are, else a copy.
struct DenseB {
  loom_tensor_t t;
  std::vector<float> copy;
  explicit DenseB(const loom_tensor_t* b) : t(*b) {
    const auto p = reinterpret_cast<uintptr_t>(b->data);
    if (b->nb[0] == sizeof(float) && b->nb[1] % sizeof(float) == 0 && p % sizeof(float) == 0) return;
    copy.resize(static_cast<size_t>(b->ne[0] * b->ne[1]));
    for (int64_t n = 0; n < b->ne[1]; ++n) load_row(b, n, 0, 0, copy.data() + n * b->ne[0]);
    t.data = copy.data();
    t.nb[0] = sizeof(float);
    t.nb[1] = t.nb[0] * static_cast<size_t>(b->ne[0]);
    t.nb[2] = t.nb[3] = t.nb[1] * static_cast<size_t>(b->ne[1]);
  }
};

// How rows of A are dotted with B's columns.
enum class RowPath { kInt8, kQ32, kSuper, kFloat, kWiden };

RowPath row_path(int32_t type) {
#if LOOM_CPU_INT8_DOT
  if (type == LOOM_TYPE_Q8_0 || type == LOOM_TYPE_Q4_0) return RowPath::kInt8;
  if (kquant_type(type)) return kquant_superblock(type) ? RowPath::kSuper : RowPath::kQ32;
#endif
  if (type == LOOM_TYPE_F32 || type == LOOM_TYPE_F16 || type == LOOM_TYPE_BF16) return RowPath::kFloat;
  return RowPath::kWiden;
}

struct RowsJob {
  const loom_tensor_t* dst;
  const loom_tensor_t* a;
  const loom_tensor_t* b;  // dense rows
  RowPath path;
  const void* act;  // B quantized: ActBlock or ActBlockK rows ([N][blocks])
  int64_t act_stride_bytes;  // bytes of one column's blocks
};

#if LOOM_CPU_INT8_DOT
// A Q8_0 / Q4_0 block's 32 quants as signed bytes in element order (the
// int8 path's unpacking, matmul_int8.cpp) and its scale.
inline __m256i unpack_q(const loom_block_q8_0_t& b, float* d) {
  *d = _cvtsh_ss(b.d);
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
}
inline __m256i unpack_q(const loom_block_q4_0_t& b, float* d) {
  *d = _cvtsh_ss(b.d);
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  const __m128i low4 = _mm_set1_epi8(0x0F);
  const __m256i q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), low4), _mm_and_si128(v, low4));
  return _mm256_sub_epi8(q, _mm256_set1_epi8(8));
}

// One row of Q8_0 / Q4_0 blocks dotted with one column of B's ActBlocks:
// the same integer dot and f32 sums per block as MUL_MAT's int8 path, one
// row at a time (a row per active neuron: no tiles to fill).
template <typename Block>
float row_dot_int8(const Block* a, const ActBlock* b, int64_t nblk) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nblk; ++i) {
    float da;
    const __m256i x = unpack_q(a[i], &da);
    const __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs)), x);
    const __m256 p = _mm256_cvtepi32_ps(dot_u8s8(_mm256_setzero_si256(), _mm256_abs_epi8(x), sy));
    acc = _mm256_fmadd_ps(p, _mm256_set1_ps(da * b[i].d), acc);
  }
  return hsum_ps(acc);
}

// Outputs [32 b0, 32 (b0 + NB)) of column n of MUL_MAT_SPARSE_COLS for a
// Q8_0 / Q4_0 neuron-major W: the NB blocks' sums stay in registers while
// every active neuron's NB blocks (its piece of the slice) are dequantized
// and added in increasing k, the pieces of the next `ahead` neurons
// fetched meanwhile: one FMA per output per neuron, in increasing k.
template <typename Block, int NB>
void axpy_group(const loom_tensor_t* w, const loom_tensor_t* h, const ActiveSet& s, int64_t n, int64_t b0, float* out) {
  constexpr int64_t ahead = kColsAhead;
  const int64_t beg = s.off[static_cast<size_t>(n)], end = s.off[static_cast<size_t>(n + 1)];
  const int64_t piece = NB * static_cast<int64_t>(sizeof(Block));
  auto piece_of = [&](int64_t i) {
    return reinterpret_cast<const Block*>(row_ptr(w, s.idx[static_cast<size_t>(i)], 0, 0)) + b0;
  };
  for (int64_t i = beg; i < std::min(end, beg + ahead); ++i) prefetch_bytes(reinterpret_cast<const char*>(piece_of(i)), piece);
#ifdef __AVX512F__
  __m512 acc[2 * NB];
  for (auto& a : acc) a = _mm512_setzero_ps();
#else
  __m256 acc[4 * NB];
  for (auto& a : acc) a = _mm256_setzero_ps();
#endif
  for (int64_t i = beg; i < end; ++i) {
    if (i + ahead < end) prefetch_bytes(reinterpret_cast<const char*>(piece_of(i + ahead)), piece);
    const float c = load_elem(h->type, elem_ptr(h, s.idx[static_cast<size_t>(i)], n, 0, 0));
    const Block* r = piece_of(i);
    for (int b = 0; b < NB; ++b) {
      float d;
      const __m256i q = unpack_q(r[b], &d);
#ifdef __AVX512F__
      const __m512 cd = _mm512_set1_ps(c * d);
      acc[2 * b] = _mm512_fmadd_ps(cd, _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_maskz_cvtepi8_epi32(0xFFFF, _mm256_castsi256_si128(q))), acc[2 * b]);
      acc[2 * b + 1] =
          _mm512_fmadd_ps(cd, _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_maskz_cvtepi8_epi32(0xFFFF, _mm256_extracti128_si256(q, 1))), acc[2 * b + 1]);
#else
      const __m256 cd = _mm256_set1_ps(c * d);
      const __m128i lo = _mm256_castsi256_si128(q);
      const __m128i hi = _mm256_extracti128_si256(q, 1);
      const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
      for (int p = 0; p < 4; ++p) {
        acc[4 * b + p] = _mm256_fmadd_ps(cd, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[p])), acc[4 * b + p]);
      }
#endif
    }
  }
#ifdef __AVX512F__
  for (int a = 0; a < 2 * NB; ++a) _mm512_storeu_ps(out + 16 * a, acc[a]);
#else
  for (int a = 0; a < 4 * NB; ++a) _mm256_storeu_ps(out + 8 * a, acc[a]);
#endif
}

// Outputs [m0, m0 + len) (whole blocks) of column n into out: groups of
// kGroupBlocks blocks, then single blocks.
template <typename Block>
void axpy_slice_int8(const loom_tensor_t* w, const loom_tensor_t* h, const ActiveSet& s, int64_t n, int64_t m0,
                     int64_t len, float* out) {
#ifdef __AVX512F__
  constexpr int kGroupBlocks = 4;  // 8 zmm sums
#else
  constexpr int kGroupBlocks = 2;  // 8 ymm sums
#endif
  int64_t b = m0 / 32;
  const int64_t b_end = (m0 + len) / 32;
  for (; b + kGroupBlocks <= b_end; b += kGroupBlocks) axpy_group<Block, kGroupBlocks>(w, h, s, n, b, out + 32 * b - m0);
  for (; b < b_end; ++b) axpy_group<Block, 1>(w, h, s, n, b, out + 32 * b - m0);
}
#endif

// Rows [m0, m0 + len) of A against column n of B into dst[m0.., n], on
// MUL_MAT's kernel for A's type through views of those rows.
void rows_on_kernel(const RowsJob& j, int64_t n, int64_t m0, int64_t len) {
  loom_tensor_t av = *j.a;
  av.ne[1] = len;
  av.data = row_ptr(j.a, m0, 0, 0);
  loom_tensor_t bv = *j.b;
  bv.ne[1] = 1;
  bv.data = row_ptr(j.b, n, 0, 0);
  loom_tensor_t dv = *j.dst;
  dv.op = LOOM_OP_MUL_MAT;
  dv.ne[0] = len;
  dv.ne[1] = 1;
  dv.data = elem_ptr(j.dst, m0, n, 0, 0);
  dv.src[0] = &av;
  dv.src[1] = &bv;
  dv.src[2] = nullptr;
  const char* act = static_cast<const char*>(j.act) + n * j.act_stride_bytes;
  switch (j.path) {
    case RowPath::kInt8:
      mul_mat_int8_act(&dv, reinterpret_cast<const ActBlock*>(act), 0, 1);
      break;
#if LOOM_CPU_INT8_DOT
    case RowPath::kQ32: mul_mat_kquant_32(&dv, reinterpret_cast<const ActBlock*>(act), 0, 1); break;
    case RowPath::kSuper: mul_mat_kquant_k(&dv, reinterpret_cast<const ActBlockK*>(act), 0, 1); break;
#endif
    default: break;
  }
}

// Row m of A dotted with column n in f32 (float A read in place when f32,
// else widened into tmp).
void row_in_f32(const RowsJob& j, int64_t n, int64_t m, float* tmp) {
  const int64_t k = j.a->ne[0];
  const char* row = row_ptr(j.a, m, 0, 0);
  const float* x = reinterpret_cast<const float*>(row_ptr(j.b, n, 0, 0));
  const float* w = tmp;
  if (j.a->type == LOOM_TYPE_F32 && j.a->nb[0] == sizeof(float)) {
    w = reinterpret_cast<const float*>(row);
  } else if (float_rows(j.a)) {
    widen_range(j.a->type, row, 0, k, tmp);
  } else {
    common::to_float_row(j.a->type, row, tmp, k);
  }
  const float v = simd_dot(w, x, k);
  std::memcpy(elem_ptr(j.dst, m, n, 0, 0), &v, sizeof v);
}

// Items [i0, i1) of the active list: runs of consecutive rows of one column.
void rows_chunk(const RowsJob& j, const ActiveSet& s, int64_t i0, int64_t i1, float* tmp) {
  const bool kernel = j.path == RowPath::kInt8 || j.path == RowPath::kQ32 || j.path == RowPath::kSuper;
  const auto row_bytes = static_cast<int64_t>(j.a->nb[1]);
  for (int64_t i = i0; i < std::min(i1, i0 + kAhead); ++i) {
    prefetch_bytes(row_ptr(j.a, s.idx[static_cast<size_t>(i)], 0, 0), row_bytes);
  }
  for (int64_t i = i0; i < i1;) {
    const int64_t n = s.col[static_cast<size_t>(i)];
    const int64_t m0 = s.idx[static_cast<size_t>(i)];
    int64_t len = 1;
    while (i + len < i1 && s.col[static_cast<size_t>(i + len)] == n && s.idx[static_cast<size_t>(i + len)] == m0 + len) {
      ++len;
    }
    for (int64_t a = i + kAhead; a < std::min(i1, i + kAhead + len); ++a) {
      prefetch_bytes(row_ptr(j.a, s.idx[static_cast<size_t>(a)], 0, 0), row_bytes);
    }
#if LOOM_CPU_INT8_DOT
    if (j.path == RowPath::kInt8 && len < 4) {
      // Short runs (most, at high sparsity): one row at a time, no views.
      const auto* b = reinterpret_cast<const ActBlock*>(static_cast<const char*>(j.act) + n * j.act_stride_bytes);
      const int64_t nblk = j.a->ne[0] / 32;
      for (int64_t m = m0; m < m0 + len; ++m) {
        const char* row = row_ptr(j.a, m, 0, 0);
        const float v = j.a->type == LOOM_TYPE_Q8_0
                            ? row_dot_int8(reinterpret_cast<const loom_block_q8_0_t*>(row), b, nblk)
                            : row_dot_int8(reinterpret_cast<const loom_block_q4_0_t*>(row), b, nblk);
        std::memcpy(elem_ptr(j.dst, m, n, 0, 0), &v, sizeof v);
      }
      i += len;
      continue;
    }
#endif
    if (kernel) {
      rows_on_kernel(j, n, m0, len);
    } else {
      for (int64_t m = m0; m < m0 + len; ++m) row_in_f32(j, n, m, tmp);
    }
    i += len;
  }
}

void zero_inactive_rows(const loom_tensor_t* dst, const ActiveSet& s) {
  for (int64_t n = 0; n < dst->ne[1]; ++n) {
    if (dst->nb[0] == sizeof(float)) {
      // A contiguous column: all of it zeroed, the active rows written later.
      std::memset(elem_ptr(dst, 0, n, 0, 0), 0, sizeof(float) * static_cast<size_t>(dst->ne[0]));
      continue;
    }
    int64_t next = s.off[static_cast<size_t>(n)];
    const int64_t end = s.off[static_cast<size_t>(n + 1)];
    for (int64_t m = 0; m < dst->ne[0]; ++m) {
      if (next < end && s.idx[static_cast<size_t>(next)] == m) {
        ++next;
        continue;
      }
      const float zero = 0.0f;
      std::memcpy(elem_ptr(dst, m, n, 0, 0), &zero, sizeof zero);
    }
  }
}

void run_sparse_rows(const loom_tensor_t* dst, Exec& ex) {
  const loom_tensor_t* a = dst->src[0];
  const ActiveSet s = active_set(dst->src[2], threshold_of(dst));
  zero_inactive_rows(dst, s);
  const auto n_active = static_cast<int64_t>(s.idx.size());
  if (n_active == 0) return;
  const DenseB b(dst->src[1]);
  // Strided B takes the f32 path, as MUL_MAT does (B is not rounded then).
  RowsJob j{dst, a, &b.t, b.copy.empty() ? row_path(a->type) : RowPath::kWiden, nullptr, 0};
  const int64_t k = a->ne[0];
  const int64_t n = b.t.ne[1];
  // Scratch: B quantized (the integer paths), then one f32 row per slot.
  size_t act_bytes = 0;
#if LOOM_CPU_INT8_DOT
  if (j.path == RowPath::kInt8 || j.path == RowPath::kQ32) {
    j.act_stride_bytes = static_cast<int64_t>(sizeof(ActBlock)) * (k / 32);
  } else if (j.path == RowPath::kSuper) {
    j.act_stride_bytes = static_cast<int64_t>(sizeof(ActBlockK)) * (k / 256);
  }
#endif
  act_bytes = static_cast<size_t>(j.act_stride_bytes * n + 64) / 64 * 64;
  const int slots = ex.threads();
  auto* base = static_cast<char*>(ex.scratch(act_bytes + sizeof(float) * static_cast<size_t>(k * slots)));
  j.act = base;
  float* tmp = reinterpret_cast<float*>(base + act_bytes);
#if LOOM_CPU_INT8_DOT
  if (j.act_stride_bytes > 0) {
    ex.run([&](int ith, int nth) {
      int64_t r0, r1;
      common::split_range(n, ith, nth, &r0, &r1);
      if (r0 >= r1) return;
      if (j.path == RowPath::kSuper) {
        quantize_act_rows_k(&b.t, r0, r1, reinterpret_cast<ActBlockK*>(base));  // writes rows r0..r1
      } else {
        quantize_act_rows(&b.t, r0, r1, reinterpret_cast<ActBlock*>(base));
      }
    });
  }
#endif
  const int64_t chunks = (n_active + kRowChunk - 1) / kRowChunk;
  ex.run([&](int ith, int) {
    for (int64_t c = ex.next_chunk(); c < chunks; c = ex.next_chunk()) {
      rows_chunk(j, s, c * kRowChunk, std::min(n_active, (c + 1) * kRowChunk), tmp + ith * k);
    }
  });
}

// Outputs [m0, m0 + len) of every column: the active neurons' slices added
// in increasing k.
void cols_slice(const loom_tensor_t* dst, const ActiveSet& s, int64_t m0, int64_t len, float* acc, float* tmp) {
  const loom_tensor_t* w = dst->src[0];
  const loom_tensor_t* h = dst->src[1];
  const common::TypeTraits& tr = common::type_traits(w->type);
  const bool f32 = w->type == LOOM_TYPE_F32 && w->nb[0] == sizeof(float);
  const int64_t slice_off = tr.is_quantized ? m0 / tr.block_size * static_cast<int64_t>(tr.type_size)
                                            : m0 * static_cast<int64_t>(w->nb[0]);
  const int64_t slice_bytes = tr.is_quantized ? len / tr.block_size * static_cast<int64_t>(tr.type_size)
                                              : len * static_cast<int64_t>(w->nb[0]);
  for (int64_t n = 0; n < dst->ne[1]; ++n) {
#if LOOM_CPU_INT8_DOT
    if (w->type == LOOM_TYPE_Q8_0 || w->type == LOOM_TYPE_Q4_0) {
      if (w->type == LOOM_TYPE_Q8_0) {
        axpy_slice_int8<loom_block_q8_0_t>(w, h, s, n, m0, len, acc);
      } else {
        axpy_slice_int8<loom_block_q4_0_t>(w, h, s, n, m0, len, acc);
      }
      for (int64_t e = 0; e < len; ++e) std::memcpy(elem_ptr(dst, m0 + e, n, 0, 0), &acc[e], sizeof(float));
      continue;
    }
#endif
    std::fill(acc, acc + len, 0.0f);
    const int64_t end = s.off[static_cast<size_t>(n + 1)];
    for (int64_t i = s.off[static_cast<size_t>(n)]; i < std::min(end, s.off[static_cast<size_t>(n)] + kAhead); ++i) {
      prefetch_bytes(row_ptr(w, s.idx[static_cast<size_t>(i)], 0, 0) + slice_off, slice_bytes);
    }
    for (int64_t i = s.off[static_cast<size_t>(n)]; i < end; ++i) {
      const int64_t k = s.idx[static_cast<size_t>(i)];
      if (i + kAhead < end) prefetch_bytes(row_ptr(w, s.idx[static_cast<size_t>(i + kAhead)], 0, 0) + slice_off, slice_bytes);
      const float c = load_elem(h->type, elem_ptr(h, k, n, 0, 0));
      const char* row = row_ptr(w, k, 0, 0);
      const float* x = tmp;
      if (f32) {
        x = reinterpret_cast<const float*>(row) + m0;
      } else if (float_rows(w)) {
        widen_range(w->type, row, m0, len, tmp);
      } else if (!tr.is_quantized) {
        for (int64_t e = 0; e < len; ++e) tmp[e] = load_elem(w->type, row + (m0 + e) * static_cast<int64_t>(w->nb[0]));
      } else {
        common::to_float_row(w->type, row + (m0 / tr.block_size) * static_cast<int64_t>(tr.type_size), tmp, len);
      }
      simd_axpy(acc, c, x, len);
    }
    for (int64_t e = 0; e < len; ++e) std::memcpy(elem_ptr(dst, m0 + e, n, 0, 0), &acc[e], sizeof(float));
  }
}

void run_sparse_cols(const loom_tensor_t* dst, Exec& ex) {
  const ActiveSet s = active_set(dst->src[2], threshold_of(dst));
  const int64_t m = dst->ne[0];
  const int32_t wt = dst->src[0]->type;
  const int64_t slice = wt == LOOM_TYPE_Q8_0 || wt == LOOM_TYPE_Q4_0 ? kColSlice32 : kColSlice;
  const int64_t slices = (m + slice - 1) / slice;
  const int slots = ex.threads();
  float* base = static_cast<float*>(ex.scratch(sizeof(float) * 2 * kColSlice * static_cast<size_t>(slots)));
  ex.run([&](int ith, int) {
    float* acc = base + 2 * kColSlice * ith;
    for (int64_t c = ex.next_chunk(); c < slices; c = ex.next_chunk()) {
      const int64_t m0 = c * slice;
      cols_slice(dst, s, m0, std::min(slice, m - m0), acc, acc + kColSlice);
    }
  });
}

}  // namespace

void run_mul_mat_sparse(const loom_tensor_t* dst, Exec& ex) {
  if (dst->op == LOOM_OP_MUL_MAT_SPARSE_ROWS) {
    run_sparse_rows(dst, ex);
  } else {
    run_sparse_cols(dst, ex);
  }
}

}  // namespace loom::cpu
