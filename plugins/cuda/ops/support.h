// Which nodes the CUDA kernels run: ONE table, read by supports_op
// (device.cpp), by compute before it launches anything (stream.cpp) and by
// launch_node (dispatch.cu) to pick the launcher and its kernel. Per op: the
// launcher family, the types each source and the result may have (what the
// kernels' element functions read and write) and the function that picks
// the kernel variant for a node (kNone: no kernel takes this layout or type
// combination). Plain C++ (no CUDA) so tests/cuda checks the table against
// every op x type x layout on a machine without a GPU.
#pragma once

#include <cstdint>
#include <string>

#include "loom/plugin.h"

namespace loom::cuda {

// The launcher of each op family (ops/<family>.cu).
enum class Family : uint8_t { kElementwise, kRowsReduce, kRope, kRows, kCopy, kMulMat, kAttention, kMulMatId, kTopK, kSparse };

// The kernel a launcher runs for a node.
enum class Path : uint8_t {
  kNone,
  kUnary, kBinary,                                   // elementwise.cu
  kNorm, kSoftMax, kSumRows, kArgMax,                // reduce.cu
  kRope,                                             // rope.cu
  kGetRows, kSetRows,                                // rows.cu
  kCopyBlocks, kCopyQuantize, kCopyDequantize, kCopyPlain,  // copy.cu
  kMulMat,                                           // matmul.cu (GEMV or cuBLAS by batch size)
  kAttention,                                        // attention.cu (any token count)
  kAttentionSplit,                                   // attention_split.cu (decode: split over the KV length)
  kMulMatId,                                         // mul_mat_id.cu (a warp per row of the pair's expert)
  kTopK,                                             // top_k.cu (a block per row, k picks)
  kSparse,                                           // sparse.cu (active rows / neurons only)
};

constexpr uint32_t type_bit(int32_t t) { return 1u << static_cast<uint32_t>(t); }

struct OpSupport {
  int32_t op;
  Family family;
  uint32_t src_types[LOOM_MAX_SRC];  // bit per type a present source may have
  uint32_t dst_types;
  Path (*path)(const loom_tensor_t* node);  // the kernel, after the type masks passed
};

// The row of `op`, nullptr when no kernel runs it.
const OpSupport* op_support(int32_t op);

// nullptr when the kernels run `node` (well-formed per common::check_node,
// types in the table, a kernel path), else the reason (static string).
const char* unsupported_reason(const loom_tensor_t* node);

// The kernel for a node that passed unsupported_reason.
Path node_path(const loom_tensor_t* node);

// "[cuda.compute] unsupported node 'name' (SILU i32 -> i32): types" — the
// message of compute's UNIMPLEMENTED status for a refused node.
std::string refusal_message(const loom_tensor_t* node, const char* why);

// ATTENTION's limits: head sizes the kernels' shared memory holds, tokens
// the grid's y dimension holds.
constexpr int64_t kAttnMaxDim = 4096;
constexpr int64_t kAttnMaxTokens = 65535;

}  // namespace loom::cuda
