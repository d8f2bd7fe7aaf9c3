// The GEMVs of the K-quants (Q2_K .. Q6_K) and IQ4_XS (256-element super-blocks, B in
// 8-bit blocks of 256) on gemv_kernel.cuh: a warp covers one super-block
// per step (8 units of 32, 4 lanes each).
#include "gemv_kernel.cuh"

namespace loom::cuda {

#define LOOM_KQUANT_GEMV(T)                                                                               \
  template <>                                                                                             \
  loom_status_t* launch_gemv_typed<T>(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8* act) { \
    return launch_quant_kernels<T>(ctx, node, *act);                                                      \
  }
LOOM_KQUANT_GEMV(LOOM_TYPE_Q2_K)
LOOM_KQUANT_GEMV(LOOM_TYPE_Q3_K)
LOOM_KQUANT_GEMV(LOOM_TYPE_Q4_K)
LOOM_KQUANT_GEMV(LOOM_TYPE_Q5_K)
LOOM_KQUANT_GEMV(LOOM_TYPE_Q6_K)
LOOM_KQUANT_GEMV(LOOM_TYPE_IQ4_XS)

}  // namespace loom::cuda
