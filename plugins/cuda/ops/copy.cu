// CPY and CONT: elements matched in row-major logical order between two
// shapes with any strides. Plain -> plain per element; float -> Q8_0 / Q4_0
// a destination block per thread (quantize.cuh); quantized -> float per
// element; quantized -> the same type with equal rows as whole blocks.
#include "dequant.cuh"
#include "launch.cuh"
#include "ops.h"
#include "quantize.cuh"
#include "support.h"
#include "tensor.cuh"

#include "common/glue.h"

namespace loom::cuda {
namespace {

// Logical element e of t: its value (dequantized for quantized rows).
__device__ float read_logical(const TArg& t, int64_t e) {
  int64_t i[4];
  t.index(e, i);
  return row_elem(t.type, t.data + t.offset(0, i[1], i[2], i[3]), i[0], t.nb[0]);
}

__global__ void copy_plain_kernel(TArg dst, TArg a) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= dst.nelements()) return;
  int64_t i[4], j[4];
  dst.index(e, i);
  a.index(e, j);
  uint8_t* out = dst.data + dst.offset(i[0], i[1], i[2], i[3]);
  const uint8_t* in = a.data + a.offset(j[0], j[1], j[2], j[3]);
  if (dst.type == a.type) {
    const int size = block_shape(dst.type).bytes;
    for (int k = 0; k < size; ++k) out[k] = in[k];
  } else {
    store_elem(dst.type, out, load_elem(a.type, in));
  }
}

__global__ void dequant_copy_kernel(TArg dst, TArg a) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= dst.nelements()) return;
  int64_t i[4];
  dst.index(e, i);
  store_elem(dst.type, dst.data + dst.offset(i[0], i[1], i[2], i[3]), read_logical(a, e));
}

__global__ void quant_copy_kernel(TArg dst, TArg a) {
  const BlockShape bs = block_shape(dst.type);
  const int64_t per_row = dst.ne[0] / bs.elems;
  const int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (b >= per_row * dst.nrows()) return;
  const int64_t r = b / per_row, k = b % per_row;
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = read_logical(a, r * dst.ne[0] + k * bs.elems + j);
  quantize_block(dst.type, x, dst.row(r) + k * bs.bytes);
}

// Same quantized type, same row length: bytes of whole rows.
__global__ void block_copy_kernel(TArg dst, TArg a, int64_t row_bytes) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= row_bytes * dst.nrows()) return;
  const int64_t r = e / row_bytes, k = e % row_bytes;
  dst.row(r)[k] = a.row(r)[k];
}

unsigned grid_for(int64_t n) { return static_cast<unsigned>((n + kElemThreads - 1) / kElemThreads); }

}  // namespace

loom_status_t* launch_copy(const LaunchContext& ctx, const loom_tensor_t* node) {
  const TArg dst = targ(node);
  const TArg a = targ(node->src[0]);
  const int64_t n = dst.nelements();
  if (n == 0) return nullptr;
  const BlockShape ds = block_shape(dst.type);
  switch (node_path(node)) {  // support.h: the path supports_op checked
    case Path::kCopyBlocks: {
      const int64_t rb = dst.ne[0] / ds.elems * ds.bytes;
      LOOM_LAUNCH(grid_for(rb * dst.nrows()), kElemThreads, 0, ctx.stream, block_copy_kernel)(dst, a, rb);
      break;
    }
    case Path::kCopyQuantize:
      LOOM_LAUNCH(grid_for(n / ds.elems), kElemThreads, 0, ctx.stream, quant_copy_kernel)(dst, a);
      break;
    case Path::kCopyDequantize:
      LOOM_LAUNCH(grid_for(n), kElemThreads, 0, ctx.stream, dequant_copy_kernel)(dst, a);
      break;
    case Path::kCopyPlain:
      LOOM_LAUNCH(grid_for(n), kElemThreads, 0, ctx.stream, copy_plain_kernel)(dst, a);
      break;
    default:
      return common::make_status(LOOM_STATUS_INTERNAL, refusal_message(node, "no copy kernel"));
  }
  return launch_status(node, "copy kernel");
}

}  // namespace loom::cuda
