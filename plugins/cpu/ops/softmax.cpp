// SOFT_MAX per row: softmax(x * scale + mask). The mask row is (i1, i2 % m2,
// i3 % m3) (ggml's broadcast). A row that is -inf everywhere gives zeros
// rather than NaN. Sums in double.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/ops.h"

namespace loom::cpu {

void kernel_soft_max(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* mask = dst->src[1];
  float scale;
  std::memcpy(&scale, &dst->op_params[0], 4);
  const int64_t n = a->ne[0];
  int64_t r0, r1;
  common::split_range(nrows(dst), ith, nth, &r0, &r1);
  std::vector<float> x(static_cast<size_t>(n));
  std::vector<float> m(mask != nullptr ? static_cast<size_t>(n) : 0);
  std::vector<double> e(static_cast<size_t>(n));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(dst, r, &i1, &i2, &i3);
    load_row(a, i1, i2, i3, x.data());
    if (mask != nullptr) load_row(mask, i1, i2 % mask->ne[2], i3 % mask->ne[3], m.data());
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      x[i] = x[i] * scale + (mask != nullptr ? m[i] : 0.0f);
      if (x[i] > max) max = x[i];
    }
    if (std::isinf(max) && max < 0) {
      for (float& v : x) v = 0.0f;  // fully masked row
    } else {
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        e[i] = std::exp(static_cast<double>(x[i]) - max);
        sum += e[i];
      }
      for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(e[i] / sum);
    }
    store_row(dst, i1, i2, i3, x.data());
  }
}

}  // namespace loom::cpu
