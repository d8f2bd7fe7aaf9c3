// ROPE: one thread per element; the thread holding the first of a pair
// rotates both (rope.cuh), elements past n_dims are copied.
#include <cstring>

#include "dequant.cuh"
#include "launch.cuh"
#include "ops.h"
#include "rope.cuh"
#include "tensor.cuh"

namespace loom::cuda {
namespace {

__global__ void rope_kernel(TArg dst, TArg a, const int32_t* pos, int64_t pos_stride, const uint8_t* ff, int64_t ff_stride,
                            int n_dims, int mode, float base, float scale) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= dst.nelements()) return;
  int64_t i[4];
  dst.index(e, i);
  const uint8_t* src = a.data + a.offset(0, i[1], i[2], i[3]);
  uint8_t* out = dst.data + dst.offset(0, i[1], i[2], i[3]);
  if (i[0] >= n_dims) {
    store_elem(dst.type, out + i[0] * dst.nb[0], load_elem(a.type, src + i[0] * a.nb[0]));
    return;
  }
  const int64_t half = n_dims / 2;
  int64_t k;  // rotation index of the pair whose first element is i0
  if (mode == 2) {
    if (i[0] >= half) return;
    k = i[0];
  } else {
    if (i[0] % 2 != 0) return;
    k = i[0] / 2;
  }
  const RopePair p = rope_pair(mode, k, n_dims);
  float x0 = load_elem(a.type, src + p.j0 * a.nb[0]);
  float x1 = load_elem(a.type, src + p.j1 * a.nb[0]);
  const int32_t ps = *reinterpret_cast<const int32_t*>(reinterpret_cast<const uint8_t*>(pos) + i[2] * pos_stride);
  const float f = ff ? *reinterpret_cast<const float*>(ff + k * ff_stride) : 1.0f;
  rope_rotate(rope_theta(ps, k, n_dims, base, scale, f), &x0, &x1);
  store_elem(dst.type, out + p.j0 * dst.nb[0], x0);
  store_elem(dst.type, out + p.j1 * dst.nb[0], x1);
}

}  // namespace

loom_status_t* launch_rope(const LaunchContext& ctx, const loom_tensor_t* node) {
  const TArg dst = targ(node);
  const int64_t n = dst.nelements();
  if (n == 0) return nullptr;
  float base, scale;
  std::memcpy(&base, &node->op_params[2], sizeof base);
  std::memcpy(&scale, &node->op_params[3], sizeof scale);
  const loom_tensor_t* ff = node->src[2];
  const unsigned blocks = static_cast<unsigned>((n + kElemThreads - 1) / kElemThreads);
  LOOM_LAUNCH(blocks, kElemThreads, 0, ctx.stream, rope_kernel)(
      dst, targ(node->src[0]), static_cast<const int32_t*>(node->src[1]->data), static_cast<int64_t>(node->src[1]->nb[0]),
      ff ? static_cast<const uint8_t*>(ff->data) : nullptr, ff ? static_cast<int64_t>(ff->nb[0]) : 0, node->op_params[0],
      node->op_params[1], base, scale);
  return launch_status(node, "rope kernel");
}

}  // namespace loom::cuda
