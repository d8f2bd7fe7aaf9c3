// ARGMAX (first index of the largest value; NaN never wins), SUM_ROWS
// (double accumulation) and TOP_K (ABI 1.5).
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/ops.h"

namespace loom::cpu {

void kernel_argmax(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  int64_t r0, r1;
  common::split_range(nrows(a), ith, nth, &r0, &r1);
  std::vector<float> x(static_cast<size_t>(a->ne[0]));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(a, r, &i1, &i2, &i3);
    load_row(a, i1, i2, i3, x.data());
    int32_t best = 0;
    for (int64_t i = 1; i < a->ne[0]; ++i) {
      // Strictly greater keeps the first on ties; a NaN at 0 is replaced.
      if (x[i] > x[best] || (x[best] != x[best] && x[i] == x[i])) best = static_cast<int32_t>(i);
    }
    std::memcpy(elem_ptr(dst, i1, i2, i3, 0), &best, 4);
  }
}

void kernel_sum_rows(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  int64_t r0, r1;
  common::split_range(nrows(a), ith, nth, &r0, &r1);
  std::vector<float> x(static_cast<size_t>(a->ne[0]));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(a, r, &i1, &i2, &i3);
    load_row(a, i1, i2, i3, x.data());
    double sum = 0.0;
    for (float v : x) sum += v;
    const float out = static_cast<float>(sum);
    store_row(dst, i1, i2, i3, &out);
  }
}

// TOP_K: a partial selection per row. Order: larger first, NaN after every
// number, equal values by index (the order a stable sort gives).
void kernel_top_k(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  const int64_t k = dst->ne[0];
  int64_t r0, r1;
  common::split_range(nrows(a), ith, nth, &r0, &r1);
  std::vector<float> x(static_cast<size_t>(a->ne[0]));
  std::vector<int32_t> idx(static_cast<size_t>(a->ne[0]));
  const auto before = [&x](int32_t i, int32_t j) {
    const float vi = x[static_cast<size_t>(i)], vj = x[static_cast<size_t>(j)];
    if (vi != vi) return vj != vj && i < j;  // NaN: only before a later NaN
    if (vj != vj) return true;
    return vi > vj || (vi == vj && i < j);
  };
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(a, r, &i1, &i2, &i3);
    load_row(a, i1, i2, i3, x.data());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int32_t>(i);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), before);
    for (int64_t j = 0; j < k; ++j) std::memcpy(elem_ptr(dst, j, i1, i2, i3), &idx[static_cast<size_t>(j)], 4);
  }
}

}  // namespace loom::cpu
