// Portable f32 vector helpers for CPU kernels: GCC/Clang vector extensions,
// so loops vectorize at any -O level on any ISA (SSE / NEON 4 lanes in the
// baseline build, AVX 8 lanes in the cpu-avx2 variant). Header-only, in an
// unnamed namespace: each kernel file gets the helpers of the ISA it is
// compiled for. (matmul.cpp predates this header and keeps its own copy of
// vf / loadv / dot_f32.)
#pragma once

#include <cstdint>
#include <cstring>

namespace loom::cpu {
namespace {

#ifdef __AVX__
constexpr int kSimdLanes = 8;
typedef float simd_f __attribute__((vector_size(32)));
#else
constexpr int kSimdLanes = 4;
typedef float simd_f __attribute__((vector_size(16)));
#endif

inline simd_f simd_load(const float* p) {
  simd_f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void simd_store(float* p, simd_f v) { std::memcpy(p, &v, sizeof v); }

// sum_k a[k] * b[k] in f32: two vector accumulators, then the lanes, then
// the tail. The summation order depends only on n (deterministic).
inline float simd_dot(const float* a, const float* b, int64_t n) {
  simd_f acc0 = {}, acc1 = {};
  int64_t k = 0;
  for (; k + 2 * kSimdLanes <= n; k += 2 * kSimdLanes) {
    acc0 += simd_load(a + k) * simd_load(b + k);
    acc1 += simd_load(a + k + kSimdLanes) * simd_load(b + k + kSimdLanes);
  }
  for (; k + kSimdLanes <= n; k += kSimdLanes) acc0 += simd_load(a + k) * simd_load(b + k);
  const simd_f acc = acc0 + acc1;
  float s = 0.0f;
  for (int j = 0; j < kSimdLanes; ++j) s += acc[j];
  for (; k < n; ++k) s += a[k] * b[k];
  return s;
}

// y[k] += a * x[k] for k < n.
inline void simd_axpy(float* y, float a, const float* x, int64_t n) {
  int64_t k = 0;
  for (; k + kSimdLanes <= n; k += kSimdLanes) simd_store(y + k, simd_load(y + k) + a * simd_load(x + k));
  for (; k < n; ++k) y[k] += a * x[k];
}

// y[k] *= c for k < n.
inline void simd_scale(float* y, float c, int64_t n) {
  int64_t k = 0;
  for (; k + kSimdLanes <= n; k += kSimdLanes) simd_store(y + k, simd_load(y + k) * c);
  for (; k < n; ++k) y[k] *= c;
}

}  // namespace
}  // namespace loom::cpu
