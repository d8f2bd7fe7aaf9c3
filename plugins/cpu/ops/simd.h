// Portable f32 vector helpers for CPU kernels: GCC/Clang vector extensions,
// so loops vectorize at any -O level on any ISA (SSE / NEON 4 lanes in the
// baseline build, AVX 8 lanes in the x86-64 variants). Header-only, in an
// unnamed namespace: each kernel file gets the helpers of the ISA it is
// compiled for.
#pragma once

#include <cstdint>
#include <cstring>

namespace loom::cpu {
namespace {

#ifdef __AVX__
constexpr int kSimdLanes = 8;
typedef float simd_f __attribute__((vector_size(32)));
typedef int32_t simd_i __attribute__((vector_size(32)));
#else
constexpr int kSimdLanes = 4;
typedef float simd_f __attribute__((vector_size(16)));
typedef int32_t simd_i __attribute__((vector_size(16)));
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

// e^x per lane, |relative error| < 2e-7 (Cephes' expf: x = n ln2 + r with
// ln2 in two parts, a degree-6 polynomial for e^r, 2^n through the exponent
// bits); 0 below -87.3 (and for -inf), +inf above 88.7, NaN stays NaN.
inline simd_f simd_exp(simd_f x) {
  const simd_f hi = x > 88.72283f ? simd_f{} + __builtin_inff() : simd_f{};
  const simd_i under = x < -87.33654f;
  const simd_i over = x > 88.72283f;
  simd_f c = x;
  c = c < -87.33654f ? simd_f{} - 87.33654f : c;
  c = c > 88.72283f ? simd_f{} + 88.72283f : c;
  const simd_f fx = c * 1.44269504088896341f + 0.5f;
  simd_i n = __builtin_convertvector(fx, simd_i);
  n += __builtin_convertvector(n, simd_f) > fx;  // floor: a true comparison is -1
  const simd_f nf = __builtin_convertvector(n, simd_f);
  simd_f r = c - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  simd_f y = 1.9875691500e-4f * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * (r * r) + r + 1.0f;
  simd_i bits = (n + 127) << 23;
  simd_f pow2;
  std::memcpy(&pow2, &bits, sizeof pow2);
  simd_f e = y * pow2;
  e = under ? simd_f{} : e;
  e = over ? hi : e;
  return x != x ? x : e;
}

// max_k x[k] (-inf for n == 0): lanes, then across them.
inline float simd_max(const float* x, int64_t n) {
  const float ninf = -__builtin_inff();
  simd_f m = simd_f{} + ninf;
  int64_t k = 0;
  for (; k + kSimdLanes <= n; k += kSimdLanes) {
    const simd_f v = simd_load(x + k);
    m = v > m ? v : m;
  }
  float r = ninf;
  for (int j = 0; j < kSimdLanes; ++j) r = m[j] > r ? m[j] : r;
  for (; k < n; ++k) r = x[k] > r ? x[k] : r;
  return r;
}

// x[k] = e^(x[k] - m) for k < n, returning their sum (per lane in order,
// then the lanes: the order depends only on n).
inline float simd_exp_shifted_sum(float* x, float m, int64_t n) {
  simd_f acc = {};
  int64_t k = 0;
  for (; k + kSimdLanes <= n; k += kSimdLanes) {
    const simd_f e = simd_exp(simd_load(x + k) - m);
    simd_store(x + k, e);
    acc += e;
  }
  if (k < n) {
    simd_f t = {};
    std::memcpy(&t, x + k, static_cast<size_t>(n - k) * sizeof(float));
    t = simd_exp(t - m);
    std::memcpy(x + k, &t, static_cast<size_t>(n - k) * sizeof(float));
    for (int64_t j = 0; j < n - k; ++j) acc[j] += t[j];
  }
  float s = 0.0f;
  for (int j = 0; j < kSimdLanes; ++j) s += acc[j];
  return s;
}

// y[k] *= c for k < n.
inline void simd_scale(float* y, float c, int64_t n) {
  int64_t k = 0;
  for (; k + kSimdLanes <= n; k += kSimdLanes) simd_store(y + k, simd_load(y + k) * c);
  for (; k < n; ++k) y[k] *= c;
}

// y[k] = x[k] / c for k < n (a division per element, as the scalar loop).
inline void simd_div(float* y, const float* x, float c, int64_t n) {
  int64_t k = 0;
  for (; k + kSimdLanes <= n; k += kSimdLanes) simd_store(y + k, simd_load(x + k) / c);
  for (; k < n; ++k) y[k] = x[k] / c;
}

}  // namespace
}  // namespace loom::cpu
