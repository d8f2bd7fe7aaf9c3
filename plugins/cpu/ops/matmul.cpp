// MUL_MAT: dst[m, n, i2, i3] = sum_k A[k, m, i2/r2, i3/r3] * B[k, n, i2, i3].
//
// Dispatch (run_mul_mat) and the paths every build has. When B's rows are
// dense f32 (the usual case), the x86-64 builds' fast paths come first:
// Q8_0 / Q4_0 A on the int8 path (matmul_int8.cpp, matmul_x8.cpp), float A
// on the packed GEMM or the decode GEMV (matmul_gemm.cpp). Otherwise: A with
// contiguous columns (attention's V^T) is summed column-wise; the row-dot
// path widens blocks of kRowBlock rows of A to f32 and dots them with the
// rows of B, kTileM x kTileN at a time in vector registers. B with strided
// rows, and every MUL_MAT under LOOM_CPU_REFERENCE=1, take the reference
// loop: each row of A widened once, dotted with every column of B through
// its byte strides in double.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/env.h"
#include "common/fp16.h"
#include "common/quant.h"
#include "ops/matmul.h"
#include "ops/matmul_kquant.h"
#include "ops/ops.h"
#include "ops/simd.h"
#include "weight_layout.h"

namespace loom::cpu {

namespace {

constexpr int64_t kRowBlock = 8;

bool force_reference() {
  static const bool on = [] {
    return common::plugin_env_flag("LOOM_CPU_REFERENCE", false);
  }();
  return on;
}

// out[r][c] = dot(a[r], b[c]) over n floats for a kTileM x kTileN tile:
// every loaded vector of A is used kTileN times and of B kTileM times
// (register blocking), against once per multiply in dot_f32.
constexpr int kTileM = 4;
constexpr int kTileN = 3;
inline void dot_tile(const float* const* a, const float* const* b, int64_t n, float out[kTileM][kTileN]) {
  simd_f acc[kTileM][kTileN] = {};
  int64_t k = 0;
  for (; k + kSimdLanes <= n; k += kSimdLanes) {
    simd_f bv[kTileN];
    for (int c = 0; c < kTileN; ++c) bv[c] = simd_load(b[c] + k);
    for (int r = 0; r < kTileM; ++r) {
      const simd_f av = simd_load(a[r] + k);
      for (int c = 0; c < kTileN; ++c) acc[r][c] += av * bv[c];
    }
  }
  for (int r = 0; r < kTileM; ++r) {
    for (int c = 0; c < kTileN; ++c) {
      float s = 0.0f;
      for (int j = 0; j < kSimdLanes; ++j) s += acc[r][c][j];
      for (int64_t kk = k; kk < n; ++kk) s += a[r][kk] * b[c][kk];
      out[r][c] = s;
    }
  }
}

inline void store_out(const loom_tensor_t* dst, int64_t m, int64_t n, int64_t i2, int64_t i3, float v) {
  std::memcpy(elem_ptr(dst, m, n, i2, i3), &v, 4);
}

// Row i1 of A as f32: a pointer into A itself for contiguous f32 rows,
// else widened into `scratch` — inline here (not common::to_float_row) so
// the AVX2 build vectorizes it, with F16C conversion where available.
// Row i1 of A (any layout, also repacked weights) as ne[0] floats.
void load_a_row(const loom_tensor_t* a, int64_t i1, int64_t i2, int64_t i3, float* out) {
  if (is_repacked(a)) {  // 2-D, dense: gather the row's blocks back first
    thread_local std::vector<uint8_t> canon;
    canon.resize(static_cast<size_t>(a->nb[1]));
    repacked_row(a, i1, canon.data());
    common::to_float_row(a->type, canon.data(), out, a->ne[0]);
    return;
  }
  load_row(a, i1, i2, i3, out);
}

const float* widen_row(const loom_tensor_t* a, int64_t i1, int64_t i2, int64_t i3, float* scratch) {
  if (is_repacked(a)) {
    load_a_row(a, i1, i2, i3, scratch);
    return scratch;
  }
  const char* row = row_ptr(a, i1, i2, i3);
  const int64_t n = a->ne[0];
  switch (a->type) {
    case LOOM_TYPE_F32:
      if (a->nb[0] == sizeof(float) && reinterpret_cast<uintptr_t>(row) % alignof(float) == 0) {
        return reinterpret_cast<const float*>(row);
      }
      break;
    case LOOM_TYPE_F16:
    case LOOM_TYPE_BF16:
      if (a->nb[0] == 2) {
        widen_range(a->type, row, 0, n, scratch);
        return scratch;
      }
      break;
    case LOOM_TYPE_Q8_0: {  // quantized rows are whole contiguous blocks (supports_op)
      const auto* blk = reinterpret_cast<const loom_block_q8_0_t*>(row);
      for (int64_t i = 0; i < n / LOOM_QK8_0; ++i) {
        const float d = common::f16_to_f32(blk[i].d);
        float* out = scratch + i * LOOM_QK8_0;
        for (int j = 0; j < LOOM_QK8_0; ++j) out[j] = d * static_cast<float>(blk[i].qs[j]);
      }
      return scratch;
    }
    case LOOM_TYPE_Q4_0: {
      const auto* blk = reinterpret_cast<const loom_block_q4_0_t*>(row);
      constexpr int kHalf = LOOM_QK4_0 / 2;
      for (int64_t i = 0; i < n / LOOM_QK4_0; ++i) {
        const float d = common::f16_to_f32(blk[i].d);
        float* out = scratch + i * LOOM_QK4_0;
        for (int j = 0; j < kHalf; ++j) {
          out[j] = d * static_cast<float>((blk[i].qs[j] & 0x0F) - 8);
          out[j + kHalf] = d * static_cast<float>((blk[i].qs[j] >> 4) - 8);
        }
      }
      return scratch;
    }
    default:
      break;
  }
  load_row(a, i1, i2, i3, scratch);
  return scratch;
}

void mul_mat_fast(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  const MatDims d(dst);
  const int64_t k_len = d.k, m_len = d.m, n_len = d.n, r2 = d.r2, r3 = d.r3;
  const int64_t m_blocks = (m_len + kRowBlock - 1) / kRowBlock;
  std::vector<float> rows(static_cast<size_t>(kRowBlock * k_len));
  const bool dst_dense = dst->nb[0] == sizeof(float);
  for_share(d, m_blocks, ith, nth, [&](int64_t mb, int64_t i2, int64_t i3) {
    const int64_t m0 = mb * kRowBlock;
    const int64_t nr = std::min(kRowBlock, m_len - m0);
    const float* arows[kRowBlock];
    for (int64_t r = 0; r < nr; ++r) arows[r] = widen_row(a, m0 + r, i2 / r2, i3 / r3, rows.data() + r * k_len);
    int64_t n = 0;
    // Whole tiles of kTileN columns: register-blocked dots.
    for (; n + kTileN <= n_len; n += kTileN) {
      const float* bcols[kTileN];
      for (int c = 0; c < kTileN; ++c) bcols[c] = reinterpret_cast<const float*>(row_ptr(b, n + c, i2, i3));
      int64_t r = 0;
      for (; r + kTileM <= nr; r += kTileM) {
        float t[kTileM][kTileN];
        dot_tile(arows + r, bcols, k_len, t);
        for (int i = 0; i < kTileM; ++i) {
          for (int c = 0; c < kTileN; ++c) store_out(dst, m0 + r + i, n + c, i2, i3, t[i][c]);
        }
      }
      for (; r < nr; ++r) {
        for (int c = 0; c < kTileN; ++c) store_out(dst, m0 + r, n + c, i2, i3, simd_dot(arows[r], bcols[c], k_len));
      }
    }
    for (; n < n_len; ++n) {
      const auto* brow = reinterpret_cast<const float*>(row_ptr(b, n, i2, i3));
      char* out = elem_ptr(dst, m0, n, i2, i3);
      for (int64_t r = 0; r < nr; ++r) {
        const float v = simd_dot(arows[r], brow, k_len);
        if (dst_dense) {
          reinterpret_cast<float*>(out)[r] = v;
        } else {
          std::memcpy(out + r * static_cast<int64_t>(dst->nb[0]), &v, 4);
        }
      }
    }
  });
}

// A whose columns are contiguous (nb[1] = element size: a transposed view,
// like attention's V^T over the KV cache): dst[:, n] = sum_k B[k, n] * A[k, :],
// one contiguous vector of A per k, instead of gathering each strided row of
// A. f32 sums over runs of kRun rows of A, added up in double.
bool columns_contiguous(const loom_tensor_t* a) {
  return (a->type == LOOM_TYPE_F32 && a->nb[1] == sizeof(float)) || (a->type == LOOM_TYPE_F16 && a->nb[1] == 2);
}

void mul_mat_columns(const loom_tensor_t* dst, int ith, int nth) {
  constexpr int64_t kRun = 32;
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  const MatDims d(dst);
  const int64_t k_len = d.k, m_len = d.m, r2 = d.r2, r3 = d.r3;
  std::vector<float> run(static_cast<size_t>(m_len)), col(static_cast<size_t>(m_len));
  std::vector<double> total(static_cast<size_t>(m_len));
  for_share(d, d.n, ith, nth, [&](int64_t n, int64_t i2, int64_t i3) {
    const auto* brow = reinterpret_cast<const float*>(row_ptr(b, n, i2, i3));
    const char* a0 = row_ptr(a, 0, i2 / r2, i3 / r3);  // A[0, 0]; A[k, :] is k * nb[0] further
    std::fill(total.begin(), total.end(), 0.0);
    for (int64_t k0 = 0; k0 < k_len; k0 += kRun) {
      std::fill(run.begin(), run.end(), 0.0f);
      for (int64_t k = k0; k < std::min(k_len, k0 + kRun); ++k) {
        const char* ak = a0 + k * static_cast<int64_t>(a->nb[0]);
        const float* av = reinterpret_cast<const float*>(ak);
        if (a->type == LOOM_TYPE_F16 || reinterpret_cast<uintptr_t>(ak) % alignof(float) != 0) {
          common::to_float_row(a->type, ak, col.data(), m_len);
          av = col.data();
        }
        simd_axpy(run.data(), brow[k], av, m_len);
      }
      for (int64_t m = 0; m < m_len; ++m) total[m] += run[m];
    }
    for (int64_t m = 0; m < m_len; ++m) store_out(dst, m, n, i2, i3, static_cast<float>(total[m]));
  });
}

// B rows of contiguous, 4-byte-aligned f32: the fast paths.
bool b_rows_dense(const loom_tensor_t* dst) {
  const loom_tensor_t* bsrc = dst->src[1];
  return !force_reference() && bsrc->type == LOOM_TYPE_F32 && bsrc->nb[0] == sizeof(float) &&
         reinterpret_cast<uintptr_t>(bsrc->data) % alignof(float) == 0 && bsrc->nb[1] % sizeof(float) == 0 &&
         bsrc->nb[2] % sizeof(float) == 0 && bsrc->nb[3] % sizeof(float) == 0;
}

// A read as columns (a transposed view): k is A's slow axis.
bool columns_path(const loom_tensor_t* dst) {
  return columns_contiguous(dst->src[0]) && dst->src[0]->nb[0] != dst->src[0]->nb[1];
}

// Float A that is not repacked, on the packed GEMM (run_mul_mat_gemm).
bool float_gemm(const loom_tensor_t* dst) {
  return b_rows_dense(dst) && !columns_path(dst) && !is_repacked(dst->src[0]) && gemm_path(dst);
}

void kernel_mul_mat(const loom_tensor_t* dst, int ith, int nth, Exec& ex) {
  if (b_rows_dense(dst)) {
    if (columns_path(dst)) {
      mul_mat_columns(dst, ith, nth);
    } else if (!is_repacked(dst->src[0]) && gemv_path(dst)) {
      mul_mat_gemv(dst, ith, nth, ex);
    } else {
      mul_mat_fast(dst, ith, nth);
    }
    return;
  }
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  const MatDims d(dst);
  const int64_t k_len = d.k, n_len = d.n;
  const int64_t bs0 = static_cast<int64_t>(b->nb[0]);
  std::vector<float> arow(static_cast<size_t>(k_len));
  for_share(d, d.m, ith, nth, [&](int64_t m, int64_t i2, int64_t i3) {
    load_a_row(a, m, i2 / d.r2, i3 / d.r3, arow.data());
    for (int64_t n = 0; n < n_len; ++n) {
      const char* brow = row_ptr(b, n, i2, i3);
      double sum = 0.0;
      for (int64_t k = 0; k < k_len; ++k) {
        float bv;
        std::memcpy(&bv, brow + k * bs0, 4);
        sum += static_cast<double>(arow[k]) * bv;
      }
      const float out = static_cast<float>(sum);
      std::memcpy(elem_ptr(dst, m, n, i2, i3), &out, 4);
    }
  });
}

}  // namespace

bool int8_path(const loom_tensor_t* dst) {
  const int32_t ta = dst->src[0]->type;
  return LOOM_CPU_INT8_DOT && (ta == LOOM_TYPE_Q8_0 || ta == LOOM_TYPE_Q4_0) && b_rows_dense(dst);
}

bool kquant_path(const loom_tensor_t* dst) {
  return LOOM_CPU_INT8_DOT && kquant_type(dst->src[0]->type) && b_rows_dense(dst);
}

void run_mul_mat(const loom_tensor_t* dst, Exec& ex) {
  if (int8_path(dst)) {
    run_mul_mat_int8(dst, ex);
    return;
  }
  if (kquant_path(dst)) {
    run_mul_mat_kquant(dst, ex);
    return;
  }
  if (float_gemm(dst)) {
    run_mul_mat_gemm(dst, ex);
    return;
  }
  ex.run([&](int ith, int nth) { kernel_mul_mat(dst, ith, nth, ex); });
}

}  // namespace loom::cpu
