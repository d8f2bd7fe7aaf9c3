// Pairs of nodes the kernels run as one launch (issue 28's "fusion where the
// profile says so": a decode step is dozens of small kernels, each costing
// a few microseconds on its own). Plain C++, so the host test checks the
// rules. LOOM_CUDA_FUSE=0 turns fusion off (one kernel per node).
//
// RMS_NORM or NORM followed by a MUL of its result with a weight (the
// llama graph's norm × gamma): one row kernel computes the norm, writes it
// (other nodes may read it) and writes the product, rounding the norm to
// its type first, so both results equal the two kernels' bit for bit.
//
// A decode MUL_MAT followed by an ADD of its result and another tensor of
// the same shape (the residual after the attention output and the FFN's
// down projection): the GEMV's store writes the product and, beside it,
// the sum (float addition is commutative, so the sum equals the ADD
// kernel's bit for bit). The stream pairs them only when the MUL_MAT takes
// a GEMV (gemv_takes).
#pragma once

#include "loom/plugin.h"

namespace loom::cuda {

// The MUL node `next` when it can run fused with the norm node `norm`,
// else nullptr: `next` multiplies `norm`'s result (either source) by a
// tensor w of the same or a broadcast shape, its result has the norm's
// shape, w does not overlap the norm's result, and the product overlaps
// neither the norm's input nor its result unless it is that same tensor
// (in place).
const loom_tensor_t* fused_norm_mul(const loom_tensor_t* norm, const loom_tensor_t* next);

// Whether the fused kernel writes the norm's result too: false when the
// product overwrites it in place.
bool fused_writes_norm(const loom_tensor_t* norm, const loom_tensor_t* mul);

// The MUL's other source (the weight) of a fused pair.
const loom_tensor_t* fused_weight(const loom_tensor_t* norm, const loom_tensor_t* mul);

// The ADD node `next` when it can run in the store of the MUL_MAT `mm`'s
// GEMV, else nullptr: `next` adds `mm`'s result (either source, not both)
// and a tensor r of the same shape, all three f32; r does not overlap mm's
// result; the sum overlaps neither mm's result nor r unless it is that
// same tensor (in place); and the sum overlaps neither A nor, when the
// GEMV kernel reads B itself (`reads_b`: float A; a quantized A's GEMV reads
// B's 8-bit copy, made before it), B: blocks write the sum while others
// still read them.
const loom_tensor_t* fused_mul_mat_add(const loom_tensor_t* mm, const loom_tensor_t* next, bool reads_b = true);

// The ADD's other source (the residual) of a fused MUL_MAT + ADD.
const loom_tensor_t* fused_residual(const loom_tensor_t* mm, const loom_tensor_t* add);

// Products over one B in one GEMV grid (the Q, K and V projections, gate
// and up; gemv_grid.cuh's group): whether the MUL_MAT at graph position
// `later` can run at position `at`, beside the MUL_MAT there: the same B
// (one 2-D matrix of columns), A of the same type, 2-D and of the same K,
// and no compute node between them writes what `later` reads or reads or
// writes what `later` writes (its result may reuse memory those nodes
// still use). The stream also asks that both run the same GEMV.
bool gemv_peer(const loom_graph_t* graph, int32_t at, int32_t later);

// A ROPE followed by the SET_ROWS that stores its result into a cache (the
// llama graph's K: rotated, permuted to the cache's [head_dim, tokens,
// kv heads] order, written at the rows the batch's positions take), and
// optionally by a second SET_ROWS with the same row indices (V into its
// cache): one kernel rotates each pair, writes ROPE's result and the
// cache's elements, and copies the second SET_ROWS's elements.
struct RopeRows {
  const loom_tensor_t* q = nullptr;      // a ROPE run beside it (Q), or nullptr
  const loom_tensor_t* set_k = nullptr;  // the SET_ROWS of ROPE's result, or nullptr
  const loom_tensor_t* set_v = nullptr;  // the second SET_ROWS, or nullptr
  int perm[4] = {0, 1, 2, 3};            // SET_ROWS source dim d is ROPE's dim perm[d]
};

// Whether `set` stores `rope`'s result: ROPE's result f32 and dense; `set`'s
// rows are ROPE's result or a view of all of it whose dims are ROPE's in
// another order (rows along ROPE's dim 0, which the rotation pairs live
// in), into an F32 / F16 / BF16 destination that overlaps neither ROPE's
// input nor its result. Fills perm.
bool fused_rope_set_rows(const loom_tensor_t* rope, const loom_tensor_t* set, int perm[4]);

// Whether `second` (a SET_ROWS after `first`, the fused one) can run in the
// same kernel: the same index tensor, one element per row element (F32 /
// F16 / BF16 destination), F32 rows that nothing the kernel writes
// overlaps, a destination apart from every tensor the kernel reads or
// writes.
bool fused_second_set_rows(const loom_tensor_t* rope, const loom_tensor_t* first, const loom_tensor_t* second);

// Whether the ROPE `q` (before `rope` in the graph: the llama graph's Q, then
// K) can run in the same kernel as `rope` and the stores rr names: nothing
// one of them writes (q's result, rope's result, the caches) overlaps what
// another reads (q's and rope's inputs, positions and factors, the
// indices, V's rows) or writes, unless a ROPE runs in place.
bool fused_rope_beside(const loom_tensor_t* q, const loom_tensor_t* rope, const RopeRows& rr);

}  // namespace loom::cuda
