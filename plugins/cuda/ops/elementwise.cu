// SILU, GELU, RELU, TANH, SCALE and ADD, SUB, MUL, DIV, SWIGLU: one thread per
// result element, any strides, src1 broadcast (elementwise.cuh).
#include <cstring>

#include "elementwise.cuh"
#include "launch.cuh"
#include "ops.h"
#include "tensor.cuh"
#include "dequant.cuh"

namespace loom::cuda {
namespace {

__global__ void unary_kernel(TArg dst, TArg a, int op, float scale, float bias) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= dst.nelements()) return;
  int64_t i[4];
  dst.index(e, i);
  const float x = load_elem(a.type, a.data + a.offset(i[0], i[1], i[2], i[3]));
  store_elem(dst.type, dst.data + dst.offset(i[0], i[1], i[2], i[3]), unary_op(op, x, scale, bias));
}

__global__ void binary_kernel(TArg dst, TArg a, TArg b, int op) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= dst.nelements()) return;
  int64_t i[4];
  dst.index(e, i);
  const float x = load_elem(a.type, a.data + a.offset(i[0], i[1], i[2], i[3]));
  const float y = load_elem(b.type, b.data + b.offset(broadcast_index(i[0], b.ne[0]), broadcast_index(i[1], b.ne[1]),
                                                      broadcast_index(i[2], b.ne[2]), broadcast_index(i[3], b.ne[3])));
  store_elem(dst.type, dst.data + dst.offset(i[0], i[1], i[2], i[3]), binary_op(op, x, y));
}

}  // namespace

loom_status_t* launch_elementwise(const LaunchContext& ctx, const loom_tensor_t* node) {
  const TArg dst = targ(node);
  const int64_t n = dst.nelements();
  if (n == 0) return nullptr;
  const unsigned blocks = static_cast<unsigned>((n + kElemThreads - 1) / kElemThreads);
  switch (node->op) {
    case LOOM_OP_SILU:
    case LOOM_OP_GELU:
    case LOOM_OP_RELU:
    case LOOM_OP_TANH:
    case LOOM_OP_SCALE: {
      float p[2] = {1.0f, 0.0f};
      if (node->op == LOOM_OP_SCALE) std::memcpy(p, node->op_params, sizeof p);
      unary_kernel<<<blocks, kElemThreads, 0, ctx.stream>>>(dst, targ(node->src[0]), node->op, p[0], p[1]);
      return launch_status(node, "unary kernel");
    }
    default:
      binary_kernel<<<blocks, kElemThreads, 0, ctx.stream>>>(dst, targ(node->src[0]), targ(node->src[1]), node->op);
      return launch_status(node, "binary kernel");
  }
}

}  // namespace loom::cuda
