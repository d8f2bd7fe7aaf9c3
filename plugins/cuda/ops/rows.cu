// GET_ROWS (any source type, dequantized per element) and SET_ROWS (float
// rows into a float or Q8_0 / Q4_0 destination, a block per thread). A row
// index outside the rows fills the stream's fault word (kErrRowIndex, the
// index and its row) and the element is skipped.
#include "dequant.cuh"
#include "fault.cuh"
#include "launch.cuh"
#include "ops.h"
#include "quantize.cuh"
#include "tensor.cuh"

namespace loom::cuda {
namespace {

__global__ void get_rows_kernel(TArg dst, TArg a, TArg idx, KernelFault* err) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= dst.nelements()) return;
  int64_t i[4];
  dst.index(e, i);
  const int64_t r = load_row_index(idx, i[1], i[2], i[3]);
  if (r < 0 || r >= a.ne[1]) {
    report_fault(err, kErrRowIndex, LOOM_OP_GET_ROWS, i[1], r, a.ne[1]);
    return;
  }
  const uint8_t* row = a.data + r * a.nb[1] + i[2] * a.nb[2] + i[3] * a.nb[3];
  store_elem(dst.type, dst.data + dst.offset(i[0], i[1], i[2], i[3]), row_elem(a.type, row, i[0], a.nb[0]));
}

// One thread per destination block (a plain element counts as a block of 1).
__global__ void set_rows_kernel(TArg dst, TArg rows, TArg idx, KernelFault* err) {
  const BlockShape bs = block_shape(dst.type);
  const int64_t per_row = rows.ne[0] / bs.elems;
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= per_row * rows.nrows()) return;
  const int64_t b = e % per_row, rr = e / per_row;
  const int64_t i1 = rr % rows.ne[1], i2 = (rr / rows.ne[1]) % rows.ne[2], i3 = rr / (rows.ne[1] * rows.ne[2]);
  const int64_t r = load_row_index(idx, i1, i2, i3);
  if (r < 0 || r >= dst.ne[1]) {
    report_fault(err, kErrRowIndex, LOOM_OP_SET_ROWS, i1, r, dst.ne[1]);
    return;
  }
  const uint8_t* src = rows.data + rows.offset(b * bs.elems, i1, i2, i3);
  uint8_t* out = dst.data + r * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
  if (bs.elems == 1) {
    store_elem(dst.type, out + b * dst.nb[0], *reinterpret_cast<const float*>(src));
    return;
  }
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = *reinterpret_cast<const float*>(src + j * rows.nb[0]);
  quantize_block(dst.type, x, out + b * bs.bytes);
}

}  // namespace

loom_status_t* launch_rows(const LaunchContext& ctx, const loom_tensor_t* node) {
  if (node->op == LOOM_OP_GET_ROWS) {
    const TArg dst = targ(node);
    const int64_t n = dst.nelements();
    if (n == 0) return nullptr;
    LOOM_LAUNCH(static_cast<unsigned>((n + kElemThreads - 1) / kElemThreads), kElemThreads, 0, ctx.stream, get_rows_kernel)(
        dst, targ(node->src[0]), targ(node->src[1]), ctx.error);
    return launch_status(node, "get_rows kernel");
  }
  const TArg rows = targ(node->src[1]);
  const int64_t n = rows.ne[0] / block_shape(node->type).elems * rows.nrows();
  if (n == 0) return nullptr;
  LOOM_LAUNCH(static_cast<unsigned>((n + kElemThreads - 1) / kElemThreads), kElemThreads, 0, ctx.stream, set_rows_kernel)(
      targ(node), rows, targ(node->src[2]), ctx.error);
  return launch_status(node, "set_rows kernel");
}

}  // namespace loom::cuda
