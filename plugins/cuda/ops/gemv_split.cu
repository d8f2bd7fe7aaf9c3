// MUL_MAT over split Q8_0 / Q4_0 weights (weight_layout.h): the decode
// GEMV (a warp per row, each lane whole blocks in 16-byte loads; the same
// grid and column groups as gemv_kernel.cuh) and A dequantized to f32 /
// F16 for cuBLAS (matmul.cu's exact kernel reads split A itself).
// gemv_split.cuh holds the arithmetic the host test replays.
#include "gemv.h"
#include "gemv_kernel.cuh"
#include "gemv_split.cuh"
#include "gemv_split.h"
#include "launch.cuh"

namespace loom::cuda {
namespace {

template <int T, int NC>
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_split_kernel(GemvGroup grp, ActQ8 act, int64_t n_cols, int64_t b2, int64_t b3, int64_t n0,
                      int64_t z0, AddEpilogue epi) {
  TArg a, dst;
  int64_t bx;
  gemv_member_args(grp, &a, &dst, &bx);
  GemvPos p;
  if (!gemv_pos<NC>(a, n_cols, b2, b3, n0, z0, bx, &p)) return;
  constexpr int kQuant = T == LOOM_TYPE_Q4_0 ? 16 : 32;
  const int lane = threadIdx.x % kWarp;
  const int64_t k = a.ne[0], nblk = k / 32, total = a.nelements() / 32;
  // A's rows are dense canonical rows: the row's offset in blocks.
  const int64_t first = (p.arow - a.data) / (kQuant + 2);
  const uint8_t* q = a.data;
  const uint8_t* s = a.data + total * kQuant;
  const int8_t* xq[NC];
  const float* xd[NC];
  act_columns<NC>(act, p, n_cols, k, nblk, xq, xd);
  float acc[NC];
#pragma unroll
  for (int c = 0; c < NC; ++c) acc[c] = 0.0f;
#pragma unroll 4
  for (int64_t b = lane; b < nblk; b += kWarp) {
    const SplitBlock blk = split_load<T>(q, s, first + b);
#pragma unroll
    for (int c = 0; c < NC; ++c) acc[c] += split_dot(blk, xq[c] + 32 * b, xd[c][b]);
  }
  gemv_store<NC>(acc, dst, p.m, p.c0, p.ncols, p.i2, p.i3, epi);
}

template <int T>
loom_status_t* launch_split_kernels(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8& act) {
  const loom_tensor_t* b = node->src[1];
  return launch_gemv_grids(ctx, node, "split gemv kernel",
                           [&](auto nc, dim3 grid, const GemvGroup& grp, int64_t n0, int64_t z0, const AddEpilogue& epi) {
                             LOOM_LAUNCH(grid, kGemvWarps * kWarp, 0, ctx.stream, gemv_split_kernel<T, decltype(nc)::value>)(
                                 grp, act, b->ne[1], b->ne[2], b->ne[3], n0, z0, epi);
                           });
}

template <typename OutT>
__global__ void split_dense_kernel(OutT* out, TArg a, int64_t total) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= a.nelements()) return;
  const float v = split_elem(a.type, a.data, total, e);
  if constexpr (sizeof(OutT) == 2) {
    out[e] = __float2half_rn(v);
  } else {
    out[e] = v;
  }
}

template <typename OutT>
loom_status_t* split_dense(const LaunchContext& ctx, const loom_tensor_t* node, OutT* out) {
  const TArg a = targ(node->src[0]);
  const int64_t n = a.nelements();
  if (n == 0) return nullptr;
  const unsigned grid = static_cast<unsigned>((n + kElemThreads - 1) / kElemThreads);
  LOOM_LAUNCH(grid, kElemThreads, 0, ctx.stream, split_dense_kernel<OutT>)(out, a, n / 32);
  return launch_status(node, "dequantize split A");
}

}  // namespace

loom_status_t* launch_gemv_split(const LaunchContext& ctx, const loom_tensor_t* node,
                                 const ActQ8& act) {
  return node->src[0]->type == LOOM_TYPE_Q4_0
             ? launch_split_kernels<LOOM_TYPE_Q4_0>(ctx, node, act)
             : launch_split_kernels<LOOM_TYPE_Q8_0>(ctx, node, act);
}

loom_status_t* split_to_f32(const LaunchContext& ctx, const loom_tensor_t* node, float* out) {
  return split_dense<float>(ctx, node, out);
}

loom_status_t* split_to_half(const LaunchContext& ctx, const loom_tensor_t* node, __half* out) {
  return split_dense<__half>(ctx, node, out);
}

}  // namespace loom::cuda
