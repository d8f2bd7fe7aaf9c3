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

// One ROPE node's arguments.
struct RopeArgs {
  TArg dst, a;
  const int32_t* pos;
  int64_t pos_stride;
  const uint8_t* ff;
  int64_t ff_stride;
  int n_dims, mode;
  float base, scale;
};

RopeArgs rope_args(const loom_tensor_t* node) {
  RopeArgs r{};
  r.dst = targ(node);
  r.a = targ(node->src[0]);
  r.pos = static_cast<const int32_t*>(node->src[1]->data);
  r.pos_stride = static_cast<int64_t>(node->src[1]->nb[0]);
  const loom_tensor_t* ff = node->src[2];
  r.ff = ff ? static_cast<const uint8_t*>(ff->data) : nullptr;
  r.ff_stride = ff ? static_cast<int64_t>(ff->nb[0]) : 0;
  r.n_dims = node->op_params[0];
  r.mode = node->op_params[1];
  std::memcpy(&r.base, &node->op_params[2], sizeof r.base);
  std::memcpy(&r.scale, &node->op_params[3], sizeof r.scale);
  return r;
}

// Element e of ROPE r's result; with st (st->on), into its cache row too.
__device__ void rope_elem(const RopeArgs& r, int64_t e, const RowsStore* st, KernelFault* err) {
  int64_t i[4];
  r.dst.index(e, i);
  const uint8_t* src = r.a.data + r.a.offset(0, i[1], i[2], i[3]);
  uint8_t* out = r.dst.data + r.dst.offset(0, i[1], i[2], i[3]);
  if (i[0] >= r.n_dims) {
    const float x = load_elem(r.a.type, src + i[0] * r.a.nb[0]);
    store_elem(r.dst.type, out + i[0] * r.dst.nb[0], x);
    if (st != nullptr) store_k(*st, i[0], i, round_to(r.dst.type, x), err);
    return;
  }
  const int64_t half = r.n_dims / 2;
  int64_t k;  // rotation index of the pair whose first element is i0
  if (r.mode == 2) {
    if (i[0] >= half) return;
    k = i[0];
  } else {
    if (i[0] % 2 != 0) return;
    k = i[0] / 2;
  }
  const RopePair p = rope_pair(r.mode, k, r.n_dims);
  float x0 = load_elem(r.a.type, src + p.j0 * r.a.nb[0]);
  float x1 = load_elem(r.a.type, src + p.j1 * r.a.nb[0]);
  const int32_t ps = *reinterpret_cast<const int32_t*>(reinterpret_cast<const uint8_t*>(r.pos) + i[2] * r.pos_stride);
  const float f = r.ff ? *reinterpret_cast<const float*>(r.ff + k * r.ff_stride) : 1.0f;
  rope_rotate(rope_theta(ps, k, r.n_dims, r.base, r.scale, f), &x0, &x1);
  store_elem(r.dst.type, out + p.j0 * r.dst.nb[0], x0);
  store_elem(r.dst.type, out + p.j1 * r.dst.nb[0], x1);
  if (st != nullptr) {
    // The value SET_ROWS would read back: ROPE's result (f32 when fused).
    store_k(*st, p.j0, i, round_to(r.dst.type, x0), err);
    store_k(*st, p.j1, i, round_to(r.dst.type, x1), err);
  }
}

// ROPE k (with the stores st names), and beside it ROPE q when q_on (the
// llama graph's Q: the same kernel, its own arguments).
__global__ void rope_kernel(RopeArgs k, RopeArgs q, int q_on, RowsStore st, KernelFault* err) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (q_on && e < q.dst.nelements()) rope_elem(q, e, nullptr, err);
  if (st.v_on && e < st.v_rows.nelements()) store_v(st, e, err);
  if (e < k.dst.nelements()) rope_elem(k, e, st.on ? &st : nullptr, err);
}

// q: a ROPE run beside `node` (nullptr: none).
loom_status_t* launch(const LaunchContext& ctx, const loom_tensor_t* node, const loom_tensor_t* q, const RowsStore& st) {
  const RopeArgs k = rope_args(node);
  const RopeArgs qa = q != nullptr ? rope_args(q) : RopeArgs{};
  int64_t n = k.dst.nelements();
  if (q != nullptr) n = std::max(n, qa.dst.nelements());
  if (st.v_on) n = std::max(n, st.v_rows.nelements());
  if (n == 0) return nullptr;
  const unsigned blocks = static_cast<unsigned>((n + kElemThreads - 1) / kElemThreads);
  LOOM_LAUNCH(blocks, kElemThreads, 0, ctx.stream, rope_kernel)(k, qa, q != nullptr ? 1 : 0, st, ctx.error);
  return launch_status(node, st.on || q != nullptr ? "fused rope kernel" : "rope kernel");
}

}  // namespace

loom_status_t* launch_rope(const LaunchContext& ctx, const loom_tensor_t* node) {
  return launch(ctx, node, nullptr, RowsStore{});
}

loom_status_t* launch_rope_rows(const LaunchContext& ctx, const loom_tensor_t* node, const RopeRows& rr) {
  RowsStore st{};
  if (rr.set_k != nullptr) {
    st.k = targ(rr.set_k);
    st.idx = targ(rr.set_k->src[2]);
    for (int d = 0; d < 4; ++d) st.perm[d] = rr.perm[d];
    st.on = 1;
  }
  if (rr.set_v != nullptr) {
    st.v = targ(rr.set_v);
    st.v_rows = targ(rr.set_v->src[1]);
    st.v_on = 1;
  }
  return launch(ctx, node, rr.q, st);
}

}  // namespace loom::cuda
