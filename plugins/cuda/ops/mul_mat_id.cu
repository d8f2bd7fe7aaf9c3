// MUL_MAT_ID (ABI 1.5) on the GEMV kernels' arithmetic (gemv_kernel.cuh):
// a warp per row m of A and (slot u, token t) pair, kGemvWarps rows per
// block, blockIdx.y the pair. The warp reads the pair's expert from ids on
// the device and then only that expert's row, so experts nobody picked are
// never read and nothing waits for the host. Quantized A with B's rows
// dense f32: B rounded to 8-bit blocks once (gemv_quant.cu's quantize_b,
// the rule MUL_MAT follows) and integer dot products per weight type
// (Lane<T>); float A in the float GEMV's 16-byte loads; other layouts one
// element per lane (row_elem). An id outside [0, E) is reported through
// the stream's fault word (kErrExpert) and its results are not written.
// Prefill (more than 8 tokens) is grouped by expert instead
// (mul_mat_id_grouped.cu); these kernels take decode and
// LOOM_CUDA_MOE_GROUPED=0.
#include <algorithm>

#include "dequant.cuh"
#include "fault.cuh"
#include "gemv.h"
#include "gemv_kernel.cuh"
#include "launch.cuh"
#include "ops.h"
#include "tensor.cuh"
#include "weight_types.h"

#include "common/glue.h"
#include "common/op_info.h"

namespace loom::cuda {
namespace {

// Where a warp works: row m of A, pair (u, t) = p0 + blockIdx.y, and the
// expert's row. false past the last row or for a bad id (reported once,
// by the warp of row 0).
struct IdPos {
  int64_t m, u, t;
  const uint8_t* arow;
};
__device__ __forceinline__ bool id_pos(const TArg& a, const TArg& ids, int64_t p0, KernelFault* err, IdPos* p) {
  p->m = blockIdx.x * static_cast<int64_t>(kGemvWarps) + threadIdx.x / kWarp;
  if (p->m >= a.ne[1]) return false;
  const int64_t pair = p0 + blockIdx.y;
  p->u = pair % ids.ne[0];
  p->t = pair / ids.ne[0];
  const int32_t e = *reinterpret_cast<const int32_t*>(ids.data + p->u * ids.nb[0] + p->t * ids.nb[1]);
  if (e < 0 || e >= a.ne[2]) {
    if (p->m == 0 && threadIdx.x % kWarp == 0) {
      report_fault(err, kErrExpert, LOOM_OP_MUL_MAT_ID, p->t,
                   (p->u << 32) | static_cast<int64_t>(static_cast<uint32_t>(e)), a.ne[2]);
    }
    return false;
  }
  p->arow = a.data + p->m * a.nb[1] + e * a.nb[2];
  return true;
}

// B's column of the pair: the token's one column when Nb = 1.
__device__ __forceinline__ int64_t b_col(const TArg& b, const IdPos& p) { return b.ne[1] == 1 ? 0 : p.u; }

// Quantized A against B's 8-bit blocks (column n + Nb * t, gemv_quant.cu's
// layout).
template <int T>
__global__ void __launch_bounds__(kGemvWarps * 32) id_quant_kernel(TArg dst, TArg a, TArg b, TArg ids, ActQ8 act,
                                                                   int64_t p0, KernelFault* err) {
  using L = Lane<T>;
  constexpr int kUnits = L::kElems / 32;
  IdPos p;
  if (!id_pos(a, ids, p0, err, &p)) return;
  const int lane = threadIdx.x % kWarp;
  const int64_t k = a.ne[0], nblk = k / L::kElems, units = k / 32;
  const int64_t col = b_col(b, p) + b.ne[1] * p.t;
  float acc[1] = {0.0f};
  for (int64_t U = lane / kLanesPerUnit; U < units; U += kUnitsPerStep) {
    const int64_t blk = U / kUnits;
    const LaneWords w = L::get(p.arow + blk * L::kBytes, static_cast<int>(U % kUnits), lane % kLanesPerUnit);
    acc[0] += lane_dot<L::kMin>(w, act.qs + col * k + blk * L::kElems, act.d[col * nblk + blk]);
  }
  gemv_store<1>(acc, dst, p.m, p.u, 1, p.t, 0);
}

// Float A (gemv_float_fits' layout): 8 elements per lane and step.
template <int T>
__global__ void __launch_bounds__(kGemvWarps * 32) id_float_kernel(TArg dst, TArg a, TArg b, TArg ids, int64_t p0,
                                                                   KernelFault* err) {
  constexpr int kSize = T == LOOM_TYPE_F32 ? 4 : 2;
  IdPos p;
  if (!id_pos(a, ids, p0, err, &p)) return;
  const int lane = threadIdx.x % kWarp;
  const uint8_t* bcol = b.data + b_col(b, p) * b.nb[1] + p.t * b.nb[2];
  float acc[1] = {0.0f};
  for (int64_t e = 8 * lane; e < a.ne[0]; e += 8 * kWarp) {
    float v[8], x[8];
    load8<T>(p.arow + e * kSize, v);
    load8<LOOM_TYPE_F32>(bcol + e * 4, x);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) s += v[i] * x[i];
    acc[0] += s;
  }
  gemv_store<1>(acc, dst, p.m, p.u, 1, p.t, 0);
}

// Any layout: one element of A (row_elem) and B per lane and step.
__global__ void __launch_bounds__(kGemvWarps * 32) id_exact_kernel(TArg dst, TArg a, TArg b, TArg ids, int64_t p0,
                                                                   KernelFault* err) {
  IdPos p;
  if (!id_pos(a, ids, p0, err, &p)) return;
  const int lane = threadIdx.x % kWarp;
  const uint8_t* bcol = b.data + b_col(b, p) * b.nb[1] + p.t * b.nb[2];
  float acc[1] = {0.0f};
  for (int64_t i = lane; i < a.ne[0]; i += kWarp) {
    acc[0] += row_elem(a.type, p.arow, i, a.nb[0]) * *reinterpret_cast<const float*>(bcol + i * b.nb[0]);
  }
  gemv_store<1>(acc, dst, p.m, p.u, 1, p.t, 0);
}

// fn(grid, p0) per launch: rows of A in blocks of kGemvWarps, pairs in
// chunks of the grid's y limit.
template <typename Fn>
loom_status_t* for_id_grids(const loom_tensor_t* node, Fn fn) {
  const int64_t rows = (node->src[0]->ne[1] + kGemvWarps - 1) / kGemvWarps;
  const int64_t pairs = node->src[2]->ne[0] * node->src[2]->ne[1];
  if (rows > 0x7FFFFFFF) return launch_status(node, "mul_mat_id: too many rows");
  for (int64_t p0 = 0; p0 < pairs; p0 += kGridYZLimit) {
    const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(std::min(kGridYZLimit, pairs - p0)), 1);
    if (loom_status_t* st = fn(grid, p0)) return st;
  }
  return nullptr;
}

template <int T>
loom_status_t* launch_id_typed(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8* act) {
  const TArg dst = targ(node), a = targ(node->src[0]), b = targ(node->src[1]), ids = targ(node->src[2]);
  return for_id_grids(node, [&](dim3 grid, int64_t p0) {
    const int threads = kGemvWarps * kWarp;
    if constexpr (T == LOOM_TYPE_F32 || T == LOOM_TYPE_F16 || T == LOOM_TYPE_BF16) {
      LOOM_LAUNCH(grid, threads, 0, ctx.stream, id_float_kernel<T>)(dst, a, b, ids, p0, ctx.error);
    } else {
      LOOM_LAUNCH(grid, threads, 0, ctx.stream, id_quant_kernel<T>)(dst, a, b, ids, *act, p0, ctx.error);
    }
    return launch_status(node, "mul_mat_id kernel");
  });
}

// The typed kernel of A's type (one switch over weight_types.h's list).
loom_status_t* launch_typed(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8* act) {
  return with_weight_type(
      node->src[0]->type, [&](auto t) { return launch_id_typed<decltype(t)::value>(ctx, node, act); },
      [&] {
        return common::make_status(LOOM_STATUS_INTERNAL, "[cuda.compute] " + common::describe_node(node) +
                                                              ": no MUL_MAT_ID kernel for its type");
      });
}

// B as exact_kernel reads it: rounded to 8-bit blocks and written back as
// dense f32 [K, Nb, T] when the node rounds B (quantized A, dense rows),
// else B itself.
loom_status_t* exact(const LaunchContext& ctx, const loom_tensor_t* node, bool round) {
  TArg bx = targ(node->src[1]);
  if (round) {
    if (loom_status_t* st = rounded_b_in_scratch(ctx, node, &bx)) return st;
  }
  const TArg dst = targ(node), a = targ(node->src[0]), ids = targ(node->src[2]);
  return for_id_grids(node, [&](dim3 grid, int64_t p0) {
    LOOM_LAUNCH(grid, kGemvWarps * kWarp, 0, ctx.stream, id_exact_kernel)(dst, a, bx, ids, p0, ctx.error);
    return launch_status(node, "mul_mat_id kernel");
  });
}

}  // namespace

loom_status_t* launch_mul_mat_id(const LaunchContext& ctx, const loom_tensor_t* node) {
  if (targ(node).nelements() == 0) return nullptr;
  const loom_tensor_t* a = node->src[0];
  const loom_tensor_t* b = node->src[1];
  const bool quantized = block_shape(a->type).elems > 1;
  // MUL_MAT's rule for rounding B (matmul.cu rounds_b): quantized A, B's rows dense f32.
  const bool round = quantized && b->nb[0] == 4 && b->nb[1] % 4 == 0 && b->nb[2] % 4 == 0 && b->nb[3] % 4 == 0;
  if (mul_mat_id_grouped_fits(node)) return launch_mul_mat_id_grouped(ctx, node, round);
  if (round && gemv_quant_fits(a)) {
    ActQ8 act{};
    if (loom_status_t* st = quantized_b_in_scratch(ctx, node, &act)) return st;
    return launch_typed(ctx, node, &act);
  }
  if (!quantized && gemv_float_fits(node)) return launch_typed(ctx, node, nullptr);
  return exact(ctx, node, round);
}

}  // namespace loom::cuda
