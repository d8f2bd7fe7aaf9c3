// MUL_MAT: dst[m, n, i2, i3] = sum_k A[k, m, i2/r2, i3/r3] * B[k, n, i2, i3].
//
// With ne[0] innermost, one (i2, i3) slice is, in row-major terms,
//   dst (N x M) = B (N x K) . A^T (K x M)
// i.e. cblas_sgemm(RowMajor, NoTrans, Trans, N, M, K, 1, B, ldb, A, lda, 0,
// dst, ldd), each ld the row stride in floats; N == 1 uses cblas_sgemv
// (y = A x, element strides allowed). An operand goes to BLAS in place when
// it is F32 with unit inner stride and a regular row stride >= its row
// length; otherwise it is converted (dequantized, gathered) into the
// stream's f32 scratch first. Each A slice is converted once and used for
// all r2 * r3 B slices that broadcast over it; when the r2 B slices of one i3
// are stacked rows in memory they go to BLAS as one taller product.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include <cblas.h>

#include "common/quant.h"
#include "common/type_traits.h"
#include "ops/ops.h"

namespace loom::blas {

namespace {

// Conversions below this many elements stay on the calling thread.
constexpr int64_t kParallelConvertMin = int64_t{1} << 15;

const char* slice_ptr(const loom_tensor_t* t, int64_t i2, int64_t i3) {
  return static_cast<const char*>(t->data) + i2 * static_cast<int64_t>(t->nb[2]) +
         i3 * static_cast<int64_t>(t->nb[3]);
}

bool f32_aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % alignof(float) == 0; }

// Row stride in floats when rows of `len` floats starting at `p` with the
// tensor's nb[0]/nb[1] can go to BLAS as they are; -1 when not. A single row
// gets ld = len.
int64_t direct_ld(const loom_tensor_t* t, const void* p, int64_t rows, int64_t len) {
  if (t->type != LOOM_TYPE_F32 || t->nb[0] != sizeof(float) || !f32_aligned(p)) return -1;
  if (rows <= 1) return len < 1 ? 1 : len;
  if (t->nb[1] % sizeof(float) != 0) return -1;
  const auto ld = static_cast<int64_t>(t->nb[1] / sizeof(float));
  return ld >= len && ld >= 1 && ld <= kMaxBlasInt ? ld : -1;
}

// Rows [r0, r1) of the slice at `base` (ne[0] elements each, any supported
// type, any strides) -> dense floats at out + r * ne[0].
void convert_rows(const loom_tensor_t* t, const char* base, int64_t r0, int64_t r1, float* out) {
  const common::TypeTraits& tr = common::type_traits(t->type);
  const int64_t len = t->ne[0];
  const int64_t nblocks = len / tr.block_size;
  const auto nb0 = static_cast<int64_t>(t->nb[0]);
  for (int64_t r = r0; r < r1; ++r) {
    const char* row = base + r * static_cast<int64_t>(t->nb[1]);
    float* dst = out + r * len;
    if (t->nb[0] == tr.type_size) {
      common::to_float_row(t->type, row, dst, len);
    } else {
      for (int64_t b = 0; b < nblocks; ++b) {
        common::to_float_row(t->type, row + b * nb0, dst + b * tr.block_size, tr.block_size);
      }
    }
  }
}

// All ne[1] rows of slice (i2, i3) of t into `out` (dense, ld = ne[0]),
// split over the pool when large.
void convert_slice(const loom_tensor_t* t, int64_t i2, int64_t i3, float* out,
                   common::ThreadPool* pool) {
  const char* base = slice_ptr(t, i2, i3);
  const int64_t rows = t->ne[1];
  if (pool == nullptr || pool->size() <= 1 || rows < 2 || rows * t->ne[0] < kParallelConvertMin) {
    convert_rows(t, base, 0, rows, out);
    return;
  }
  pool->run([&](int ith, int nth) {
    int64_t r0, r1;
    common::split_range(rows, ith, nth, &r0, &r1);
    convert_rows(t, base, r0, r1, out);
  });
}

// An operand slice ready for BLAS: rows of floats `ld` apart.
struct Operand {
  const float* p;
  int64_t ld;
};

// Slice (i2, i3) of t in place, or converted into the scratch that `region`
// selects (only touched, and grown, when needed).
Operand prepare(const loom_tensor_t* t, int64_t i2, int64_t i3, Workspace& ws,
                float* (Scratch::*region)(size_t)) {
  const char* base = slice_ptr(t, i2, i3);
  const int64_t ld = direct_ld(t, base, t->ne[1], t->ne[0]);
  if (ld > 0) return Operand{reinterpret_cast<const float*>(base), ld};
  float* scratch = (ws.scratch->*region)(static_cast<size_t>(t->ne[1] * t->ne[0]));
  convert_slice(t, i2, i3, scratch, ws.pool);
  return Operand{scratch, t->ne[0] < 1 ? 1 : t->ne[0]};
}

void store_f32(char* p, float v) { std::memcpy(p, &v, sizeof v); }

void fill_zero(const loom_tensor_t* dst) {
  for (int64_t i3 = 0; i3 < dst->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < dst->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < dst->ne[1]; ++i1)
        for (int64_t i0 = 0; i0 < dst->ne[0]; ++i0) {
          store_f32(static_cast<char*>(dst->data) + i0 * static_cast<int64_t>(dst->nb[0]) +
                        i1 * static_cast<int64_t>(dst->nb[1]) +
                        i2 * static_cast<int64_t>(dst->nb[2]) +
                        i3 * static_cast<int64_t>(dst->nb[3]),
                    0.0f);
        }
}

// Element stride in floats of a vector whose elements are `nb` bytes apart
// starting at p, or 0 when BLAS cannot address it in place.
int64_t vector_inc(const void* p, size_t nb) {
  if (!f32_aligned(p) || nb == 0 || nb % sizeof(float) != 0) return 0;
  const auto inc = static_cast<int64_t>(nb / sizeof(float));
  return inc <= kMaxBlasInt ? inc : 0;
}

// One (i2, i3) slice with N == 1: y[m] = sum_k A[m][k] x[k] via sgemv.
void slice_gemv(const loom_tensor_t* dst, const loom_tensor_t* b, const Operand& a, int64_t i2,
                int64_t i3, Scratch& scratch) {
  const int64_t k_len = b->ne[0];
  const int64_t m_len = dst->ne[0];
  const char* xb = slice_ptr(b, i2, i3);
  const float* x = reinterpret_cast<const float*>(xb);
  int64_t incx = vector_inc(xb, b->nb[0]);
  if (incx == 0) {
    float* xs = scratch.b(static_cast<size_t>(k_len));
    for (int64_t k = 0; k < k_len; ++k)
      std::memcpy(xs + k, xb + k * static_cast<int64_t>(b->nb[0]), sizeof(float));
    x = xs;
    incx = 1;
  }
  char* yb = const_cast<char*>(slice_ptr(dst, i2, i3));
  const int64_t incy = vector_inc(yb, dst->nb[0]);
  float* y = incy != 0 ? reinterpret_cast<float*>(yb) : scratch.c(static_cast<size_t>(m_len));
  cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(m_len), static_cast<blasint>(k_len),
              1.0f, a.p, static_cast<blasint>(a.ld), x, static_cast<blasint>(incx), 0.0f, y,
              static_cast<blasint>(incy != 0 ? incy : 1));
  if (incy == 0) {
    for (int64_t m = 0; m < m_len; ++m) store_f32(yb + m * static_cast<int64_t>(dst->nb[0]), y[m]);
  }
}

// One (i2, i3) slice, general N: dst (N x M) = B (N x K) . A^T via sgemm.
void slice_gemm(const loom_tensor_t* dst, const loom_tensor_t* b, const Operand& a, int64_t i2,
                int64_t i3, Workspace& ws) {
  const int64_t k_len = b->ne[0];
  const int64_t m_len = dst->ne[0];
  const int64_t n_len = dst->ne[1];
  const Operand bo = prepare(b, i2, i3, ws, &Scratch::b);
  char* cb = const_cast<char*>(slice_ptr(dst, i2, i3));
  const int64_t ldc_direct = direct_ld(dst, cb, n_len, m_len);
  float* c = ldc_direct > 0 ? reinterpret_cast<float*>(cb)
                            : ws.scratch->c(static_cast<size_t>(n_len * m_len));
  const int64_t ldc = ldc_direct > 0 ? ldc_direct : m_len;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(n_len),
              static_cast<blasint>(m_len), static_cast<blasint>(k_len), 1.0f, bo.p,
              static_cast<blasint>(bo.ld), a.p, static_cast<blasint>(a.ld), 0.0f, c,
              static_cast<blasint>(ldc));
  if (ldc_direct <= 0) {
    for (int64_t n = 0; n < n_len; ++n)
      for (int64_t m = 0; m < m_len; ++m) {
        store_f32(cb + m * static_cast<int64_t>(dst->nb[0]) + n * static_cast<int64_t>(dst->nb[1]),
                  c[n * m_len + m]);
      }
  }
}

// Whether the r2 B slices (and result slices) i2 = i2_0 .. i2_0 + r2 - 1 at
// one i3 are N-row blocks stacked at a regular row stride, in place for
// BLAS: then they share A and go as one sgemm of N * r2 rows.
bool can_stack(const loom_tensor_t* dst, const loom_tensor_t* b, int64_t r2, int64_t i2_0,
               int64_t i3) {
  const int64_t n_len = b->ne[1];
  const int64_t rows = n_len * r2;
  if (r2 < 2 || rows > kMaxBlasInt) return false;
  return b->nb[2] == static_cast<size_t>(n_len) * b->nb[1] &&
         dst->nb[2] == static_cast<size_t>(n_len) * dst->nb[1] &&
         direct_ld(b, slice_ptr(b, i2_0, i3), 2, b->ne[0]) > 0 &&
         direct_ld(dst, slice_ptr(dst, i2_0, i3), 2, dst->ne[0]) > 0;
}

// B slices i2_0 .. i2_0 + r2 - 1 as one (N * r2) x K operand (can_stack).
void stacked_gemm(const loom_tensor_t* dst, const loom_tensor_t* b, const Operand& a, int64_t r2,
                  int64_t i2_0, int64_t i3) {
  const char* bb = slice_ptr(b, i2_0, i3);
  char* cb = const_cast<char*>(slice_ptr(dst, i2_0, i3));
  const int64_t rows = b->ne[1] * r2;
  const int64_t ldb = direct_ld(b, bb, 2, b->ne[0]);
  const int64_t ldc = direct_ld(dst, cb, 2, dst->ne[0]);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(rows),
              static_cast<blasint>(dst->ne[0]), static_cast<blasint>(b->ne[0]), 1.0f,
              reinterpret_cast<const float*>(bb), static_cast<blasint>(ldb), a.p,
              static_cast<blasint>(a.ld), 0.0f, reinterpret_cast<float*>(cb),
              static_cast<blasint>(ldc));
}

}  // namespace

void mul_mat(const loom_tensor_t* dst, Workspace& ws) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  const int64_t k_len = a->ne[0];
  const int64_t m_len = a->ne[1];
  const int64_t n_len = b->ne[1];
  if (m_len == 0 || n_len == 0 || b->ne[2] == 0 || b->ne[3] == 0) return;
  if (k_len == 0) {
    fill_zero(dst);
    return;
  }
  if (k_len > kMaxBlasInt || m_len > kMaxBlasInt || n_len > kMaxBlasInt) {
    throw KernelError("extents " + std::to_string(k_len) + "x" + std::to_string(m_len) + "x" +
                      std::to_string(n_len) + " exceed the BLAS integer range");
  }
  const int64_t r2 = b->ne[2] / a->ne[2];
  const int64_t r3 = b->ne[3] / a->ne[3];
  for (int64_t ia3 = 0; ia3 < a->ne[3]; ++ia3) {
    for (int64_t ia2 = 0; ia2 < a->ne[2]; ++ia2) {
      const Operand ao = prepare(a, ia2, ia3, ws, &Scratch::a);
      for (int64_t i3 = ia3 * r3; i3 < (ia3 + 1) * r3; ++i3) {
        if (can_stack(dst, b, r2, ia2 * r2, i3)) {
          stacked_gemm(dst, b, ao, r2, ia2 * r2, i3);
          continue;
        }
        for (int64_t i2 = ia2 * r2; i2 < (ia2 + 1) * r2; ++i2) {
          if (n_len == 1) {
            slice_gemv(dst, b, ao, i2, i3, *ws.scratch);
          } else {
            slice_gemm(dst, b, ao, i2, i3, ws);
          }
        }
      }
    }
  }
}

}  // namespace loom::blas
