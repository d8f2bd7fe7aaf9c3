// The activation-sparse FFN products (ABI 1.3), so `--sparse-budget` can
// put a layer's hot neurons on a CUDA device.
// MUL_MAT_SPARSE_ROWS (gate / up): a warp per (row m of A, column n), the
// GEMVs' arithmetic (gemv_kernel.cuh) for an active (m, n) only; an inactive
// one writes exactly 0 and reads no weight. Quantized A against B rounded
// once per node to 8-bit blocks (MUL_MAT's rule, matmul.cu rounds_b) with
// the integer dot products of Lane<T>; float A in 16-byte loads; other
// layouts one element per lane.
// MUL_MAT_SPARSE_COLS (down, AXPY form): sparse.cuh's blocks, each reading
// only the active neurons' rows of W.
#include <algorithm>
#include <cstring>

#include "dequant.cuh"
#include "gemv.h"
#include "gemv_kernel.cuh"
#include "launch.cuh"
#include "ops.h"
#include "sparse.cuh"
#include "tensor.cuh"
#include "weight_types.h"

#include "common/glue.h"
#include "common/op_info.h"

namespace loom::cuda {
namespace {

float threshold(const loom_tensor_t* node) {
  float t;
  std::memcpy(&t, node->op_params, sizeof t);
  return t;
}

// Where a warp of the row-sparse kernels works: row m, column n0 +
// blockIdx.y. false past the last row, or for an inactive (m, n) after its
// result 0 is written.
__device__ __forceinline__ bool rows_pos(const TArg& dst, const TArg& a, const TArg& s, float t, int64_t n0,
                                         int64_t* m, int64_t* n) {
  *m = blockIdx.x * static_cast<int64_t>(kGemvWarps) + threadIdx.x / kWarp;
  *n = n0 + blockIdx.y;
  if (*m >= a.ne[1]) return false;
  if (score_active(s, *m, *n, t)) return true;
  if (threadIdx.x % kWarp == 0) *reinterpret_cast<float*>(dst.data + *m * dst.nb[0] + *n * dst.nb[1]) = 0.0f;
  return false;
}

// Quantized A against B's 8-bit blocks (column n at act.qs + n * K).
template <int T>
__global__ void __launch_bounds__(kGemvWarps * 32) rows_quant_kernel(TArg dst, TArg a, TArg s, float t, ActQ8 act,
                                                                     int64_t n0) {
  using L = Lane<T>;
  constexpr int kUnits = L::kElems / 32;
  int64_t m, n;
  if (!rows_pos(dst, a, s, t, n0, &m, &n)) return;
  const int lane = threadIdx.x % kWarp;
  const int64_t k = a.ne[0], nblk = k / L::kElems, units = k / 32;
  const uint8_t* arow = a.data + m * a.nb[1];
  float acc[1] = {0.0f};
  for (int64_t U = lane / kLanesPerUnit; U < units; U += kUnitsPerStep) {
    const int64_t blk = U / kUnits;
    const LaneWords w = L::get(arow + blk * L::kBytes, static_cast<int>(U % kUnits), lane % kLanesPerUnit);
    acc[0] += lane_dot<L::kMin>(w, act.qs + n * k + blk * L::kElems, act.d[n * nblk + blk]);
  }
  gemv_store<1>(acc, dst, m, n, 1, 0, 0);
}

// Float A (gemv_float_fits' layout): 8 elements per lane and step.
template <int T>
__global__ void __launch_bounds__(kGemvWarps * 32) rows_float_kernel(TArg dst, TArg a, TArg b, TArg s, float t,
                                                                     int64_t n0) {
  constexpr int kSize = T == LOOM_TYPE_F32 ? 4 : 2;
  int64_t m, n;
  if (!rows_pos(dst, a, s, t, n0, &m, &n)) return;
  const int lane = threadIdx.x % kWarp;
  const uint8_t* arow = a.data + m * a.nb[1];
  const uint8_t* bcol = b.data + n * b.nb[1];
  float acc[1] = {0.0f};
  for (int64_t e = 8 * lane; e < a.ne[0]; e += 8 * kWarp) {
    float v[8], x[8];
    load8<T>(arow + e * kSize, v);
    load8<LOOM_TYPE_F32>(bcol + e * 4, x);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) sum += v[i] * x[i];
    acc[0] += sum;
  }
  gemv_store<1>(acc, dst, m, n, 1, 0, 0);
}

// Any layout: one element of A (row_elem) and of B per lane and step.
__global__ void __launch_bounds__(kGemvWarps * 32) rows_exact_kernel(TArg dst, TArg a, TArg b, TArg s, float t,
                                                                     int64_t n0) {
  int64_t m, n;
  if (!rows_pos(dst, a, s, t, n0, &m, &n)) return;
  const int lane = threadIdx.x % kWarp;
  const uint8_t* arow = a.data + m * a.nb[1];
  const uint8_t* bcol = b.data + n * b.nb[1];
  float acc[1] = {0.0f};
  for (int64_t i = lane; i < a.ne[0]; i += kWarp) {
    acc[0] += row_elem(a.type, arow, i, a.nb[0]) * *reinterpret_cast<const float*>(bcol + i * b.nb[0]);
  }
  gemv_store<1>(acc, dst, m, n, 1, 0, 0);
}

// The column-sparse product for W of type T (sparse.cuh's block).
template <int T>
__global__ void __launch_bounds__(kColsTile * kColsGroups) cols_kernel(TArg dst, TArg w, TArg h, TArg s, float t,
                                                                       int64_t n0) {
  __shared__ float part[kColsGroups][kColsTile];
  const int x = threadIdx.x, g = threadIdx.y;
  const int64_t m = blockIdx.x * static_cast<int64_t>(kColsTile) + x, n = n0 + blockIdx.y;
  const bool in = m < w.ne[0];
  part[g][x] = in ? cols_partial(T, w, h, s, t, m, n, g) : 0.0f;
  __syncthreads();
  if (g != 0 || !in) return;
  float p[kColsGroups];
#pragma unroll
  for (int i = 0; i < kColsGroups; ++i) p[i] = part[i][x];
  *reinterpret_cast<float*>(dst.data + m * dst.nb[0] + n * dst.nb[1]) = cols_combine(p);
}

// fn(grid, n0) per launch: `blocks` blocks along the outputs, the columns
// in chunks of the grid's y limit.
template <typename Fn>
loom_status_t* for_column_grids(const loom_tensor_t* node, int64_t blocks, Fn fn) {
  if (blocks > 0x7FFFFFFF) return launch_status(node, "sparse product: too many rows");
  const int64_t cols = node->ne[1];
  for (int64_t n0 = 0; n0 < cols; n0 += kGridYZLimit) {
    if (loom_status_t* st = fn(dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(std::min(kGridYZLimit, cols - n0)), 1), n0)) {
      return st;
    }
  }
  return nullptr;
}

template <int T>
loom_status_t* launch_rows_typed(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8* act) {
  const TArg dst = targ(node), a = targ(node->src[0]), b = targ(node->src[1]), s = targ(node->src[2]);
  const float t = threshold(node);
  const int64_t blocks = (a.ne[1] + kGemvWarps - 1) / kGemvWarps;
  return for_column_grids(node, blocks, [&](dim3 grid, int64_t n0) {
    if constexpr (T == LOOM_TYPE_F32 || T == LOOM_TYPE_F16 || T == LOOM_TYPE_BF16) {
      LOOM_LAUNCH(grid, kGemvWarps * kWarp, 0, ctx.stream, rows_float_kernel<T>)(dst, a, b, s, t, n0);
    } else {
      LOOM_LAUNCH(grid, kGemvWarps * kWarp, 0, ctx.stream, rows_quant_kernel<T>)(dst, a, s, t, *act, n0);
    }
    return launch_status(node, "sparse rows kernel");
  });
}

template <int T>
loom_status_t* launch_cols_typed(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8*) {
  const TArg dst = targ(node), w = targ(node->src[0]), h = targ(node->src[1]), s = targ(node->src[2]);
  const float t = threshold(node);
  const int64_t blocks = (w.ne[0] + kColsTile - 1) / kColsTile;
  return for_column_grids(node, blocks, [&](dim3 grid, int64_t n0) {
    LOOM_LAUNCH(grid, dim3(kColsTile, kColsGroups), 0, ctx.stream, cols_kernel<T>)(dst, w, h, s, t, n0);
    return launch_status(node, "sparse cols kernel");
  });
}

// The typed launcher of A's type (one switch over weight_types.h's list).
template <bool kRows>
loom_status_t* launch_typed(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8* act) {
  return with_weight_type(
      node->src[0]->type,
      [&](auto t) {
        return kRows ? launch_rows_typed<decltype(t)::value>(ctx, node, act)
                     : launch_cols_typed<decltype(t)::value>(ctx, node, act);
      },
      [&] {
        return common::make_status(LOOM_STATUS_INTERNAL,
                                   "[cuda.compute] " + common::describe_node(node) + ": no sparse kernel for its type");
      });
}

// The row-sparse product on the exact kernel: B rounded to 8-bit blocks
// and written back as dense f32 when the node rounds B, else B itself.
loom_status_t* rows_exact(const LaunchContext& ctx, const loom_tensor_t* node, bool round) {
  TArg bx = targ(node->src[1]);
  if (round) {
    if (loom_status_t* st = rounded_b_in_scratch(ctx, node, &bx)) return st;
  }
  const TArg dst = targ(node), a = targ(node->src[0]), s = targ(node->src[2]);
  const float t = threshold(node);
  const int64_t blocks = (a.ne[1] + kGemvWarps - 1) / kGemvWarps;
  return for_column_grids(node, blocks, [&](dim3 grid, int64_t n0) {
    LOOM_LAUNCH(grid, kGemvWarps * kWarp, 0, ctx.stream, rows_exact_kernel)(dst, a, bx, s, t, n0);
    return launch_status(node, "sparse rows kernel");
  });
}

loom_status_t* launch_sparse_rows(const LaunchContext& ctx, const loom_tensor_t* node) {
  const loom_tensor_t* a = node->src[0];
  const loom_tensor_t* b = node->src[1];
  const bool quantized = block_shape(a->type).elems > 1;
  // MUL_MAT's rule for rounding B: quantized A, B's rows dense f32.
  const bool round = quantized && b->nb[0] == 4 && b->nb[1] % 4 == 0;
  if (round && gemv_quant_fits(a)) {
    ActQ8 act{};
    if (loom_status_t* st = quantized_b_in_scratch(ctx, node, &act)) return st;
    return launch_typed<true>(ctx, node, &act);
  }
  if (!quantized && gemv_float_fits(node)) return launch_typed<true>(ctx, node, nullptr);
  return rows_exact(ctx, node, round);
}

}  // namespace

loom_status_t* launch_sparse(const LaunchContext& ctx, const loom_tensor_t* node) {
  if (targ(node).nelements() == 0) return nullptr;
  if (node->op == LOOM_OP_MUL_MAT_SPARSE_ROWS) return launch_sparse_rows(ctx, node);
  return launch_typed<false>(ctx, node, nullptr);
}

}  // namespace loom::cuda
