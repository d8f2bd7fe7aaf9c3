// SILU, GELU, RELU, TANH, SCALE and ADD, SUB, MUL, DIV, SWIGLU: one thread per
// result element, any strides, src1 broadcast (elementwise.cuh).
#include <cstring>

#include "act_quant.cuh"
#include "elementwise.cuh"
#include "gemv.h"
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

// qs / qd: the result's 8-bit blocks of 32 (nullptr: none; dst dense f32
// with ne[0] % 32 == 0, so a warp holds one block: element e is quant e,
// block e / 32), rounded as quantize_b_kernel rounds them.
__global__ void binary_kernel(TArg dst, TArg a, TArg b, int op, int8_t* qs, float* qd) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= dst.nelements()) return;  // whole warps when qs is set
  int64_t i[4];
  dst.index(e, i);
  const float x = load_elem(a.type, a.data + a.offset(i[0], i[1], i[2], i[3]));
  const float y = load_elem(b.type, b.data + b.offset(broadcast_index(i[0], b.ne[0]), broadcast_index(i[1], b.ne[1]),
                                                      broadcast_index(i[2], b.ne[2]), broadcast_index(i[3], b.ne[3])));
  const float v = binary_op(op, x, y);
  store_elem(dst.type, dst.data + dst.offset(i[0], i[1], i[2], i[3]), v);
  if (qs != nullptr) {
    float amax = fabsf(v);
    for (int s = kWarp / 2; s > 0; s /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, s));
    const bool nan = __any_sync(0xFFFFFFFFu, v != v);
    qs[e] = act_quant(v, act_inverse(amax / 127.0f));
    if (threadIdx.x % kWarp == 0) qd[e / 32] = act_scale(amax, nan);
  }
}

}  // namespace

loom_status_t* launch_elementwise(const LaunchContext& ctx, const loom_tensor_t* node, ActQ8* q8) {
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
      LOOM_LAUNCH(blocks, kElemThreads, 0, ctx.stream, unary_kernel)(dst, targ(node->src[0]), node->op, p[0], p[1]);
      return launch_status(node, "unary kernel");
    }
    default: {
      int8_t* qs = nullptr;
      float* qd = nullptr;
      if (q8 != nullptr) {
        // quantize_b's layout: the quants, 16-byte aligned, then the scales.
        loom_status_t* st = nullptr;
        auto* mem = static_cast<uint8_t*>(ctx.act_scratch->get(act_q8_bytes(LOOM_TYPE_Q8_0, node), &st));
        if (st != nullptr) return st;
        qs = reinterpret_cast<int8_t*>(mem);
        qd = reinterpret_cast<float*>(mem + (static_cast<size_t>(n) + 15) / 16 * 16);
        q8->qs = qs;
        q8->d = qd;
      }
      LOOM_LAUNCH(blocks, kElemThreads, 0, ctx.stream, binary_kernel)(dst, targ(node->src[0]), targ(node->src[1]), node->op,
                                                             qs, qd);
      return launch_status(node, "binary kernel");
    }
  }
}

}  // namespace loom::cuda
