// ATTENTION for decode (a few query tokens): flash-decoding over the KV
// length (attention.cuh's split path). Many blocks per kv head read
// disjoint stretches of the cache once for up to kSplitHeads query heads,
// each warp scoring whole rows with coalesced loads; the last of a
// (heads, token)'s blocks to finish merges the partials in a fixed order
// (split, then warp), so results do not depend on timing, and decode
// attention is one launch (a combine kernel of its own where the stream's
// counters do not reach). Query t's rows are [0, visible[t])
// or, the ranges form, its pair's; splits outside them add nothing. A bad
// value fills the fault word (split 0 reports it) and leaves a zero row.
#include <cstring>

#include "act_cache.h"
#include "act_quant.cuh"
#include "attention.cuh"
#include "dequant.cuh"
#include "fault.cuh"
#include "launch.cuh"
#include "ops.h"
#include "tensor.cuh"

namespace loom::cuda {
namespace {

constexpr int kLaneElems = kSplitMaxDim / 32;

__device__ __forceinline__ float warp_tree_sum(float v) {
  for (int s = kWarp / 2; s > 0; s /= 2) v += __shfl_down_sync(0xFFFFFFFFu, v, s);
  return __shfl_sync(0xFFFFFFFFu, v, 0);
}

// Head h of token t from its partials: thread d (of the block's threads)
// merges element d's partials in order and writes acc / l. qs / qd (nullptr:
// none): the result, as the product after it reads it ([Dv * H, T], Dv % 32
// == 0), rounded to 8-bit blocks of 32 as quantize_b_kernel rounds them; a
// warp holds one block.
__device__ void combine_head(const TArg& dst, const float* part, int64_t parts, int64_t h, int64_t t, int8_t* qs,
                             float* qd) {
  const int64_t H = dst.ne[1], Dv = dst.ne[0];
  const float* p = part + (t * H + h) * parts * (2 + Dv);
  for (int64_t d = threadIdx.x; d < Dv; d += blockDim.x) {
    OnlineState st = online_init();
    float acc = 0.0f;
    for (int64_t i = 0; i < parts; ++i) {
      const float* pi = p + i * (2 + Dv);
      const OnlineState ps{pi[0], pi[1]};
      const MergeFactors f = online_factors(st, ps);
      acc = online_merge_acc(acc, pi[2 + d], f);
      st = online_merge(st, ps, f);
    }
    const float v = online_finish(st, acc);
    *reinterpret_cast<float*>(dst.data + d * dst.nb[0] + h * dst.nb[1] + t * dst.nb[2]) = v;
    if (qs != nullptr) {
      float amax = fabsf(v);
      for (int s = kWarp / 2; s > 0; s /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, s));
      const bool nan = __any_sync(0xFFFFFFFFu, v != v);
      const int64_t k = t * H * Dv + h * Dv + d;  // quant k of the product's B
      qs[k] = act_quant(v, act_inverse(amax / 127.0f));
      if (threadIdx.x % kWarp == 0) qd[k / 32] = act_scale(amax, nan);
    }
  }
}

// One block per (head, token) (the two-kernel form, when the counters do not
// reach).
__global__ void attention_combine_kernel(TArg dst, const float* part, int64_t parts, int8_t* qs, float* qd) {
  combine_head(dst, part, parts, blockIdx.x, blockIdx.y, qs, qd);
}

// Where the split kernel combines (counters != nullptr: the last of a (kv
// head chunk, token)'s split blocks to finish merges their partials, so
// decode attention is one launch; otherwise attention_combine_kernel does).
struct SplitCombine {
  TArg dst;
  int32_t* counters;
  int8_t* qs;
  float* qd;
};

// part: [T][H][splits * kSplitWarps][2 + Dv] floats (m, l, acc). Block x:
// kv head g and its chunk of up to kSplitHeads query heads.
__global__ void __launch_bounds__(kSplitWarps * 32)
    attention_split_kernel(TArg q, TArg k, TArg v, const uint8_t* vis, int64_t vis_stride, int64_t vis_nb1,
                           float scale, float* part, KernelFault* err, SplitCombine comb) {
  __shared__ float qs[kSplitHeads * kSplitMaxDim];
  const int64_t D = q.ne[0], Dv = v.ne[0], n_kv = k.ne[1], H = q.ne[1], ratio = H / k.ne[2];
  const SplitHeads heads = split_block_heads(blockIdx.x, ratio);
  const int64_t g = heads.g, h0 = heads.h0;
  const int nh = heads.nh;
  const int64_t t = blockIdx.y, split = blockIdx.z;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const KvRows rows = query_rows(vis, vis_stride, vis_nb1, t, n_kv);
  if (rows.fault != kErrNone && split == 0 && blockIdx.x == 0 && threadIdx.x == 0) report_fault(err, rows.fault, LOOM_OP_ATTENTION, t, rows.value, n_kv);
  for (int64_t e = threadIdx.x; e < nh * D; e += blockDim.x) {
    qs[(e / D) * kSplitMaxDim + e % D] = load_elem(q.type, q.data + q.offset(e % D, h0 + e / D, t, 0));
  }
  __syncthreads();
  // This split's stretch of rows, within the query's own [first, end).
  const int64_t n = rows.end;
  const int64_t s0 = split * kSplitRows, j0 = s0 > rows.first ? s0 : rows.first;
  const int64_t j1 = s0 + kSplitRows < n ? s0 + kSplitRows : n;
  OnlineState st[kSplitHeads];
  float acc[kSplitHeads][kLaneElems];
#pragma unroll
  for (int i = 0; i < kSplitHeads; ++i) {
    st[i] = online_init();
#pragma unroll
    for (int e = 0; e < kLaneElems; ++e) acc[i][e] = 0.0f;
  }
  for (int64_t j = j0 + warp; j < j1; j += kSplitWarps) {
    float dots[kSplitHeads];
    split_lane_dots(qs, kSplitMaxDim, nh, k.data + j * k.nb[1] + g * k.nb[2], k.type, k.nb[0], D, lane, dots);
    const uint8_t* vrow = v.data + j * v.nb[1] + g * v.nb[2];
    float vv[kLaneElems];
#pragma unroll
    for (int e = 0; e < kLaneElems; ++e) {
      const int64_t d = lane + 32 * e;
      vv[e] = d < Dv ? load_elem(v.type, vrow + d * v.nb[0]) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kSplitHeads; ++i) {
      if (i >= nh) break;  // nh is the block's: every lane takes the same branch
      const OnlineState row{warp_tree_sum(dots[i]) * scale, 1.0f};
      const MergeFactors f = online_factors(st[i], row);
#pragma unroll
      for (int e = 0; e < kLaneElems; ++e) acc[i][e] = online_merge_acc(acc[i][e], vv[e], f);
      st[i] = online_merge(st[i], row, f);
    }
  }
  const int64_t parts = gridDim.z * static_cast<int64_t>(kSplitWarps);
#pragma unroll
  for (int i = 0; i < kSplitHeads; ++i) {
    if (i >= nh) break;  // constant indices keep st / acc in registers
    float* out = part + ((t * H + h0 + i) * parts + split * kSplitWarps + warp) * (2 + Dv);
    if (lane == 0) {
      out[0] = st[i].m;
      out[1] = st[i].l;
    }
#pragma unroll
    for (int e = 0; e < kLaneElems; ++e) {
      const int64_t d = lane + 32 * e;
      if (d < Dv) out[2 + d] = acc[i][e];
    }
  }
  if (comb.counters == nullptr) return;
  // The last block of this (heads, token) to finish combines: its partials
  // written and fenced before the count, the others' seen after it (the
  // threadFenceReduction pattern); the count goes back to zero.
  __shared__ int last;
  __threadfence();
  __syncthreads();
  int32_t* count = comb.counters + blockIdx.y * static_cast<int64_t>(gridDim.x) + blockIdx.x;
  if (threadIdx.x == 0) last = atomicAdd(count, 1) == static_cast<int>(gridDim.z) - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int i = 0; i < nh; ++i) combine_head(comb.dst, part, parts, h0 + i, t, comb.qs, comb.qd);
  if (threadIdx.x == 0) *count = 0;
}

}  // namespace

loom_status_t* launch_attention_split(const LaunchContext& ctx, const loom_tensor_t* node, ActQ8* q8) {
  const loom_tensor_t* q = node->src[0];
  const loom_tensor_t* k = node->src[1];
  const int64_t H = q->ne[1], T = q->ne[2], Dv = node->ne[0];
  const int64_t splits = (k->ne[1] + kSplitRows - 1) / kSplitRows, parts = splits * kSplitWarps;
  if (splits > 65535) return launch_status(node, "attention: too many KV splits");
  float scale;
  std::memcpy(&scale, node->op_params, sizeof scale);
  loom_status_t* st = nullptr;
  float* part = static_cast<float*>(
      ctx.scratch->get(static_cast<size_t>(T * H * parts * (2 + Dv)) * sizeof(float), &st));
  if (st != nullptr) return st;
  const int64_t groups = k->ne[2] * split_head_chunks(H / k->ne[2]);
  const int threads = Dv >= 256 ? 256 : static_cast<int>((Dv + kWarp - 1) / kWarp * kWarp);
  int8_t* qs = nullptr;
  float* qd = nullptr;
  if (q8 != nullptr) {
    // quantize_b's layout for B = the result as [Dv * H, T].
    const size_t quants = static_cast<size_t>(T * H * Dv);
    auto* mem = static_cast<uint8_t*>(
        ctx.act_scratch->get((quants + 15) / 16 * 16 + quants / 32 * sizeof(float), &st));
    if (st != nullptr) return st;
    qs = reinterpret_cast<int8_t*>(mem);
    qd = reinterpret_cast<float*>(mem + (quants + 15) / 16 * 16);
    q8->qs = qs;
    q8->d = qd;
  }
  // One launch when every (heads, token) gets a counter and the split
  // kernel's threads cover a row's warps for the rounding (whole warps).
  const bool one = ctx.fuse && ctx.counters != nullptr && groups * T <= kCounterSlots;
  const SplitCombine comb{targ(node), one ? ctx.counters : nullptr, qs, qd};
  const dim3 grid(static_cast<unsigned>(groups), static_cast<unsigned>(T), static_cast<unsigned>(splits));
  LOOM_LAUNCH(grid, kSplitWarps * kWarp, 0, ctx.stream, attention_split_kernel)(
      targ(q), targ(k), targ(node->src[2]), static_cast<const uint8_t*>(node->src[3]->data),
      static_cast<int64_t>(node->src[3]->nb[0]), ranges_stride(node), scale, part, ctx.error, comb);
  if ((st = launch_status(node, "attention split kernel")) != nullptr) return st;
  if (one) return nullptr;
  LOOM_LAUNCH(dim3(static_cast<unsigned>(H), static_cast<unsigned>(T)), threads, 0, ctx.stream, attention_combine_kernel)(
      targ(node), part, parts, qs, qd);
  return launch_status(node, "attention combine kernel");
}

}  // namespace loom::cuda
