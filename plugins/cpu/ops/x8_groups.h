// What the kernels over repacked weights (groups of kWeightGroupRows rows,
// weight_layout.h) share: how the groups are claimed by the threads and how
// one group's 8 results of a column are stored (matmul_x8, matmul_kquant_x8).
// Include only in code built with AVX2 + FMA.
#pragma once

#include <algorithm>
#include <cstring>

#include "ops/avx.h"
#include "ops/ops.h"
#include "weight_layout.h"

namespace loom::cpu {

// Chunks claimed per thread: few and large, because each thread's chunk is
// a contiguous stream of weights the hardware prefetcher must follow
// (chunks of 4 groups, 32 rows, halved decode speed on a 2-core Zen 4);
// two per thread still lets a thread that starts late take less.
constexpr int64_t kGroupChunksPerThread = 2;

// fn(g) for every group g of `rows` rows of A, the groups claimed in
// contiguous chunks with ex.next_chunk() (inside ex.run()).
template <typename Fn>
void for_each_group(int64_t rows, Exec& ex, Fn&& fn) {
  const int64_t groups = rows / kWeightGroupRows;
  const int64_t chunks = kGroupChunksPerThread * ex.threads();
  const int64_t per = (groups + chunks - 1) / chunks;
  for (int64_t c = ex.next_chunk(); c * per < groups; c = ex.next_chunk()) {
    for (int64_t g = c * per; g < std::min(groups, (c + 1) * per); ++g) fn(g);
  }
}

// acc (rows m0 .. m0+7 of flat column n of dst; B's batches are more
// columns) into dst.
inline void store_group(const loom_tensor_t* dst, int64_t n, int64_t m0, __m256 acc) {
  int64_t i1, i2, i3;
  unravel_row(dst, n, &i1, &i2, &i3);
  if (dst->nb[0] == sizeof(float)) {
    _mm256_storeu_ps(reinterpret_cast<float*>(elem_ptr(dst, m0, i1, i2, i3)), acc);
    return;
  }
  alignas(32) float v[8];
  _mm256_store_ps(v, acc);
  for (int r = 0; r < 8; ++r) std::memcpy(elem_ptr(dst, m0 + r, i1, i2, i3), &v[r], 4);
}

}  // namespace loom::cpu
