// The decode GEMVs' launchers (gemv_quant.cu, gemv_float.cu) as matmul.cu
// calls them. Every GEMV kernel: a warp per row of A, kGemvWarps rows per
// block, blockIdx.y a group of up to kGemvMaxCols columns of B read in the
// same pass over A's row (each weight loaded once for all of them),
// blockIdx.z the batch matrix (i2, i3). The lanes' sums combine in the
// halving tree (launch.cuh).
#pragma once

#include "act_cache.h"
#include "gemv_grid.cuh"
#include "ops.h"
#include "tensor.cuh"
#include "weight_types.h"

namespace loom::cuda {


// Scratch bytes of B's 8-bit blocks for A of type `type`.
size_t act_q8_bytes(int type, const loom_tensor_t* b);
// Quantize B (dense f32 rows) into `scratch` (act_q8_bytes of it, 16-byte
// aligned); out gets the layout's pointers.
loom_status_t* quantize_b(const LaunchContext& ctx, const loom_tensor_t* node, uint8_t* scratch, ActQ8* out);
// B rounded the same way, written back as dense f32 [K, N, b2, b3] (the
// cuBLAS and exact-kernel paths of a quantized A, so every MUL_MAT with
// quantized A and dense B follows one rule).
loom_status_t* round_b_f32(const LaunchContext& ctx, const loom_tensor_t* node, float* out);
// quantize_b into the stream's scratch (the per-node 8-bit blocks of
// MUL_MAT_ID's and the sparse products' GEMVs).
loom_status_t* quantized_b_in_scratch(const LaunchContext& ctx, const loom_tensor_t* node, ActQ8* act);
// round_b_f32 into the stream's scratch, *b (the node's B) pointed at it:
// dense f32 [K, N, b2, b3] (the exact kernels of MUL_MAT_ID and the sparse
// products read it so).
loom_status_t* rounded_b_in_scratch(const LaunchContext& ctx, const loom_tensor_t* node, TArg* b);

// Whether the quantized GEMV reads A in place: the type's block alignment
// holds for the data pointer and every stride.
bool gemv_quant_fits(const loom_tensor_t* a);
loom_status_t* launch_gemv_quant(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8& act);

// Whether the float GEMV takes the node: F32 / F16 / BF16 A with
// contiguous rows, K % 8 == 0, A rows and B columns 16-byte aligned, B dense.
bool gemv_float_fits(const loom_tensor_t* node);
loom_status_t* launch_gemv_float(const LaunchContext& ctx, const loom_tensor_t* node);

// The GEMV of weight type T (weight_types.h): act is B's 8-bit blocks for
// a quantized T, nullptr for a float one. Instantiated per type in
// gemv_float.cu, gemv_quant.cu and gemv_kquant.cu; matmul.cu switches over
// LOOM_CUDA_WEIGHT_TYPES.
template <int T>
loom_status_t* launch_gemv_typed(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8* act);
#define LOOM_CUDA_DECLARE_GEMV(T) \
  template <>                     \
  loom_status_t* launch_gemv_typed<T>(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8* act);
LOOM_CUDA_WEIGHT_TYPES(LOOM_CUDA_DECLARE_GEMV)
#undef LOOM_CUDA_DECLARE_GEMV

}  // namespace loom::cuda
