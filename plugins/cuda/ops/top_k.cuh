// TOP_K's order and its block selection step, shared by the kernel
// (top_k.cu) and the host test: the k results of a row are picked one at a
// time, each the best element that comes after the previous pick in a total
// order (larger first; equal values: lower index first; NaN after every
// number, NaNs by index), so no element needs marking. Each pick is a
// strided fold over the row and the halving tree of launch.cuh.
#pragma once

#include "hd.cuh"

namespace loom::cuda {

// Whether value x at index i comes before value y at index j.
LOOM_HD bool topk_before(float x, int64_t i, float y, int64_t j) {
  const bool xn = x != x, yn = y != y;
  if (xn != yn) return yn;
  if (!xn && x != y) return x > y;
  return i < j;
}

// A candidate pick: value and index (index < 0: none yet).
struct TopKPick {
  float value;
  int32_t index;
};
LOOM_HD TopKPick topk_none() { return {0.0f, -1}; }
// Fold element (v, i) into p, skipping elements at or before `prev`.
LOOM_HD TopKPick topk_step(TopKPick p, float v, int32_t i, TopKPick prev) {
  if (prev.index >= 0 && !topk_before(prev.value, prev.index, v, i)) return p;
  if (p.index < 0 || topk_before(v, i, p.value, p.index)) return {v, i};
  return p;
}
LOOM_HD TopKPick topk_combine(TopKPick a, TopKPick b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  return topk_before(b.value, b.index, a.value, a.index) ? b : a;
}

}  // namespace loom::cuda
