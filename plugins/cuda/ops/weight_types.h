// The weight types (MUL_MAT's A) the GEMV kernels are instantiated for, as
// one X-macro list: support.cpp builds the support table's mask from it and
// matmul.cu its per-type kernel switch, so the two cannot disagree.
#pragma once

#define LOOM_CUDA_WEIGHT_TYPES(X)                                                                            \
  X(LOOM_TYPE_F32) X(LOOM_TYPE_F16) X(LOOM_TYPE_BF16) X(LOOM_TYPE_Q8_0) X(LOOM_TYPE_Q4_0) X(LOOM_TYPE_Q4_1) \
      X(LOOM_TYPE_Q5_0) X(LOOM_TYPE_Q5_1) X(LOOM_TYPE_IQ4_NL) X(LOOM_TYPE_Q2_K) X(LOOM_TYPE_Q3_K)            \
          X(LOOM_TYPE_Q4_K) X(LOOM_TYPE_Q5_K) X(LOOM_TYPE_Q6_K) X(LOOM_TYPE_IQ4_XS)
