// RMS_NORM and NORM per row (ne[0]); sums in double (8 partial sums in
// vector lanes, added in a fixed order: the result depends only on the row).
// eps is f32 param 0.
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/ops.h"

namespace loom::cpu {

namespace {

typedef double double4 __attribute__((vector_size(32)));
typedef float float4 __attribute__((vector_size(16)));

// sum_i (x[i] - mean)^2, or sum_i x[i] with square = false, in double.
double row_sum(const float* x, int64_t n, double mean, bool square) {
  double4 acc0 = {}, acc1 = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    float4 lo, hi;
    std::memcpy(&lo, x + i, sizeof lo);
    std::memcpy(&hi, x + i + 4, sizeof hi);
    double4 a = __builtin_convertvector(lo, double4) - mean;
    double4 b = __builtin_convertvector(hi, double4) - mean;
    acc0 += square ? a * a : a;
    acc1 += square ? b * b : b;
  }
  const double4 acc = acc0 + acc1;
  double s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    s += square ? d * d : d;
  }
  return s;
}

}  // namespace

void kernel_norm(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  float eps;
  std::memcpy(&eps, &dst->op_params[0], 4);
  const int64_t n = a->ne[0];
  int64_t r0, r1;
  common::split_range(nrows(dst), ith, nth, &r0, &r1);
  thread_local std::vector<float> x;
  x.resize(static_cast<size_t>(n));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(dst, r, &i1, &i2, &i3);
    load_row(a, i1, i2, i3, x.data());
    const double mean = dst->op == LOOM_OP_NORM ? row_sum(x.data(), n, 0.0, false) / static_cast<double>(n) : 0.0;
    const double sq = row_sum(x.data(), n, mean, true);
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(n) + static_cast<double>(eps));
    for (float& v : x) v = static_cast<float>((v - mean) * inv);
    store_row(dst, i1, i2, i3, x.data());
  }
}

}  // namespace loom::cpu
