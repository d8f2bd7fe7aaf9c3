// MUL_MAT over Q8_0 / Q4_0 weights in the split layout
// (plugins/cuda/weight_layout.h), as matmul.cu calls it: the decode GEMV
// on B's 8-bit blocks and A dequantized for cuBLAS (gemv_split.cuh holds
// the arithmetic; matmul.cu's exact kernel reads split A through it).
#pragma once

#include <cuda_fp16.h>

#include "act_cache.h"
#include "ops.h"
#include "tensor.cuh"

namespace loom::cuda {

// The GEMV of a node whose A is split, B's 8-bit blocks in act (every
// column count: groups of up to kGemvMaxCols, as the other GEMVs).
loom_status_t* launch_gemv_split(const LaunchContext& ctx, const loom_tensor_t* node,
                                 const ActQ8& act);
// A (split) to dense f32 / F16 [K, M] in out.
loom_status_t* split_to_f32(const LaunchContext& ctx, const loom_tensor_t* node, float* out);
loom_status_t* split_to_half(const LaunchContext& ctx, const loom_tensor_t* node, __half* out);
}  // namespace loom::cuda
