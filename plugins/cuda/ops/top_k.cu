// TOP_K (ABI 1.5): one block of kRowThreads per row; k picks, each the best
// element after the previous one in top_k.cuh's order (a strided fold and
// the shared-memory halving tree), O(k * n / kRowThreads) per row: fast for
// the router's k (1-8), correct up to k = n.
#include "launch.cuh"
#include "ops.h"
#include "tensor.cuh"
#include "top_k.cuh"

namespace loom::cuda {
namespace {

__global__ void top_k_kernel(TArg dst, TArg a, int k) {
  __shared__ TopKPick sh[kRowThreads];
  const int64_t r = blockIdx.x;
  const uint8_t* x = a.row(r);
  uint8_t* y = dst.row(r);
  const int64_t n = a.ne[0];
  TopKPick prev = topk_none();
  for (int j = 0; j < k; ++j) {
    TopKPick p = strided_fold(n, static_cast<int>(threadIdx.x), kRowThreads, topk_none(), [&](TopKPick c, int64_t i) {
      return topk_step(c, *reinterpret_cast<const float*>(x + i * a.nb[0]), static_cast<int32_t>(i), prev);
    });
    sh[threadIdx.x] = p;
    __syncthreads();
    for (int s = kRowThreads / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) sh[threadIdx.x] = topk_combine(sh[threadIdx.x], sh[threadIdx.x + s]);
      __syncthreads();
    }
    prev = sh[0];
    __syncthreads();
    if (threadIdx.x == 0) *reinterpret_cast<int32_t*>(y + j * dst.nb[0]) = prev.index;
  }
}

}  // namespace

loom_status_t* launch_top_k(const LaunchContext& ctx, const loom_tensor_t* node) {
  const TArg a = targ(node->src[0]);
  const int64_t rows = a.nrows();
  if (rows == 0 || a.ne[0] == 0) return nullptr;
  if (rows > 0x7FFFFFFF) return launch_status(node, "too many rows");
  LOOM_LAUNCH(static_cast<unsigned>(rows), kRowThreads, 0, ctx.stream, top_k_kernel)(targ(node), a, node->op_params[0]);
  return launch_status(node, "top_k kernel");
}

}  // namespace loom::cuda
