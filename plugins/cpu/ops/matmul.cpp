// MUL_MAT: dst[m, n, i2, i3] = sum_k A[k, m, i2/r2, i3/r3] * B[k, n, i2, i3].
// Work is split over (m, i2, i3): each row of A is dequantized once into a
// f32 scratch and dotted with every column n of B; accumulation in double.
#include <cstring>
#include <vector>

#include "ops/ops.h"

namespace loom::cpu {

void kernel_mul_mat(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  const int64_t k_len = a->ne[0];
  const int64_t m_len = a->ne[1];
  const int64_t n_len = b->ne[1];
  const int64_t r2 = b->ne[2] / a->ne[2];
  const int64_t r3 = b->ne[3] / a->ne[3];
  const int64_t bs0 = static_cast<int64_t>(b->nb[0]);
  int64_t w0, w1;
  common::split_range(m_len * b->ne[2] * b->ne[3], ith, nth, &w0, &w1);
  std::vector<float> arow(static_cast<size_t>(k_len));
  for (int64_t w = w0; w < w1; ++w) {
    const int64_t m = w % m_len;
    const int64_t i2 = (w / m_len) % b->ne[2];
    const int64_t i3 = w / (m_len * b->ne[2]);
    load_row(a, m, i2 / r2, i3 / r3, arow.data());
    for (int64_t n = 0; n < n_len; ++n) {
      const char* brow = row_ptr(b, n, i2, i3);
      double sum = 0.0;
      for (int64_t k = 0; k < k_len; ++k) {
        float bv;
        std::memcpy(&bv, brow + k * bs0, 4);
        sum += static_cast<double>(arow[k]) * bv;
      }
      const float out = static_cast<float>(sum);
      std::memcpy(elem_ptr(dst, m, n, i2, i3), &out, 4);
    }
  }
}

}  // namespace loom::cpu
