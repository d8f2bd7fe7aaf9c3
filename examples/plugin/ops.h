// The example device's kernels: plain loops over any strides (views,
// permutations and padded rows work), F32 only.
//   MUL_MAT  A [K, M, a2, a3] x B [K, N, b2, b3] -> [M, N, b2, b3], A broadcast
//   SOFT_MAX per row of src0 * scale + mask (optional F32 mask, broadcast)
//   ADD      src0 + src1, src1 broadcast to src0
//   SCALE    src0 * scale + bias
#pragma once

#include "loom/plugin.h"

namespace example {

// Whether compute() runs this node (op, types, shapes, params). Never fails.
bool supports(const loom_tensor_t* node);
// Runs a node supports() accepted; its memory was checked by the stream.
void compute(const loom_tensor_t* node);

}  // namespace example
