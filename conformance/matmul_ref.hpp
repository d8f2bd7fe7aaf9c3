// The reference side of products whose sources a device may round: B to
// 8-bit blocks (the cpu plugin's int8 paths) in MUL_MAT (matmul_cases.cpp),
// MUL_MAT_ID (moe_cases.cpp) and the sparse products of ABI 1.3
// (sparse_cases.cpp); A and B to F16 in a MUL_MAT of more than 8 columns
// (tensor-core GEMMs: docs/plugin-abi.md, MUL_MAT).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "conformance/harness.hpp"
#include "conformance/reference.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::conformance {

// Every weight type MUL_MAT's A takes (and so the products built on it:
// the sparse products, MUL_MAT_ID).
inline constexpr loom_type_t kMulMatWeightTypes[] = {
    LOOM_TYPE_F32,  LOOM_TYPE_F16,    LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0,
    LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0,   LOOM_TYPE_Q5_1, LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q2_K,
    LOOM_TYPE_Q3_K, LOOM_TYPE_Q4_K,   LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_IQ4_XS};

// Whether a device may round B to 8-bit blocks for A of type ta (ActQ8,
// harness.hpp): A quantized and B's rows dense f32.
bool may_round_b(loom_type_t ta, const Tensor* b);
// The block of B rounded together for A of type ta: 256 for the K-quants,
// else 32.
int64_t act_block(loom_type_t ta);
// B column (n, i2, i3) as the int8 path sees it: per block of `block` along
// k, d = max|b| / 127, q = nearbyint(b * (1 / d)), b' = d * q.
std::vector<double> q8_column(const HostView& b, int64_t n, int64_t i2, int64_t i3, int64_t block = 32);

// How the reference treats a product's sources: as given; B rounded to
// 8-bit blocks (q8_column); A and B each rounded to the nearest F16.
enum class MatRounding { kNone, kQ8B, kF16 };
// The fewest columns of B for which a device may round A and B to F16.
inline constexpr int64_t kF16InputsMinCols = 9;
// The references a result may match, in the order they are tried: kExact
// {kNone}; kRounded {kQ8B} where B may be rounded, else {kNone}; kEither
// {kNone, kQ8B where may_round_b, kF16 where n_cols >= kF16InputsMinCols}.
std::vector<MatRounding> mat_roundings(ActQ8 mode, bool may_round_b, int64_t n_cols);
// v as a float rounded to the nearest F16 (ties to even; past the largest
// finite F16 to +-inf, subnormals kept): the F16-inputs rule.
double f16_rounded(double v);
// B's column (n, i2, i3) under rounding r (block: act_block of A's type).
std::vector<double> b_column(const HostView& b, int64_t n, int64_t i2, int64_t i3, MatRounding r, int64_t block);
// A's element under rounding r.
inline double a_value(double v, MatRounding r) { return r == MatRounding::kF16 ? f16_rounded(v) : v; }
// Fills *ref and *tol with the reference under the first of `modes` that
// got matches (make(r, ref, tol) computes one), else under the first: the
// one a failure is reported against.
void pick_reference(const std::vector<MatRounding>& modes, const std::vector<double>& got,
                    const std::function<void(MatRounding, std::vector<double>*, std::vector<double>*)>& make,
                    std::vector<double>* ref, std::vector<double>* tol);

}  // namespace loom::conformance
