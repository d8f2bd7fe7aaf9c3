// MUL_MAT internals shared by matmul.cpp (f32 paths, dispatch) and
// matmul_int8.cpp (quantized A against 8-bit activations).
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __F16C__
#include <immintrin.h>
#endif

#include "common/fp16.h"

#include "ops/ops.h"

namespace loom::cpu {

// Extents of a MUL_MAT node: A [k, m, a2, a3], B [k, n, b2, b3]; B's batch
// (i2, i3) reads A's batch (i2 / r2, i3 / r3).
struct MatDims {
  int64_t k, m, n, b2, b3, r2, r3;
  explicit MatDims(const loom_tensor_t* dst)
      : k(dst->src[0]->ne[0]),
        m(dst->src[0]->ne[1]),
        n(dst->src[1]->ne[1]),
        b2(dst->src[1]->ne[2]),
        b3(dst->src[1]->ne[3]),
        r2(b2 / dst->src[0]->ne[2]),
        r3(b3 / dst->src[0]->ne[3]) {}
};

// fn(unit, i2, i3) over thread ith's contiguous share of the work items
// units x b2 x b3 (unit fastest): each item is done by one thread, so
// results do not depend on the thread count.
template <typename Fn>
void for_share(const MatDims& d, int64_t units, int ith, int nth, Fn&& fn) {
  int64_t w0, w1;
  common::split_range(units * d.b2 * d.b3, ith, nth, &w0, &w1);
  for (int64_t w = w0; w < w1; ++w) fn(w % units, (w / units) % d.b2, w / (units * d.b2));
}

// n elements of a contiguous float row (F32 / F16 / BF16) from element k0,
// as f32 (F16 through F16C where the build has it). Exact.
inline void widen_range(int32_t type, const char* row, int64_t k0, int64_t n, float* out) {
  if (type == LOOM_TYPE_F32) {
    std::memcpy(out, row + 4 * k0, static_cast<size_t>(n) * 4);
    return;
  }
  const char* p = row + 2 * k0;
  int64_t k = 0;
#ifdef __F16C__
  if (type == LOOM_TYPE_F16) {
    for (; k + 8 <= n; k += 8) {
      _mm256_storeu_ps(out + k, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * k))));
    }
  }
#endif
  for (; k < n; ++k) {
    uint16_t h;
    std::memcpy(&h, p + 2 * k, 2);
    out[k] = type == LOOM_TYPE_F16 ? common::f16_to_f32(h) : common::bf16_to_f32(h);
  }
}

// Whether A's rows are contiguous F32 / F16 / BF16 (what the GEMM and GEMV read).
inline bool float_rows(const loom_tensor_t* a) {
  return (a->type == LOOM_TYPE_F32 && a->nb[0] == 4) ||
         ((a->type == LOOM_TYPE_F16 || a->type == LOOM_TYPE_BF16) && a->nb[0] == 2);
}

// The packed GEMM (matmul_gemm.cpp): built with AVX2 + FMA (+ AVX-512).
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define LOOM_CPU_GEMM 1
#else
#define LOOM_CPU_GEMM 0
#endif
// Fewer columns of B than this take the row-dot path (decode).
constexpr int64_t kGemmMinN = 8;

// Whether the node (B rows dense f32, checked by the caller) runs on the
// packed GEMM: F32 / F16 / BF16 A with contiguous rows, dense dst rows, at
// least kGemmMinN columns, a build with LOOM_CPU_GEMM.
bool gemm_path(const loom_tensor_t* dst);
// A GEMM-path node: B packed once (shared by the threads), then blocks of
// A's rows over the pool.
void run_mul_mat_gemm(const loom_tensor_t* dst, Exec& ex);
// Decode with float A (contiguous rows, at most 4 columns of B, LOOM_CPU_GEMM
// builds): A converted in registers, no widened copy.
bool gemv_path(const loom_tensor_t* dst);
// Rows are claimed in kGemvChunksPerThread chunks a thread, each thread's
// own share first (Exec::claim_chunk), so a thread that runs slow leaves
// rows to the other. Own share first against
// the static split, alternated 6x (s768-f32) and 4x (s768-f16), tg64 after
// a 256-token prompt: F32 95.0 -> 96.3 t/s (medians; faster in 6 of 6
// pairs, 88-92% -> 91-93% of the bound probed beside each), F16 faster in
// 4 of 4 pairs (~2%).
constexpr int64_t kGemvChunksPerThread = 4;
void mul_mat_gemv(const loom_tensor_t* dst, int ith, int nth, Exec& ex);

// One block of 32 activations quantized to 8 bits: x[i] ~= d * qs[i], with
// d = max|x| / 127 and qs[i] = round-to-nearest-even(x[i] * (1 / d)) (0 when
// d = 0; d is NaN when the block holds a NaN, so the NaN reaches the result).
// sum = sum(qs) serves kernels that read A's quants as unsigned bytes
// (q + offset) and subtract offset * sum, exactly, in integers.
struct ActBlock {
  float d;
  int32_t sum;
  int8_t qs[32];
};

// Whether the node runs on the int8 path: Q8_0 / Q4_0 A, B rows dense f32,
// a build with LOOM_CPU_INT8_DOT, LOOM_CPU_REFERENCE unset.
bool int8_path(const loom_tensor_t* dst);

// The int8 path: quantize B's rows into the node's scratch, then integer
// dots against A's blocks in register tiles (matmul_int8.cpp).
void run_mul_mat_int8(const loom_tensor_t* dst, Exec& ex);

// Thread ith's share of a MUL_MAT with Q8_0 / Q4_0 A in GGUF's layout, B
// already quantized into act ([rows of B][blocks per row]); the sparse
// products (sparse_matmul.cpp) run it on views of A's active rows.
void mul_mat_int8_act(const loom_tensor_t* dst, const ActBlock* act, int ith, int nth);

// A MUL_MAT whose A is a repacked Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL matrix
// (weight_layout.h), B already quantized into act: [n_len][nblk] blocks
// (matmul_x8.cpp).
// Groups of rows are claimed with ex.claim_chunk(ith, nth) (inside ex.run).
void mul_mat_x8(const loom_tensor_t* dst, const ActBlock* act, Exec& ex, int ith, int nth);

// AMX tiles (matmul_amx.cpp, AVX-512 builds on Linux): whether CPUID
// reports AMX-TILE and AMX-INT8 and the kernel granted the tile state
// (LOOM_CPU_AMX=0: never); whether a repacked MUL_MAT of A's `type` over
// n_len columns runs there (Q8_0 / Q4_0, at least 32 columns); and the
// columns of a pair of groups of 8 rows (ga at row m0, gb the next group
// or nullptr) it computed, whole tiles of 16 from column 0 (0: none; the
// caller runs the rest). The first amx_columns of a thread configures its
// tiles; amx_release() gives them back once its share of a node is done
// (configuring and releasing them per pair cost as much as the pair's
// tile products at 16 columns).
bool amx_usable();
bool amx_takes(int32_t type, int64_t n_len);
int64_t amx_columns(const loom_tensor_t* dst, const uint8_t* ga, const uint8_t* gb, int64_t nblk, const ActBlock* act,
                    int64_t n_len, int64_t m0);
void amx_release();

}  // namespace loom::cpu
