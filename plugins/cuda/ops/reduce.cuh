// The reductions' per-row steps and their combine functions, used by the
// block reductions of the kernels (each thread folds a strided part of the
// row, then partial results combine pairwise in a tree): RMS_NORM and NORM
// (sums, then the scale), SUM_ROWS (sums), ARGMAX (value with the first
// index on ties) and SOFT_MAX (the online max / sum pair).
#pragma once

#include "hd.cuh"

namespace loom::cuda {

// 1 / sqrt(sum_sq / n + eps): RMS_NORM's (and NORM's, with squared
// deviations) factor from the row's combined sum.
LOOM_HD float norm_scale(float sum_sq, int64_t n, float eps) {
  return 1.0f / sqrtf(sum_sq / static_cast<float>(n) + eps);
}

// ARGMAX's partial result: the largest value seen and its index (first on
// ties, so the smaller index wins when values are equal).
struct ArgMax {
  float value;
  int32_t index;
};
LOOM_HD ArgMax argmax_init() { return {-INFINITY, -1}; }
LOOM_HD ArgMax argmax_step(ArgMax a, float v, int32_t i) {
  if (a.index < 0 || v > a.value) return {v, i};
  return a;
}
LOOM_HD ArgMax argmax_combine(ArgMax a, ArgMax b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

// SOFT_MAX's online pair: the running max m and sum s of exp(x - m).
// A row that is -inf everywhere keeps m = -inf, s = 0 (its result is zeros).
struct MaxSum {
  float m;
  float s;
};
LOOM_HD MaxSum maxsum_init() { return {-INFINITY, 0.0f}; }
LOOM_HD MaxSum maxsum_step(MaxSum a, float x) {
  if (x == -INFINITY) return a;
  if (x > a.m) return {x, a.s * expf(a.m - x) + 1.0f};
  return {a.m, a.s + expf(x - a.m)};
}
LOOM_HD MaxSum maxsum_combine(MaxSum a, MaxSum b) {
  if (a.m == -INFINITY) return b;
  if (b.m == -INFINITY) return a;
  const float m = fmaxf(a.m, b.m);
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}
// The result of one element once the row's pair is final.
LOOM_HD float softmax_value(MaxSum r, float x) {
  if (r.m == -INFINITY || r.s == 0.0f) return 0.0f;
  return expf(x - r.m) / r.s;
}

}  // namespace loom::cuda
