// Row kernels, one block of kRowThreads per row: RMS_NORM, NORM, SOFT_MAX
// (online max / sum), SUM_ROWS and ARGMAX. Thread t folds elements t,
// t + kRowThreads, ...; the partials combine in shared memory in the
// halving tree of launch.cuh (the host test replays the same order).
#include <cstring>

#include "act_quant.cuh"
#include "dequant.cuh"
#include "elementwise.cuh"
#include "gemv.h"
#include "fusion.h"
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

// The norm of row x (n elements): its mean (0 unless centered) and the
// scale (x - mean) is multiplied by. Every thread of the block gets both.
__device__ float norm_row(const TArg& a, const uint8_t* x, int64_t n, float eps, bool center, float* sh, float* mean) {
  *mean = 0.0f;
  if (center) {
    const float s = strided_fold(n, threadIdx.x, kRowThreads, 0.0f, [&](float p, int64_t i) { return p + at(a, x, i); });
    *mean = block_combine(s, sh, AddF()) / static_cast<float>(n);
  }
  const float m = *mean;
  const float sq = strided_fold(n, threadIdx.x, kRowThreads, 0.0f, [&](float p, int64_t i) {
    const float d = at(a, x, i) - m;
    return p + d * d;
  });
  return norm_scale(block_combine(sq, sh, AddF()), n, eps);
}

__global__ void norm_kernel(TArg dst, TArg a, float eps, bool center) {
  __shared__ float sh[kRowThreads];
  const int64_t r = blockIdx.x;
  const uint8_t* x = a.row(r);
  uint8_t* y = dst.row(r);
  float mean;
  const float scale = norm_row(a, x, a.ne[0], eps, center, sh, &mean);
  for (int64_t i = threadIdx.x; i < a.ne[0]; i += kRowThreads) store_elem(dst.type, y + i * dst.nb[0], (at(a, x, i) - mean) * scale);
}

// norm_kernel followed by MUL with w (broadcast over rows): the norm's
// value rounded to its type (written unless the product overwrites it),
// times w's element, in the product's type (fusion.h).
// qs / qd: the product's 8-bit blocks of 32 (nullptr: none). A warp's 32
// threads hold 32 consecutive elements of the row at each step (ne[0] % 32
// == 0), one block: its max by shuffles, then quantize_b_kernel's rounding.
__global__ void norm_mul_kernel(TArg nout, TArg mout, TArg a, TArg w, float eps, bool center, bool write_norm,
                                bool w_first, int8_t* qs, float* qd) {
  __shared__ float sh[kRowThreads];
  const int64_t r = blockIdx.x;
  const uint8_t* x = a.row(r);
  const int64_t n = a.ne[0];
  float mean;
  const float scale = norm_row(a, x, n, eps, center, sh, &mean);
  const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
  const uint8_t* wrow = w.data + broadcast_index(i1, w.ne[1]) * w.nb[1] + broadcast_index(i2, w.ne[2]) * w.nb[2] +
                        broadcast_index(i3, w.ne[3]) * w.nb[3];
  uint8_t* yn = nout.row(r);
  uint8_t* ym = mout.row(r);
  for (int64_t i = threadIdx.x; i < n; i += kRowThreads) {
    const float v = round_to(nout.type, (at(a, x, i) - mean) * scale);
    if (write_norm) store_elem(nout.type, yn + i * nout.nb[0], v);
    const float g = load_elem(w.type, wrow + broadcast_index(i, w.ne[0]) * w.nb[0]);
    const float p = w_first ? binary_op(LOOM_OP_MUL, g, v) : binary_op(LOOM_OP_MUL, v, g);
    store_elem(mout.type, ym + i * mout.nb[0], p);
    if (qs != nullptr) {
      float amax = fabsf(p);
      for (int s = kWarp / 2; s > 0; s /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, s));
      const bool nan = __any_sync(0xFFFFFFFFu, p != p);
      qs[r * n + i] = act_quant(p, act_inverse(amax / 127.0f));
      if (threadIdx.x % kWarp == 0) qd[r * (n / 32) + i / 32] = act_scale(amax, nan);
    }
  }
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
      LOOM_LAUNCH(grid, kRowThreads, 0, ctx.stream, norm_kernel)(targ(node), a, p0, node->op == LOOM_OP_NORM);
      return launch_status(node, "norm kernel");
    case LOOM_OP_SOFT_MAX: {
      const loom_tensor_t* m = node->src[1];
      const TArg mask = m ? targ(m) : a;
      LOOM_LAUNCH(grid, kRowThreads, 0, ctx.stream, softmax_kernel)(targ(node), a, mask, m != nullptr, p0);
      return launch_status(node, "soft_max kernel");
    }
    case LOOM_OP_SUM_ROWS:
      LOOM_LAUNCH(grid, kRowThreads, 0, ctx.stream, sum_rows_kernel)(targ(node), a);
      return launch_status(node, "sum_rows kernel");
    default:
      LOOM_LAUNCH(grid, kRowThreads, 0, ctx.stream, argmax_kernel)(targ(node), a);
      return launch_status(node, "argmax kernel");
  }
}

loom_status_t* launch_norm_mul(const LaunchContext& ctx, const loom_tensor_t* norm, const loom_tensor_t* mul,
                               ActQ8* q8) {
  const TArg a = targ(norm->src[0]);
  const int64_t rows = a.nrows();
  if (rows == 0 || a.ne[0] == 0) return nullptr;
  if (rows > 0x7FFFFFFF) return launch_status(mul, "too many rows");
  float eps = 0.0f;
  std::memcpy(&eps, norm->op_params, sizeof eps);
  int8_t* qs = nullptr;
  float* qd = nullptr;
  if (q8 != nullptr) {
    // quantize_b's layout (gemv_quant.cu): K quants per column, 16-byte
    // aligned, then the scales.
    const size_t quants = static_cast<size_t>(rows * a.ne[0]);
    loom_status_t* st = nullptr;
    auto* mem = static_cast<uint8_t*>(ctx.act_scratch->get(act_q8_bytes(LOOM_TYPE_Q8_0, mul), &st));
    if (st != nullptr) return st;
    qs = reinterpret_cast<int8_t*>(mem);
    qd = reinterpret_cast<float*>(mem + (quants + 15) / 16 * 16);
    q8->qs = qs;
    q8->d = qd;
  }
  LOOM_LAUNCH(static_cast<unsigned>(rows), kRowThreads, 0, ctx.stream, norm_mul_kernel)(
      targ(norm), targ(mul), a, targ(fused_weight(norm, mul)), eps, norm->op == LOOM_OP_NORM,
      fused_writes_norm(norm, mul), mul->src[0] != norm, qs, qd);
  return launch_status(mul, "norm_mul kernel");
}

}  // namespace loom::cuda
