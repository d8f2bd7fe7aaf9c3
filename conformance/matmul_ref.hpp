// The reference side of products whose B a device may round to 8-bit
// blocks (the cpu plugin's int8 paths): MUL_MAT (matmul_cases.cpp) and the
// sparse products of ABI 1.3 (sparse_cases.cpp).
#pragma once

#include <cstdint>
#include <vector>

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

}  // namespace loom::conformance
