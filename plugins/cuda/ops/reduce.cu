// Row kernels, one block of kRowThreads per row: RMS_NORM, NORM, SOFT_MAX
// (online max / sum), SUM_ROWS and ARGMAX. Thread t folds elements t,
// t + kRowThreads, ...; the partials combine in shared memory in the
// halving tree of launch.cuh (the host test replays the same order).
#include <cstring>

#include "dequant.cuh"
#include "launch.cuh"
#include "ops.h"
#include "reduce.cuh"
#include "tensor.cuh"

namespace loom::cuda {
namespace {

// The halving tree over the block's partials in shared memory; every
// thread gets the result.
template <typename T, typename Combine>
__device__ T block_combine(T v, T* sh, Combine combine) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kRowThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) sh[threadIdx.x] = combine(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  const T r = sh[0];
  __syncthreads();
  return r;
}

struct AddF {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct CombineMaxSum {
  __device__ MaxSum operator()(MaxSum a, MaxSum b) const { return maxsum_combine(a, b); }
};
struct CombineArgMax {
  __device__ ArgMax operator()(ArgMax a, ArgMax b) const { return argmax_combine(a, b); }
};

__device__ float at(const TArg& t, const uint8_t* row, int64_t i) { return load_elem(t.type, row + i * t.nb[0]); }

__global__ void norm_kernel(TArg dst, TArg a, float eps, bool center) {
  __shared__ float sh[kRowThreads];
  const int64_t r = blockIdx.x;
  const uint8_t* x = a.row(r);
  uint8_t* y = dst.row(r);
  const int64_t n = a.ne[0];
  float mean = 0.0f;
  if (center) {
    const float s = strided_fold(n, threadIdx.x, kRowThreads, 0.0f, [&](float p, int64_t i) { return p + at(a, x, i); });
    mean = block_combine(s, sh, AddF()) / static_cast<float>(n);
  }
  const float sq = strided_fold(n, threadIdx.x, kRowThreads, 0.0f, [&](float p, int64_t i) {
    const float d = at(a, x, i) - mean;
    return p + d * d;
  });
  const float scale = norm_scale(block_combine(sq, sh, AddF()), n, eps);
  for (int64_t i = threadIdx.x; i < n; i += kRowThreads) store_elem(dst.type, y + i * dst.nb[0], (at(a, x, i) - mean) * scale);
}

__global__ void softmax_kernel(TArg dst, TArg a, TArg mask, bool has_mask, float scale) {
  __shared__ MaxSum sh[kRowThreads];
  const int64_t r = blockIdx.x;
  const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
  const uint8_t* x = a.row(r);
  const uint8_t* m = has_mask ? mask.data + i1 * mask.nb[1] + (i2 % mask.ne[2]) * mask.nb[2] + (i3 % mask.ne[3]) * mask.nb[3]
                              : nullptr;
  uint8_t* y = dst.row(r);
  const int64_t n = a.ne[0];
  auto value = [&](int64_t i) { return at(a, x, i) * scale + (m ? load_elem(mask.type, m + i * mask.nb[0]) : 0.0f); };
  const MaxSum p = strided_fold(n, threadIdx.x, kRowThreads, maxsum_init(), [&](MaxSum m, int64_t i) { return maxsum_step(m, value(i)); });
  const MaxSum total = block_combine(p, sh, CombineMaxSum());
  for (int64_t i = threadIdx.x; i < n; i += kRowThreads) store_elem(dst.type, y + i * dst.nb[0], softmax_value(total, value(i)));
}

__global__ void sum_rows_kernel(TArg dst, TArg a) {
  __shared__ float sh[kRowThreads];
  const int64_t r = blockIdx.x;
  const uint8_t* x = a.row(r);
  float s = strided_fold(a.ne[0], threadIdx.x, kRowThreads, 0.0f, [&](float p, int64_t i) { return p + at(a, x, i); });
  s = block_combine(s, sh, AddF());
  if (threadIdx.x == 0) store_elem(dst.type, dst.row(r), s);
}

__global__ void argmax_kernel(TArg dst, TArg a) {
  __shared__ ArgMax sh[kRowThreads];
  const int64_t r = blockIdx.x;
  const uint8_t* x = a.row(r);
  ArgMax p = strided_fold(a.ne[0], threadIdx.x, kRowThreads, argmax_init(),
                          [&](ArgMax m, int64_t i) { return argmax_step(m, at(a, x, i), static_cast<int32_t>(i)); });
  p = block_combine(p, sh, CombineArgMax());
  // dst is I32 [ne1, ne2, ne3]: row r of a is element r of dst.
  if (threadIdx.x == 0) {
    const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
    *reinterpret_cast<int32_t*>(dst.data + i1 * dst.nb[0] + i2 * dst.nb[1] + i3 * dst.nb[2]) = p.index;
  }
}

}  // namespace

loom_status_t* launch_rows_reduce(const LaunchContext& ctx, const loom_tensor_t* node) {
  const TArg a = targ(node->src[0]);
  const int64_t rows = a.nrows();
  if (rows == 0 || a.ne[0] == 0) return nullptr;
  if (rows > 0x7FFFFFFF) return launch_status(node, "too many rows");
  const unsigned grid = static_cast<unsigned>(rows);
  float p0 = 0.0f;
  std::memcpy(&p0, node->op_params, sizeof p0);
  switch (node->op) {
    case LOOM_OP_RMS_NORM:
    case LOOM_OP_NORM:
      norm_kernel<<<grid, kRowThreads, 0, ctx.stream>>>(targ(node), a, p0, node->op == LOOM_OP_NORM);
      return launch_status(node, "norm kernel");
    case LOOM_OP_SOFT_MAX: {
      const loom_tensor_t* m = node->src[1];
      const TArg mask = m ? targ(m) : a;
      softmax_kernel<<<grid, kRowThreads, 0, ctx.stream>>>(targ(node), a, mask, m != nullptr, p0);
      return launch_status(node, "soft_max kernel");
    }
    case LOOM_OP_SUM_ROWS:
      sum_rows_kernel<<<grid, kRowThreads, 0, ctx.stream>>>(targ(node), a);
      return launch_status(node, "sum_rows kernel");
    default:
      argmax_kernel<<<grid, kRowThreads, 0, ctx.stream>>>(targ(node), a);
      return launch_status(node, "argmax kernel");
  }
}

}  // namespace loom::cuda
