#include "support.h"

#include "common/op_check.h"
#include "common/op_info.h"
#include "attention.cuh"
#include "weight_types.h"
#include "../weight_layout.h"

namespace loom::cuda {
namespace {

constexpr uint32_t kFloat = type_bit(LOOM_TYPE_F32) | type_bit(LOOM_TYPE_F16) | type_bit(LOOM_TYPE_BF16);
constexpr uint32_t kF32 = type_bit(LOOM_TYPE_F32);
constexpr uint32_t kI32 = type_bit(LOOM_TYPE_I32);
constexpr uint32_t kIndex = kI32 | type_bit(LOOM_TYPE_I64);
// What quantize.cuh writes (SET_ROWS, CPY from float).
constexpr uint32_t kQuantizable = type_bit(LOOM_TYPE_Q8_0) | type_bit(LOOM_TYPE_Q4_0);
// What dequant.cuh reads: every type of plugin.h.
constexpr uint32_t kWeight = 0u
#define LOOM_BIT(t) | type_bit(t)
    LOOM_CUDA_WEIGHT_TYPES(LOOM_BIT)
#undef LOOM_BIT
    ;
constexpr uint32_t kAny = kWeight | kIndex;
constexpr uint32_t kNo = 0;

bool quantized(int32_t t) { return (kWeight & ~kFloat & type_bit(t)) != 0; }

Path unary(const loom_tensor_t*) { return Path::kUnary; }
Path binary(const loom_tensor_t*) { return Path::kBinary; }
Path norm(const loom_tensor_t*) { return Path::kNorm; }
Path soft_max(const loom_tensor_t*) { return Path::kSoftMax; }
Path sum_rows(const loom_tensor_t*) { return Path::kSumRows; }
Path argmax(const loom_tensor_t*) { return Path::kArgMax; }
Path rope(const loom_tensor_t*) { return Path::kRope; }
Path get_rows(const loom_tensor_t*) { return Path::kGetRows; }
Path set_rows(const loom_tensor_t*) { return Path::kSetRows; }

// CPY / CONT: same quantized type as whole blocks, float into Q8_0 / Q4_0
// blocks, quantized to float per element, plain to plain per element.
Path copy(const loom_tensor_t* n) {
  const int32_t to = n->type, from = n->src[0]->type;
  if (quantized(to)) {
    if (to == from) return n->ne[0] == n->src[0]->ne[0] ? Path::kCopyBlocks : Path::kNone;
    return (type_bit(to) & kQuantizable) && (type_bit(from) & kFloat) ? Path::kCopyQuantize : Path::kNone;
  }
  if (quantized(from)) return (type_bit(to) & kFloat) ? Path::kCopyDequantize : Path::kNone;
  if (to == from || ((type_bit(to) & kFloat) && (type_bit(from) & kFloat))) return Path::kCopyPlain;
  return Path::kNone;
}

// cuBLAS writes whole result columns at a leading dimension: dense f32 rows.
Path mul_mat(const loom_tensor_t* n) { return n->nb[0] == 4 && n->nb[1] % 4 == 0 ? Path::kMulMat : Path::kNone; }

// MUL_MAT_ID: any layout (the exact kernel takes what the GEMVs do not).
Path mul_mat_id(const loom_tensor_t*) { return Path::kMulMatId; }
// The sparse products: any layout (row_elem reads what the fast kernels do not).
Path sparse(const loom_tensor_t*) { return Path::kSparse; }
// TOP_K: indices are i32.
Path top_k(const loom_tensor_t* n) { return n->src[0]->ne[0] <= 0x7FFFFFFF ? Path::kTopK : Path::kNone; }

// A few tokens with heads up to kSplitMaxDim: the split (flash-decoding)
// kernels; else a block per (head, token).
Path attention(const loom_tensor_t* n) {
  const int64_t d = n->src[0]->ne[0], dv = n->src[2]->ne[0], tokens = n->src[0]->ne[2];
  if (d <= kSplitMaxDim && dv <= kSplitMaxDim && tokens <= kSplitMaxTokens) return Path::kAttentionSplit;
  const bool fits = d <= kAttnMaxDim && dv <= kAttnMaxDim && tokens <= kAttnMaxTokens;
  return fits ? Path::kAttention : Path::kNone;
}

// src_types of absent sources are never read (optional masks, factors).
const OpSupport kTable[] = {
    {LOOM_OP_GET_ROWS, Family::kRows, {kAny, kIndex, kNo, kNo}, kFloat, get_rows},
    {LOOM_OP_ADD, Family::kElementwise, {kFloat, kFloat, kNo, kNo}, kFloat, binary},
    {LOOM_OP_SUB, Family::kElementwise, {kFloat, kFloat, kNo, kNo}, kFloat, binary},
    {LOOM_OP_MUL, Family::kElementwise, {kFloat, kFloat, kNo, kNo}, kFloat, binary},
    {LOOM_OP_DIV, Family::kElementwise, {kFloat, kFloat, kNo, kNo}, kFloat, binary},
    {LOOM_OP_SCALE, Family::kElementwise, {kFloat, kNo, kNo, kNo}, kFloat, unary},
    {LOOM_OP_RMS_NORM, Family::kRowsReduce, {kFloat, kNo, kNo, kNo}, kFloat, norm},
    {LOOM_OP_NORM, Family::kRowsReduce, {kFloat, kNo, kNo, kNo}, kFloat, norm},
    {LOOM_OP_MUL_MAT, Family::kMulMat, {kWeight, kF32, kNo, kNo}, kF32, mul_mat},
    {LOOM_OP_ROPE, Family::kRope, {kFloat, kI32, kF32, kNo}, kFloat, rope},
    {LOOM_OP_SOFT_MAX, Family::kRowsReduce, {kFloat, kFloat, kNo, kNo}, kFloat, soft_max},
    {LOOM_OP_CPY, Family::kCopy, {kAny, kAny, kNo, kNo}, kAny, copy},
    {LOOM_OP_CONT, Family::kCopy, {kAny, kNo, kNo, kNo}, kAny, copy},
    {LOOM_OP_SET_ROWS, Family::kRows, {kFloat | kQuantizable, kF32, kIndex, kNo}, kFloat | kQuantizable, set_rows},
    {LOOM_OP_SILU, Family::kElementwise, {kFloat, kNo, kNo, kNo}, kFloat, unary},
    {LOOM_OP_GELU, Family::kElementwise, {kFloat, kNo, kNo, kNo}, kFloat, unary},
    {LOOM_OP_RELU, Family::kElementwise, {kFloat, kNo, kNo, kNo}, kFloat, unary},
    {LOOM_OP_SWIGLU, Family::kElementwise, {kFloat, kFloat, kNo, kNo}, kFloat, binary},
    {LOOM_OP_ARGMAX, Family::kRowsReduce, {kF32, kNo, kNo, kNo}, kI32, argmax},
    {LOOM_OP_SUM_ROWS, Family::kRowsReduce, {kFloat, kNo, kNo, kNo}, kFloat, sum_rows},
    {LOOM_OP_MUL_MAT_SPARSE_ROWS, Family::kSparse, {kWeight, kF32, kFloat, kNo}, kF32, sparse},
    {LOOM_OP_MUL_MAT_SPARSE_COLS, Family::kSparse, {kWeight, kF32, kFloat, kNo}, kF32, sparse},
    {LOOM_OP_ATTENTION, Family::kAttention, {kFloat, kFloat, kFloat, kI32}, kF32, attention},
    {LOOM_OP_MUL_MAT_ID, Family::kMulMatId, {kWeight, kF32, kI32, kNo}, kF32, mul_mat_id},
    {LOOM_OP_TOP_K, Family::kTopK, {kF32, kNo, kNo, kNo}, kI32, top_k},
    {LOOM_OP_TANH, Family::kElementwise, {kFloat, kNo, kNo, kNo}, kFloat, unary},
};

}  // namespace

const OpSupport* op_support(int32_t op) {
  for (const OpSupport& row : kTable) {
    if (row.op == op) return &row;
  }
  return nullptr;
}

const char* unsupported_reason(const loom_tensor_t* node) {
  if (node == nullptr) return "null node";
  if (const char* why = common::check_node(node)) return why;
  // Split weights (weight_layout.h) are read only as a whole MUL_MAT src0.
  for (int i = 0; i < LOOM_MAX_SRC; ++i) {
    const loom_tensor_t* s = node->src[i];
    if (s == nullptr || !is_split(s)) continue;
    if (node->op != LOOM_OP_MUL_MAT || i != 0 || weight_layout_unsupported(s) != nullptr) {
      return "reads a cuda weights tensor (the split layout) other than as a whole MUL_MAT src0";
    }
  }
  const OpSupport* row = op_support(node->op);
  if (row == nullptr) return "op not run by the cuda kernels";
  if ((row->dst_types & type_bit(node->type)) == 0) return "result type not run by the cuda kernels";
  for (int i = 0; i < LOOM_MAX_SRC; ++i) {
    const loom_tensor_t* s = node->src[i];
    if (s != nullptr && (row->src_types[i] & type_bit(s->type)) == 0) return "source type not run by the cuda kernels";
  }
  return row->path(node) == Path::kNone ? "type combination or layout not run by the cuda kernels" : nullptr;
}

Path node_path(const loom_tensor_t* node) {
  const OpSupport* row = op_support(node->op);
  return row == nullptr ? Path::kNone : row->path(node);
}

std::string refusal_message(const loom_tensor_t* node, const char* why) {
  return "[cuda.compute] unsupported node " + common::describe_node(node) + ": " + why;
}

}  // namespace loom::cuda
