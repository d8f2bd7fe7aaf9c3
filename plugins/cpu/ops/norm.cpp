// RMS_NORM and NORM per row (ne[0]); sums in double. eps is f32 param 0.
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/ops.h"

namespace loom::cpu {

void kernel_norm(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  float eps;
  std::memcpy(&eps, &dst->op_params[0], 4);
  const int64_t n = a->ne[0];
  int64_t r0, r1;
  common::split_range(nrows(dst), ith, nth, &r0, &r1);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(dst, r, &i1, &i2, &i3);
    load_row(a, i1, i2, i3, x.data());
    double mean = 0.0;
    if (dst->op == LOOM_OP_NORM) {
      for (float v : x) mean += v;
      mean /= static_cast<double>(n);
    }
    double sq = 0.0;
    for (float v : x) sq += (v - mean) * (v - mean);
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(n) + static_cast<double>(eps));
    for (float& v : x) v = static_cast<float>((v - mean) * inv);
    store_row(dst, i1, i2, i3, x.data());
  }
}

}  // namespace loom::cpu
