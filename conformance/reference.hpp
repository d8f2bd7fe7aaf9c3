// The conformance suite's reference side: type facts and decoders written
// from plugin.h independently of the runtime and the plugins, host mirrors
// of tensors and views, the tolerance rule, and element-wise comparison
// with readable failure messages (reported through check.hpp).
//
// Every case builds tensors in its fixture's Context (harness.hpp), runs one
// graph on the device under test, reads the outputs back and compares them
// with a double-precision reference computed here from the decoded inputs.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/types.hpp"
#include "conformance/check.hpp"

namespace loom::conformance {

using Shape = std::array<int64_t, 4>;
using Strides = std::array<size_t, 4>;

std::string shape_str(const Shape& ne);
std::string type_str(loom_type_t t);
inline int64_t nelements(const Shape& ne) { return ne[0] * ne[1] * ne[2] * ne[3]; }
// Row-major flat index (i0 fastest).
inline int64_t flat(const Shape& ne, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return ((i3 * ne[2] + i2) * ne[1] + i1) * ne[0] + i0;
}
// f(i0, i1, i2, i3) over every index of ne, row-major order.
template <typename F>
void for_each_index(const Shape& ne, F&& f) {
  for (int64_t i3 = 0; i3 < ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < ne[1]; ++i1)
        for (int64_t i0 = 0; i0 < ne[0]; ++i0) f(i0, i1, i2, i3);
}

// ------------------------------------------------------------ type facts
// Written here from plugin.h, not taken from the runtime.
int64_t block_elems(loom_type_t t);  // 32 for Q8_0/Q4_0 and the 32-element types, 256 for K-quants and IQ4_XS, else 1
size_t block_bytes(loom_type_t t);   // bytes per block (or element)
// The ABI 1.2 weight types (Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K..Q6_K) and IQ4_XS
// (ABI 1.4): read by
// the op set, never written; inputs of these types are random blocks
// (weight_blocks.cpp).
bool is_weight_quant(loom_type_t t);
inline bool is_quant(loom_type_t t) { return t == LOOM_TYPE_Q8_0 || t == LOOM_TYPE_Q4_0 || is_weight_quant(t); }
inline size_t row_bytes(loom_type_t t, int64_t n) { return n / block_elems(t) * block_bytes(t); }
Strides dense_strides(loom_type_t t, const Shape& ne);

// ------------------------------------------------------ independent decode
double f16_to_double(uint16_t bits);
double bf16_to_double(uint16_t bits);
// n dense elements of type t at p (n a multiple of the block size).
std::vector<double> decode(loom_type_t t, const uint8_t* p, int64_t n);
// The same for a weight type, element by element from plugin.h's layouts.
std::vector<double> decode_weight_blocks(loom_type_t t, const uint8_t* p, int64_t n);
// nblocks random blocks of weight type t: random quant and scale bytes,
// fp16 scales (d, dmin / m) of random sign and a magnitude that keeps the
// elements within a few units.
void random_weight_blocks(loom_type_t t, int64_t nblocks, std::mt19937& rng, uint8_t* out);

// ---------------------------------------------------------- tolerances
// Unit roundoff (half an ulp of 1.0): f32 2^-24, f16 2^-11, bf16 2^-8; 0 for
// integer types.
double unit_roundoff(loom_type_t t);
// Smallest absolute error worth reporting for a result of type t (half the
// subnormal step for f16; tiny otherwise).
double abs_floor(loom_type_t t);
// THE tolerance rule. A result of type `out` computed in f32 arithmetic from
// `n_terms` terms whose absolute values add up to `mag` (mag >= |ref|), then
// rounded once to `out`:
//   tol = 4 * (u(out) * |ref| + u(f32) * sqrt(n_terms) * mag) + floor(out)
// The same rule holds for every device under test: the Vulkan kernels sum
// in f32 in a parallel order (tree or strided partial sums, fma) and use
// the GPU's exp/sin/cos, and stay within it on lavapipe (checked with the
// whole suite, also on the f32-only fallback paths), so no device gets a
// looser rule.
double tol_for(loom_type_t out, double ref, double mag, int64_t n_terms);
// One rounding of the exact value x to type t (conversions): u(t) * |x|
// plus floor(t) (subnormal results round to a fixed step).
double conv_tol(loom_type_t t, double x);

// ------------------------------------------------------ host mirrors
// Dense bytes of a base tensor plus their decoded values.
struct HostBase {
  loom_type_t type = LOOM_TYPE_F32;
  Shape ne{1, 1, 1, 1};
  std::vector<uint8_t> bytes;
  std::vector<double> values;  // decoded, row-major
};

// A (possibly strided) view of a HostBase; the view math is done here,
// independently of the runtime's.
struct HostView {
  std::shared_ptr<HostBase> base;
  loom_type_t type = LOOM_TYPE_F32;
  Shape ne{1, 1, 1, 1};
  Strides nb{};
  size_t offset = 0;

  int64_t nelements() const { return conformance::nelements(ne); }
  // Index into base->values of logical element (i0, i1, i2, i3).
  int64_t base_index(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const;
  double at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const {
    return base->values[base_index(i0, i1, i2, i3)];
  }
  std::vector<double> values() const;  // logical row-major order
};
HostView host_permute(const HostView& v, int a0, int a1, int a2, int a3);
HostView host_transpose(const HostView& v);
HostView host_view(const HostView& v, const Shape& ne, const std::array<size_t, 3>& nb123,
                   size_t offset);

// A device tensor with its host mirror.
struct Operand {
  Tensor* t = nullptr;
  HostView h;
};

// ------------------------------------------------------ quantization
// Checks one quantized block (Q8_0 or Q4_0) against the 32 exact values it
// was made from. The scale must cover the block's largest magnitude without
// wasting range (within the f16 rounding of d), and every element must be
// the nearest grid point d*q up to the f16 rounding of d:
//   |x - x'| <= dist(x, grid) + |d| * qmax * 2^-10   (dist <= |d|/2 in range)
// Returns "" when fine, else a description.
std::string check_quant_block(loom_type_t t, const double* x, const uint8_t* block);

// ------------------------------------------------------ status helpers
// The value of a StatusOr, or throw (the case runner reports the exception
// as a failure of the case with the status text).
template <typename T>
T unwrap(StatusOr<T> r, const char* what = "") {
  if (!r.ok()) throw std::runtime_error(std::string(what) + ": " + r.status().to_string());
  return std::move(r).value();
}

// ------------------------------------------------------ comparison
// Compares got with ref element by element: |got - ref| <= tol[i] (equal
// infinities match, NaN never does). One failure per call listing the count
// and the first few mismatches with their 4-d index in `ne`.
void expect_close(const std::vector<double>& got, const std::vector<double>& ref,
                  const std::vector<double>& tol, const Shape& ne, const std::string& what);
inline void expect_equal(const std::vector<double>& got, const std::vector<double>& ref,
                         const Shape& ne, const std::string& what) {
  expect_close(got, ref, std::vector<double>(ref.size(), 0.0), ne, what);
}
// The number of elements outside tolerance (no failure recorded).
int64_t count_mismatches(const std::vector<double>& got, const std::vector<double>& ref,
                         const std::vector<double>& tol);

}  // namespace loom::conformance
