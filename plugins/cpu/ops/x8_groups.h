// What the kernels over repacked weights (groups of kWeightGroupRows rows,
// weight_layout.h) share: how the groups are claimed by the threads and how
// one group's 8 results of a column are stored (matmul_x8, matmul_kquant_x8).
// Include only in code built with AVX2 + FMA.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "ops/avx.h"
#include "ops/ops.h"
#include "weight_layout.h"

namespace loom::cpu {

// Chunks per thread: each thread takes its own share first
// (Exec::claim_chunk), a contiguous stream of weights the hardware
// prefetcher follows, and the same rows every step; 4 per thread let a
// thread that starts late or runs slow leave up to 3/4 of its share to the
// others. Chunks handed out in arrival order (next_chunk) split the streams:
// chunks of 4 groups halved decode on a 2-core Zen 4, and 2 chunks a thread
// in arrival order gave s768-q4_0 tg64 701 t/s against 754 now (medians of
// 8 alternations).
constexpr int64_t kGroupChunksPerThread = 4;

// fn(begin, end) for every chunk [begin, end) of items (groups of rows, or
// pairs of them) that slot ith of nth claims: its own share of the chunks
// first (inside ex.run()).
template <typename Fn>
void for_each_chunk(int64_t items, Exec& ex, int ith, int nth, Fn&& fn) {
  const int64_t chunks = std::min(items, kGroupChunksPerThread * nth);
  for (int64_t c = ex.claim_chunk(ith, nth, chunks); c >= 0; c = ex.claim_chunk(ith, nth, chunks)) {
    fn(items * c / chunks, items * (c + 1) / chunks);
  }
}

// fn(i) for every item i of the chunks this slot claims.
template <typename Fn>
void for_each_item(int64_t items, Exec& ex, int ith, int nth, Fn&& fn) {
  for_each_chunk(items, ex, ith, nth, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

// fn(g) for every group g of `rows` rows of A.
template <typename Fn>
void for_each_group(int64_t rows, Exec& ex, int ith, int nth, Fn&& fn) {
  for_each_item(rows / kWeightGroupRows, ex, ith, nth, fn);
}

// Columns [n0, n0 + kPass * k) in passes of kPass, then the rest (fewer
// than kPass, kPass <= 4) in one pass: pass(std::integral_constant<int, NC>,
// n) runs columns [n, n + NC) of one group (or pair). One pass unpacks each
// superblock of A once for all its columns: the rest taken a column at a
// time unpacked it again per column, and a 2-stream server step (2 columns)
// ran 1.3x slower than a 4-stream one (Q4_0, K 768 x M 2048, in cache, on a
// Zen 5).
template <int kPass, typename Pass>
void column_passes(int64_t n0, int64_t n_len, Pass&& pass) {
  static_assert(kPass >= 1 && kPass <= 4, "the rest is at most 3 columns");
  int64_t n = n0;
  for (; n + kPass <= n_len; n += kPass) pass(std::integral_constant<int, kPass>{}, n);
  switch (n_len - n) {
    case 3:
      if constexpr (kPass > 3) pass(std::integral_constant<int, 3>{}, n);
      break;
    case 2:
      if constexpr (kPass > 2) pass(std::integral_constant<int, 2>{}, n);
      break;
    case 1:
      if constexpr (kPass > 1) pass(std::integral_constant<int, 1>{}, n);
      break;
    default: break;
  }
}

// How far ahead of the superblock being read the decode kernels ask for
// A's bytes (prefetch_ahead). The hardware prefetcher alone left a 2-core
// Zen 5 decode of s768-q4_0 waiting on memory: tg64 764-870 t/s without,
// 824-911 with 4 KiB (alternated, 3 rounds each); 512 bytes ahead was worse
// than none (670-696), too close to hide anything and still paid for.
constexpr size_t kPrefetchAhead = 4096;

// Prefetch [p, p + kBytes) + kPrefetchAhead, a prefetch per 64 bytes (a
// line may be asked for twice where ranges meet: cheaper than the
// arithmetic to avoid it).
template <size_t kBytes, size_t kAhead = kPrefetchAhead>
inline void prefetch_ahead(const uint8_t* p) {
  for (size_t o = 0; o < kBytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p) + kAhead + o, _MM_HINT_T0);
}

#if defined(__AVX512F__)
// Two groups side by side in one zmm (the pair kernels of matmul_x8 and
// matmul_kquant_x8, on full-width AVX-512). Masked forms: GCC 12's unmasked
// 512-bit intrinsics start from an "undefined" register and warn
// (-Wmaybe-uninitialized).
inline __m512i join(__m256i lo, __m256i hi) {
  return _mm512_mask_broadcast_i64x4(_mm512_maskz_broadcast_i64x4(0x0F, lo), 0xF0, hi);
}

// How far ahead of its reads a pair kernel asks for A: 8-32 KiB measured
// alike within the noise on a Zen 5, 4 KiB 10-20% slower at 4 columns,
// none 3x slower (the hardware prefetcher does not follow two interleaved
// streams).
constexpr int64_t kPairAhead = 24 * 1024;

// Superblock i (of n, kBytes each) of groups g0 and g1 = g0 + n kBytes is
// being read: ask for both streams kPairAhead bytes ahead in read order,
// past the groups' end into the next pair's.
template <size_t kBytes>
inline void prefetch_pair(const uint8_t* g0, const uint8_t* g1, int64_t i, int64_t n) {
  const int64_t j = i + std::max<int64_t>(1, kPairAhead / static_cast<int64_t>(2 * kBytes));
  const uint8_t* p0 = (j < n ? g0 : g1) + static_cast<size_t>(j) * kBytes;
  for (size_t o = 0; o < kBytes; o += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p0) + o, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p0 + (g1 - g0)) + o, _MM_HINT_T0);
  }
}
#endif

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
