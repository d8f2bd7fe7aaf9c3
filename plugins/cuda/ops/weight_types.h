// The weight types (MUL_MAT's A) the GEMV kernels are instantiated for, as
// one X-macro list: support.cpp builds the support table's mask from it and
// matmul.cu its per-type kernel switch, so the two cannot disagree.
#pragma once

#include <type_traits>

#define LOOM_CUDA_WEIGHT_TYPES(X)                                                                            \
  X(LOOM_TYPE_F32) X(LOOM_TYPE_F16) X(LOOM_TYPE_BF16) X(LOOM_TYPE_Q8_0) X(LOOM_TYPE_Q4_0) X(LOOM_TYPE_Q4_1) \
      X(LOOM_TYPE_Q5_0) X(LOOM_TYPE_Q5_1) X(LOOM_TYPE_IQ4_NL) X(LOOM_TYPE_Q2_K) X(LOOM_TYPE_Q3_K)            \
          X(LOOM_TYPE_Q4_K) X(LOOM_TYPE_Q5_K) X(LOOM_TYPE_Q6_K) X(LOOM_TYPE_IQ4_XS)

namespace loom::cuda {

// fn(std::integral_constant<int, T>{}) for the weight type T equal to
// `type` (the per-type kernel switch of each launcher), unknown() for any
// other type.
template <typename Fn, typename Unknown>
auto with_weight_type(int type, Fn&& fn, Unknown&& unknown) {
  switch (type) {
#define LOOM_CASE(T) \
  case T:            \
    return fn(std::integral_constant<int, T>{});
    LOOM_CUDA_WEIGHT_TYPES(LOOM_CASE)
#undef LOOM_CASE
    default:
      return unknown();
  }
}

}  // namespace loom::cuda
