// MUL_MAT internals shared by matmul.cpp (f32 paths, dispatch) and
// matmul_int8.cpp (quantized A against 8-bit activations).
#pragma once

#include <cstdint>

#include "ops/ops.h"

namespace loom::cpu {

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
// The share of thread ith of nth of a GEMM-path node.
void mul_mat_gemm(const loom_tensor_t* dst, int ith, int nth);
// Decode with float A (contiguous rows, at most 4 columns of B, LOOM_CPU_GEMM
// builds): A converted in registers, no widened copy.
bool gemv_path(const loom_tensor_t* dst);
void mul_mat_gemv(const loom_tensor_t* dst, int ith, int nth);

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

// A MUL_MAT whose A is repacked
// (weight_layout.h), B already quantized into act: [n_len][nblk] blocks
// (matmul_x8.cpp).
// Rows are claimed in chunks through ex.next_chunk() (call inside ex.run).
void mul_mat_x8(const loom_tensor_t* dst, const ActBlock* act, Exec& ex);

}  // namespace loom::cpu
