// The sparse products' (ABI 1.3) per-thread arithmetic, shared by sparse.cu
// and the host test that replays it: which scores are active, and the
// column-sparse product's partial sums. Entry (j, n) of the scores S is
// active iff S[j, n] > threshold (a NaN score is not, as in plugin.h).
//
// MUL_MAT_SPARSE_COLS runs a block of kColsTile x kColsGroups threads per
// (tile of kColsTile outputs, column n): thread (x, g) sums, over the active
// neurons k = g, g + kColsGroups, ... in increasing order, H[k, n] times
// output m = tile + x of neuron k's row of W (only active rows are read, a
// warp reading kColsTile consecutive outputs of one row); the kColsGroups
// partial sums of an output then add in order g = 0, 1, ... (cols_combine).
#pragma once

#include "dequant.cuh"
#include "hd.cuh"
#include "tensor.cuh"

namespace loom::cuda {

constexpr int kColsTile = 32;
constexpr int kColsGroups = 8;

// Whether score (j, n) of s [J, N] (F32, F16 or BF16, any strides) is
// above threshold t.
LOOM_HD bool score_active(const TArg& s, int64_t j, int64_t n, float t) {
  return load_elem(s.type, s.data + j * s.nb[0] + n * s.nb[1]) > t;
}

// Element k of column n of the f32 activations h [K, N].
LOOM_HD float h_elem(const TArg& h, int64_t k, int64_t n) {
  return *reinterpret_cast<const float*>(h.data + k * h.nb[0] + n * h.nb[1]);
}

// Group g's partial sum of output m of column n: W [M, K] neuron-major (row
// k = neuron k's M outputs), h [K, N], scores s [K, N]. `type` is W's type
// (a constant in the kernels, so the element decoder is resolved at compile
// time).
LOOM_HD float cols_partial(int type, const TArg& w, const TArg& h, const TArg& s, float t, int64_t m, int64_t n,
                           int g) {
  float acc = 0.0f;
  for (int64_t k = g; k < w.ne[1]; k += kColsGroups) {
    if (!score_active(s, k, n, t)) continue;
    acc += h_elem(h, k, n) * row_elem(type, w.data + k * w.nb[1], m, w.nb[0]);
  }
  return acc;
}

// The output from the groups' partial sums p[0 .. kColsGroups).
LOOM_HD float cols_combine(const float* p) {
  float v = 0.0f;
  for (int g = 0; g < kColsGroups; ++g) v += p[g];
  return v;
}

}  // namespace loom::cuda
