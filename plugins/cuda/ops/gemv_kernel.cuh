// The GEMV kernels' device code (templates instantiated per weight type in
// gemv_quant.cu, gemv_kquant.cu and gemv_float.cu). The arithmetic per lane
// is gemv_lane.cuh's, which the host test replays; here it runs for NC
// columns at once: each lane loads its words of A once and applies them to
// every column of the group.
#pragma once

#include <cuda_bf16.h>
#include <type_traits>
#include <cuda_fp16.h>

#include "gemv.h"
#include "gemv_lane.cuh"
#include "launch.cuh"

namespace loom::cuda {

// Eight consecutive elements of a float row (F32: two 16-byte loads; F16,
// BF16: one) widened to f32 (the float GEMVs: gemv_float.cu, mul_mat_id.cu).
template <int T>
__device__ __forceinline__ void load8(const uint8_t* p, float (&v)[8]) {
  if (T == LOOM_TYPE_F32) {
    const float4 x = reinterpret_cast<const float4*>(p)[0], y = reinterpret_cast<const float4*>(p)[1];
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w, v[4] = y.x, v[5] = y.y, v[6] = y.z, v[7] = y.w;
    return;
  }
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if (T == LOOM_TYPE_F16) {
      __half2 h;
      memcpy(&h, &w[i], 4);
      const float2 f = __half22float2(h);
      v[2 * i] = f.x, v[2 * i + 1] = f.y;
    } else {
      v[2 * i] = bf16_to_f32(static_cast<uint16_t>(w[i] & 0xFFFFu));
      v[2 * i + 1] = bf16_to_f32(static_cast<uint16_t>(w[i] >> 16));
    }
  }
}

// An ADD fused into a GEMV's store (fusion.h's MUL_MAT + ADD): sum = the
// product + res, element by element (on = 0: none).
struct AddEpilogue {
  TArg res, sum;
  int on;
};

// The launch's epilogue: the ADD ctx.fused_add names, or none.
inline AddEpilogue add_epilogue(const LaunchContext& ctx, const loom_tensor_t* mm) {
  AddEpilogue e{};
  if (ctx.fused_add != nullptr) {
    e.res = targ(ctx.fused_add->src[0] == mm ? ctx.fused_add->src[1] : ctx.fused_add->src[0]);
    e.sum = targ(ctx.fused_add);
    e.on = 1;
  }
  return e;
}

LOOM_HD int64_t elem_offset(const TArg& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

// The group's results: the 32 lanes' sums in the halving tree, lane 0
// writes (and, with an epilogue, the sum beside the product).
template <int NC>
__device__ __forceinline__ void gemv_store(float (&acc)[NC], const TArg& dst, int64_t m, int64_t c0, int ncols,
                                           int64_t i2, int64_t i3, const AddEpilogue& epi = AddEpilogue{}) {
  const int lane = threadIdx.x % kWarp;
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    float v = acc[c];
    for (int s = kWarp / 2; s > 0; s /= 2) v += __shfl_down_sync(0xFFFFFFFFu, v, s);
    if (lane == 0 && c < ncols) {
      *reinterpret_cast<float*>(dst.data + elem_offset(dst, m, c0 + c, i2, i3)) = v;
      if (epi.on) {
        const float r = *reinterpret_cast<const float*>(epi.res.data + elem_offset(epi.res, m, c0 + c, i2, i3));
        *reinterpret_cast<float*>(epi.sum.data + elem_offset(epi.sum, m, c0 + c, i2, i3)) = v + r;
      }
    }
  }
}

// The products of one launch (gemv_grid.cuh's group; count 1: one node):
// each member's A and result.
struct GemvGroup {
  TArg a[kGemvGroupMax], dst[kGemvGroupMax];
  int64_t first[kGemvGroupMax + 1];
  int count;
};

// The launch's group: the node, then ctx.gemv_peers (the MUL_MATs the
// stream runs with it, same B).
inline GemvGroup gemv_group(const LaunchContext& ctx, const loom_tensor_t* node) {
  GemvGroup g{};
  const loom_tensor_t* members[kGemvGroupMax] = {node, ctx.gemv_peers[0], ctx.gemv_peers[1]};
  int64_t rows[kGemvGroupMax] = {};
  for (const loom_tensor_t* m : members) {
    if (m == nullptr) break;
    g.a[g.count] = targ(m->src[0]);
    g.dst[g.count] = targ(m);
    rows[g.count] = m->src[0]->ne[1];
    ++g.count;
  }
  gemv_group_first(rows, g.count, g.first);
  return g;
}

// The launches of a group's grid (for_gemv_grids over all members' rows).
template <typename Fn>
loom_status_t* for_group_grids(const loom_tensor_t* node, const GemvGroup& g, Fn fn) {
  const loom_tensor_t* b = node->src[1];
  if (g.first[g.count] > 0x7FFFFFFF) return launch_status(node, "gemv: too many rows");
  return for_gemv_launches<loom_status_t*>(g.first[g.count] * kGemvWarps, b->ne[1], b->ne[2] * b->ne[3],
                                           [&](const GemvLaunch& l) {
                                             return fn(dim3(static_cast<unsigned>(l.gx), static_cast<unsigned>(l.gy),
                                                            static_cast<unsigned>(l.gz)),
                                                       l.n0, l.z0);
                                           });
}

// This block's member: its A, its result and the block's x within it
// (constant indices only: no dynamic indexing into the parameters).
__device__ __forceinline__ void gemv_member_args(const GemvGroup& g, TArg* a, TArg* dst, int64_t* bx) {
  int64_t local = 0;
  const int m = gemv_member(g.first, g.count, blockIdx.x, &local);
  *a = g.a[0];
  *dst = g.dst[0];
#pragma unroll
  for (int i = 1; i < kGemvGroupMax; ++i) {
    if (i == m) *a = g.a[i], *dst = g.dst[i];
  }
  *bx = local;
}

// Where a warp works (gemv_grid.cuh's gemv_cell; bx: the block's x within
// its member) and its row of A (batch a2, a3). false: past the last row.
struct GemvPos : GemvCell {
  const uint8_t* arow;
};
template <int NC>
__device__ __forceinline__ bool gemv_pos(const TArg& a, int64_t n_cols, int64_t b2, int64_t b3, int64_t n0, int64_t z0,
                                         int64_t bx, GemvPos* p) {
  if (!gemv_cell(bx, blockIdx.y, blockIdx.z, static_cast<int>(threadIdx.x / kWarp), a.ne[1], n_cols, b2, n0, z0, NC,
                 p)) {
    return false;
  }
  const int64_t a2 = p->i2 / (b2 / a.ne[2]), a3 = p->i3 / (b3 / a.ne[3]);
  p->arow = a.data + p->m * a.nb[1] + a2 * a.nb[2] + a3 * a.nb[3];
  return true;
}

// Each of the NC columns' 8-bit blocks (column col = n + N * z at act.qs +
// col * k and act.d + col * nblk). Columns past the group's last (c >=
// ncols) read the last one and are never stored: the kernels' loops have no
// branch, so the unrolled steps' loads of A and B are all in flight before
// the first product needs them.
template <int NC>
__device__ __forceinline__ void act_columns(const ActQ8& act, const GemvPos& p, int64_t n_cols, int64_t k,
                                            int64_t nblk, const int8_t* (&xq)[NC], const float* (&xd)[NC]) {
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    const int64_t col = p.c0 + n_cols * p.z + (c < p.ncols ? c : p.ncols - 1);
    xq[c] = act.qs + col * k;
    xd[c] = act.d + col * nblk;
  }
}

// fn(std::integral_constant<int, NC>{}) for the kernels' column count of N
// columns (gemv_nc).
template <typename Fn>
void with_gemv_nc(int64_t n, Fn fn) {
  switch (gemv_nc(n)) {
    case 1: fn(std::integral_constant<int, 1>{}); break;
    case 2: fn(std::integral_constant<int, 2>{}); break;
    case 4: fn(std::integral_constant<int, 4>{}); break;
    default: fn(std::integral_constant<int, 8>{}); break;
  }
}

// Quantized A against B's 8-bit blocks (act_columns).
template <int T, int NC>
__global__ void __launch_bounds__(kGemvWarps * 32) gemv_quant_kernel(GemvGroup grp, ActQ8 act, int64_t n_cols,
                                                                     int64_t b2, int64_t b3, int64_t n0, int64_t z0,
                                                                     AddEpilogue epi) {
  using L = Lane<T>;
  constexpr int kUnits = L::kElems / 32;
  TArg a, dst;
  int64_t bx;
  gemv_member_args(grp, &a, &dst, &bx);
  GemvPos p;
  if (!gemv_pos<NC>(a, n_cols, b2, b3, n0, z0, bx, &p)) return;
  const int lane = threadIdx.x % kWarp;
  const int64_t k = a.ne[0], nblk = k / L::kElems, units = k / 32;
  const int8_t* xq[NC];
  const float* xd[NC];
  act_columns<NC>(act, p, n_cols, k, nblk, xq, xd);
  float acc[NC];
#pragma unroll
  for (int c = 0; c < NC; ++c) acc[c] = 0.0f;
#pragma unroll 4
  for (int64_t U = lane / kLanesPerUnit; U < units; U += kUnitsPerStep) {
    const int64_t b = U / kUnits;
    const LaneWords w = L::get(p.arow + b * L::kBytes, static_cast<int>(U % kUnits), lane % kLanesPerUnit);
#pragma unroll
    for (int c = 0; c < NC; ++c) acc[c] += lane_dot<L::kMin>(w, xq[c] + b * L::kElems, xd[c][b]);
  }
  gemv_store<NC>(acc, dst, p.m, p.c0, p.ncols, p.i2, p.i3, epi);
}

// A GEMV kernel's launches over the node's group (gemv_group) and epilogue:
// kernel(nc, grid, group, n0, z0, epilogue) per grid, nc an
// std::integral_constant of gemv_nc(N).
template <typename Kernel>
loom_status_t* launch_gemv_grids(const LaunchContext& ctx, const loom_tensor_t* node, const char* what,
                                 Kernel kernel) {
  const GemvGroup grp = gemv_group(ctx, node);
  const AddEpilogue epi = add_epilogue(ctx, node);
  return for_group_grids(node, grp, [&](dim3 grid, int64_t n0, int64_t z0) {
    with_gemv_nc(node->src[1]->ne[1], [&](auto nc) { kernel(nc, grid, grp, n0, z0, epi); });
    return launch_status(node, what);
  });
}

// The launches of gemv_quant_kernel<T, NC>, NC = gemv_nc(N).
template <int T>
loom_status_t* launch_quant_kernels(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8& act) {
  const loom_tensor_t* b = node->src[1];
  return launch_gemv_grids(ctx, node, "gemv kernel",
                           [&](auto nc, dim3 grid, const GemvGroup& grp, int64_t n0, int64_t z0, const AddEpilogue& epi) {
                             LOOM_LAUNCH(grid, kGemvWarps * kWarp, 0, ctx.stream, gemv_quant_kernel<T, decltype(nc)::value>)(
                                 grp, act, b->ne[1], b->ne[2], b->ne[3], n0, z0, epi);
                           });
}

}  // namespace loom::cuda
