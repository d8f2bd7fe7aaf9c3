// Which nodes the kernels run and which launcher runs them.
#include <string>

#include "common/glue.h"
#include "common/op_info.h"
#include "ops.h"

namespace loom::cuda {

namespace {
constexpr int64_t kAttnMaxDim = 4096;  // attention.cu's shared-memory layout
}

bool supports_node(const loom_tensor_t* n) {
  switch (n->op) {
    case LOOM_OP_MUL_MAT:
      // cuBLAS writes whole columns: dense result rows.
      return n->nb[0] == 4 && n->nb[1] % 4 == 0;
    case LOOM_OP_ATTENTION:
      // Tokens are the grid's y dimension (at most 65535).
      return n->src[0]->ne[0] <= kAttnMaxDim && n->src[2]->ne[0] <= kAttnMaxDim && n->src[0]->ne[2] <= 65535;
    case LOOM_OP_GET_ROWS:
    case LOOM_OP_ADD:
    case LOOM_OP_SUB:
    case LOOM_OP_MUL:
    case LOOM_OP_DIV:
    case LOOM_OP_SCALE:
    case LOOM_OP_RMS_NORM:
    case LOOM_OP_NORM:
    case LOOM_OP_ROPE:
    case LOOM_OP_SOFT_MAX:
    case LOOM_OP_CPY:
    case LOOM_OP_CONT:
    case LOOM_OP_SET_ROWS:
    case LOOM_OP_SILU:
    case LOOM_OP_GELU:
    case LOOM_OP_RELU:
    case LOOM_OP_SWIGLU:
    case LOOM_OP_ARGMAX:
    case LOOM_OP_SUM_ROWS:
      return true;
    default:
      return false;
  }
}

loom_status_t* launch_status(const loom_tensor_t* node, const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return nullptr;
  return common::make_status(e == cudaErrorMemoryAllocation ? LOOM_STATUS_RESOURCE_EXHAUSTED : LOOM_STATUS_INTERNAL,
                             "[cuda.compute] node " + common::describe_node(node) + ": " + what + ": " +
                                 cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

loom_status_t* launch_node(const LaunchContext& ctx, const loom_tensor_t* node) {
  switch (node->op) {
    case LOOM_OP_ADD:
    case LOOM_OP_SUB:
    case LOOM_OP_MUL:
    case LOOM_OP_DIV:
    case LOOM_OP_SCALE:
    case LOOM_OP_SILU:
    case LOOM_OP_GELU:
    case LOOM_OP_RELU:
    case LOOM_OP_SWIGLU:
      return launch_elementwise(ctx, node);
    case LOOM_OP_RMS_NORM:
    case LOOM_OP_NORM:
    case LOOM_OP_SOFT_MAX:
    case LOOM_OP_SUM_ROWS:
    case LOOM_OP_ARGMAX:
      return launch_rows_reduce(ctx, node);
    case LOOM_OP_ROPE:
      return launch_rope(ctx, node);
    case LOOM_OP_GET_ROWS:
    case LOOM_OP_SET_ROWS:
      return launch_rows(ctx, node);
    case LOOM_OP_CPY:
    case LOOM_OP_CONT:
      return launch_copy(ctx, node);
    case LOOM_OP_MUL_MAT:
      return launch_mul_mat(ctx, node);
    case LOOM_OP_ATTENTION:
      return launch_attention(ctx, node);
    default:
      return common::make_status(LOOM_STATUS_UNIMPLEMENTED,
                                 "[cuda.compute] node " + common::describe_node(node) + ": op not supported");
  }
}

}  // namespace loom::cuda

namespace loom::cuda {
namespace {
__global__ void probe_kernel() {}
}  // namespace

bool kernels_run_here(std::string* why) {
  cudaFuncAttributes attr{};
  const cudaError_t e = cudaFuncGetAttributes(&attr, probe_kernel);
  if (e == cudaSuccess) return true;
  cudaGetLastError();
  *why = std::string("no kernel image for this GPU (") + cudaGetErrorName(e) + "); plugin built for " LOOM_CUDA_ARCH_LIST;
  return false;
}

}  // namespace loom::cuda
