// The launcher of a node (its family in support.h's table) and launch errors.
#include <string>

#include "common/glue.h"
#include "common/op_info.h"
#include "ops.h"
#include "support.h"

namespace loom::cuda {

loom_status_t* launch_status(const loom_tensor_t* node, const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return nullptr;
  return common::make_status(e == cudaErrorMemoryAllocation ? LOOM_STATUS_RESOURCE_EXHAUSTED : LOOM_STATUS_INTERNAL,
                             "[cuda.compute] node " + common::describe_node(node) + ": " + what + ": " +
                                 cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

loom_status_t* launch_node(const LaunchContext& ctx, const loom_tensor_t* node) {
  // The family comes from support.h's table, the same row supports_op read.
  const OpSupport* row = op_support(node->op);
  if (row == nullptr) {
    return common::make_status(LOOM_STATUS_UNIMPLEMENTED, refusal_message(node, "op not run by the cuda kernels"));
  }
  switch (row->family) {
    case Family::kElementwise: return launch_elementwise(ctx, node);
    case Family::kRowsReduce: return launch_rows_reduce(ctx, node);
    case Family::kRope: return launch_rope(ctx, node);
    case Family::kRows: return launch_rows(ctx, node);
    case Family::kCopy: return launch_copy(ctx, node);
    case Family::kMulMat: return launch_mul_mat(ctx, node);
    case Family::kAttention: return launch_attention(ctx, node);
    case Family::kMulMatId: return launch_mul_mat_id(ctx, node);
    case Family::kTopK: return launch_top_k(ctx, node);
    case Family::kSparse: return launch_sparse(ctx, node);
  }
  return common::make_status(LOOM_STATUS_INTERNAL, refusal_message(node, "no launcher for its family"));
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
