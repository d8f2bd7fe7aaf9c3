// ROPE: one thread per element; the thread holding the first of a pair
// rotates both (rope.cuh), elements past n_dims are copied. Fused with the
// SET_ROWS after it (fusion.h's RopeRows: K into its cache, and V's
// SET_ROWS beside it), the same threads also store each result into the
// cache row its index names, and copy V's elements.
#include <algorithm>
#include <cstring>

#include "dequant.cuh"
#include "fault.cuh"
#include "fusion.h"
#include "launch.cuh"
#include "ops.h"
#include "rope.cuh"
#include "tensor.cuh"

namespace loom::cuda {
namespace {

// Where the fused kernel stores: ROPE's result into the cache `k` (SET_ROWS
// source dim d is ROPE's dim perm[d]) and V's rows into the cache `v`, both
// at the rows `idx` names. on / v_on: 0 when absent.
struct RowsStore {
  TArg k, idx, v, v_rows;
  int perm[4];
  int on, v_on;
};

// ROPE's result element (j, i1, i2, i3), value x, into its cache row.
__device__ void store_k(const RowsStore& st, int64_t j, const int64_t* i, float x, KernelFault* err) {
  const int64_t full[4] = {j, i[1], i[2], i[3]};
  const int64_t s1 = full[st.perm[1]], s2 = full[st.perm[2]], s3 = full[st.perm[3]];
  const int64_t r = load_row_index(st.idx, s1, s2, s3);
  if (r < 0 || r >= st.k.ne[1]) {
    report_fault(err, kErrRowIndex, LOOM_OP_SET_ROWS, s1, r, st.k.ne[1]);
    return;
  }
  store_elem(st.k.type, st.k.data + j * st.k.nb[0] + r * st.k.nb[1] + s2 * st.k.nb[2] + s3 * st.k.nb[3], x);
}

// Element e of V's rows into its cache row (set_rows_kernel's float path).
__device__ void store_v(const RowsStore& st, int64_t e, KernelFault* err) {
  int64_t i[4];
  st.v_rows.index(e, i);
  const int64_t r = load_row_index(st.idx, i[1], i[2], i[3]);
  if (r < 0 || r >= st.v.ne[1]) {
    report_fault(err, kErrRowIndex, LOOM_OP_SET_ROWS, i[1], r, st.v.ne[1]);
    return;
  }
  const float x = *reinterpret_cast<const float*>(st.v_rows.data + st.v_rows.offset(i[0], i[1], i[2], i[3]));
  store_elem(st.v.type, st.v.data + i[0] * st.v.nb[0] + r * st.v.nb[1] + i[2] * st.v.nb[2] + i[3] * st.v.nb[3], x);
}

__global__ void rope_kernel(TArg dst, TArg a, const int32_t* pos, int64_t pos_stride, const uint8_t* ff, int64_t ff_stride,
                            int n_dims, int mode, float base, float scale, RowsStore st, KernelFault* err) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (st.v_on && e < st.v_rows.nelements()) store_v(st, e, err);
  if (e >= dst.nelements()) return;
  int64_t i[4];
  dst.index(e, i);
  const uint8_t* src = a.data + a.offset(0, i[1], i[2], i[3]);
  uint8_t* out = dst.data + dst.offset(0, i[1], i[2], i[3]);
  if (i[0] >= n_dims) {
    const float x = load_elem(a.type, src + i[0] * a.nb[0]);
    store_elem(dst.type, out + i[0] * dst.nb[0], x);
    if (st.on) store_k(st, i[0], i, round_to(dst.type, x), err);
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
  if (st.on) {
    // The value SET_ROWS would read back: ROPE's result (f32 when fused).
    store_k(st, p.j0, i, round_to(dst.type, x0), err);
    store_k(st, p.j1, i, round_to(dst.type, x1), err);
  }
}

loom_status_t* launch(const LaunchContext& ctx, const loom_tensor_t* node, const RowsStore& st, int64_t v_elems) {
  const TArg dst = targ(node);
  const int64_t n = std::max(dst.nelements(), v_elems);
  if (n == 0) return nullptr;
  float base, scale;
  std::memcpy(&base, &node->op_params[2], sizeof base);
  std::memcpy(&scale, &node->op_params[3], sizeof scale);
  const loom_tensor_t* ff = node->src[2];
  const unsigned blocks = static_cast<unsigned>((n + kElemThreads - 1) / kElemThreads);
  LOOM_LAUNCH(blocks, kElemThreads, 0, ctx.stream, rope_kernel)(
      dst, targ(node->src[0]), static_cast<const int32_t*>(node->src[1]->data), static_cast<int64_t>(node->src[1]->nb[0]),
      ff ? static_cast<const uint8_t*>(ff->data) : nullptr, ff ? static_cast<int64_t>(ff->nb[0]) : 0, node->op_params[0],
      node->op_params[1], base, scale, st, ctx.error);
  return launch_status(node, st.on ? "rope + set_rows kernel" : "rope kernel");
}

}  // namespace

loom_status_t* launch_rope(const LaunchContext& ctx, const loom_tensor_t* node) {
  return launch(ctx, node, RowsStore{}, 0);
}

loom_status_t* launch_rope_rows(const LaunchContext& ctx, const loom_tensor_t* node, const RopeRows& rr) {
  RowsStore st{};
  st.k = targ(rr.set_k);
  st.idx = targ(rr.set_k->src[2]);
  for (int d = 0; d < 4; ++d) st.perm[d] = rr.perm[d];
  st.on = 1;
  int64_t v_elems = 0;
  if (rr.set_v != nullptr) {
    st.v = targ(rr.set_v);
    st.v_rows = targ(rr.set_v->src[1]);
    st.v_on = 1;
    v_elems = st.v_rows.nelements();
  }
  return launch(ctx, node, st, v_elems);
}

}  // namespace loom::cuda
