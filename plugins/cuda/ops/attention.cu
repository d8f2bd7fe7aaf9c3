// ATTENTION: a block of kAttnChunk threads per (query head, token) for
// prefill (decode goes to attention_split.cu, support.h picks; prefill over
// F16 caches on tensor cores to attention_tc.cu, unless
// LOOM_CUDA_F16_ATTENTION=0 or the GPU predates them). The
// block scores kAttnChunk KV rows at a time (a thread per row), takes the
// chunk's exact softmax (max and sum through the shared-memory tree), sums
// the chunk's weighted V rows per output element, and merges the chunk
// into the running state (attention.cuh's online merge). Query t reads rows
// [0, visible[t]) or, the ranges form, [visible[0, t], visible[1, t]); a
// value outside [0, n_kv] fills the fault word (kErrVisible / kErrRange:
// t and the values) and writes a zero row.
#include <cstring>

#include "attention.cuh"
#include "dequant.cuh"
#include "fault.cuh"
#include "launch.cuh"
#include "ops.h"
#include "support.h"
#include "tensor.cuh"

namespace loom::cuda {
namespace {

template <typename Combine>
__device__ float chunk_combine(float v, float* sh, Combine combine) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kAttnChunk / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) sh[threadIdx.x] = combine(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  const float r = sh[0];
  __syncthreads();
  return r;
}

struct MaxF {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct AddF {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Shared memory: q [D], acc [Dv], p [kAttnChunk], reduce [kAttnChunk].
__global__ void attention_kernel(TArg dst, TArg q, TArg k, TArg v, const uint8_t* vis, int64_t vis_stride,
                                 int64_t vis_nb1, float scale, KernelFault* err) {
  LOOM_DYNAMIC_SHARED(float, sh);
  const int64_t D = q.ne[0], Dv = v.ne[0], n_kv = k.ne[1];
  const int64_t h = blockIdx.x, t = blockIdx.y;
  const int64_t g = h / (q.ne[1] / k.ne[2]);
  float* qs = sh;
  float* acc = qs + D;
  float* p = acc + Dv;
  float* red = p + kAttnChunk;
  uint8_t* out = dst.data + h * dst.nb[1] + t * dst.nb[2];
  const KvRows rows = query_rows(vis, vis_stride, vis_nb1, t, n_kv);
  if (rows.fault != kErrNone && threadIdx.x == 0 && h == 0) report_fault(err, rows.fault, LOOM_OP_ATTENTION, t, rows.value, n_kv);
  for (int64_t d = threadIdx.x; d < D; d += kAttnChunk) qs[d] = load_elem(q.type, q.data + q.offset(d, h, t, 0));
  for (int64_t d = threadIdx.x; d < Dv; d += kAttnChunk) acc[d] = 0.0f;
  __syncthreads();
  OnlineState st = online_init();
  const int64_t n = rows.end;
  for (int64_t j0 = rows.first; j0 < n; j0 += kAttnChunk) {
    const int64_t j = j0 + threadIdx.x;
    float s = -INFINITY;
    if (j < n) s = attn_score(qs, k.data + j * k.nb[1] + g * k.nb[2], k.type, k.nb[0], D, scale);
    OnlineState cs;
    cs.m = chunk_combine(s, red, MaxF());
    const float pj = j < n ? expf(s - cs.m) : 0.0f;
    p[threadIdx.x] = pj;
    cs.l = chunk_combine(pj, red, AddF());
    const MergeFactors f = online_factors(st, cs);
    const int64_t rows = n - j0 < kAttnChunk ? n - j0 : kAttnChunk;
    for (int64_t d = threadIdx.x; d < Dv; d += kAttnChunk) {
      float c = 0.0f;
      for (int64_t r = 0; r < rows; ++r) c += p[r] * load_elem(v.type, v.data + v.offset(d, j0 + r, g, 0));
      acc[d] = online_merge_acc(acc[d], c, f);
    }
    st = online_merge(st, cs, f);
    __syncthreads();
  }
  for (int64_t d = threadIdx.x; d < Dv; d += kAttnChunk) *reinterpret_cast<float*>(out + d * dst.nb[0]) = online_finish(st, acc[d]);
}

}  // namespace

loom_status_t* launch_attention(const LaunchContext& ctx, const loom_tensor_t* node) {
  if (node_path(node) == Path::kAttentionSplit) return launch_attention_split(ctx, node);
  const loom_tensor_t* q = node->src[0];
  if (node->ne[0] * node->ne[1] * node->ne[2] == 0) return nullptr;
  if (ctx.f16_attention && attention_tc_fits(node)) return launch_attention_tc(ctx, node);
  float scale;
  std::memcpy(&scale, node->op_params, sizeof scale);
  const size_t shmem = static_cast<size_t>(q->ne[0] + node->src[2]->ne[0] + 2 * kAttnChunk) * sizeof(float);
  const dim3 grid(static_cast<unsigned>(q->ne[1]), static_cast<unsigned>(q->ne[2]));
  LOOM_LAUNCH(grid, kAttnChunk, shmem, ctx.stream, attention_kernel)(targ(node), targ(q), targ(node->src[1]), targ(node->src[2]),
                                                           static_cast<const uint8_t*>(node->src[3]->data),
                                                           static_cast<int64_t>(node->src[3]->nb[0]),
                                                           ranges_stride(node), scale, ctx.error);
  return launch_status(node, "attention kernel");
}

}  // namespace loom::cuda
