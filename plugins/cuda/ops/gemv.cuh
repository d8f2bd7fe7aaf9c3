// The exact GEMV's per-lane work (matmul.cu's fallback for layouts the
// decode GEMVs do not read), shared by the kernel and the host test: lane
// `lane` of a warp takes blocks lane, lane + 32, ... of one row of A
// (block_dot against the matching stretch of x); the 32 lane sums then
// combine in the halving tree (launch.cuh).
#pragma once

#include "dequant.cuh"
#include "launch.cuh"

namespace loom::cuda {

// arow: the row's first byte; nb0: A's element stride for plain types.
LOOM_HD float gemv_lane_sum(int type, const uint8_t* arow, int64_t nb0, int64_t k, const float* x, int lane) {
  const BlockShape bs = block_shape(type);
  const int64_t step = bs.elems == 1 ? nb0 : bs.bytes;
  const int64_t nblocks = k / bs.elems;
  float acc = 0.0f;
  for (int64_t b = lane; b < nblocks; b += kWarp) acc += block_dot(type, arow + b * step, x + b * bs.elems);
  return acc;
}

}  // namespace loom::cuda
