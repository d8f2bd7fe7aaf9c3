// The CUDA plugin's support table (plugins/cuda/ops/support.h) against what
// its launchers run, on a machine without a GPU: every op id x every type of
// each source and the result x the layouts the conformance suite uses
// (dense, padded rows, strided elements, a strided result). A claimed node
// must be well-formed, have a kernel path, and every type it touches must
// be one the kernels' element functions read or write (dequant.cuh,
// quantize.cuh); a well-formed node the table refuses must be one of the
// documented limits. Also the refusal and fault messages compute and
// synchronize return.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "common/op_check.h"
#include "common/op_info.h"
#include "common/type_traits.h"
#include "plugins/cuda/ops/dequant.cuh"
#include "plugins/cuda/ops/fault.h"
#include "plugins/cuda/ops/quantize.cuh"
#include "plugins/cuda/ops/support.h"

namespace loom::cuda {
namespace {

enum class Layout { kDense, kPaddedRows, kStridedElems, kStridedResult };
constexpr Layout kLayouts[] = {Layout::kDense, Layout::kPaddedRows, Layout::kStridedElems, Layout::kStridedResult};

std::vector<int32_t> all_types() {
  std::vector<int32_t> out;
  for (int32_t t = 0; t < LOOM_TYPE_COUNT; ++t) {
    if (common::type_is_valid(t)) out.push_back(t);
  }
  return out;
}

// A node and its sources with the shapes each op needs (K = 256: whole
// super-blocks) and strides from the types and the layout.
struct Node {
  loom_tensor_t dst{};
  loom_tensor_t src[LOOM_MAX_SRC]{};
  alignas(16) uint8_t mem[16] = {};

  void shape(loom_tensor_t* t, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    t->struct_size = sizeof *t;
    t->ne[0] = n0;
    t->ne[1] = n1;
    t->ne[2] = n2;
    t->ne[3] = n3;
    t->data = mem;
  }
  static void strides(loom_tensor_t* t, bool strided) {
    const common::TypeTraits& tr = common::type_traits(t->type);
    const bool plain = !tr.is_quantized;
    t->nb[0] = tr.type_size * (strided && plain ? 2 : 1);
    t->nb[1] = t->nb[0] * static_cast<size_t>(t->ne[0] / tr.block_size) + (strided ? 64 : 0);
    t->nb[2] = t->nb[1] * static_cast<size_t>(t->ne[1]);
    t->nb[3] = t->nb[2] * static_cast<size_t>(t->ne[2]);
  }
};

// Sources each op reads, optional ones included (SOFT_MAX's mask, ROPE's
// frequency factors).
int sources(int32_t op) {
  if (op == LOOM_OP_SOFT_MAX) return 2;
  if (op == LOOM_OP_ROPE) return 3;
  return common::op_source_count(op);
}

void build(Node* n, int32_t op, const int32_t* types, Layout layout) {
  *n = Node{};
  n->dst.op = op;
  n->dst.type = types[0];
  std::strcpy(n->dst.name, "node");
  loom_tensor_t* d = &n->dst;
  loom_tensor_t* s = n->src;
  const int64_t K = 256;
  switch (op) {
    case LOOM_OP_GET_ROWS:
      n->shape(&s[0], K, 5, 2, 1), n->shape(&s[1], 3, 2, 1, 1), n->shape(d, K, 3, 2, 1);
      break;
    case LOOM_OP_SET_ROWS:
      n->shape(&s[0], K, 5, 2, 1), n->shape(&s[1], K, 3, 2, 1), n->shape(&s[2], 3, 2, 1, 1), n->shape(d, K, 5, 2, 1);
      break;
    case LOOM_OP_MUL_MAT:
      n->shape(&s[0], K, 4, 1, 1), n->shape(&s[1], K, 3, 2, 1), n->shape(d, 4, 3, 2, 1);
      break;
    case LOOM_OP_MUL_MAT_SPARSE_ROWS:  // A [K, 4], B [K, 3], scores [4, 3]
      n->shape(&s[0], K, 4, 1, 1), n->shape(&s[1], K, 3, 1, 1), n->shape(&s[2], 4, 3, 1, 1), n->shape(d, 4, 3, 1, 1);
      break;
    case LOOM_OP_MUL_MAT_SPARSE_COLS:  // W [K outputs, 4 neurons], H [4, 3], scores [4, 3]
      n->shape(&s[0], K, 4, 1, 1), n->shape(&s[1], 4, 3, 1, 1), n->shape(&s[2], 4, 3, 1, 1), n->shape(d, K, 3, 1, 1);
      break;
    case LOOM_OP_ROPE:
      n->shape(&s[0], K, 3, 2, 1), n->shape(&s[1], 2, 1, 1, 1), n->shape(&s[2], K / 2, 1, 1, 1), n->shape(d, K, 3, 2, 1);
      n->dst.op_params[0] = static_cast<int32_t>(K);
      break;
    case LOOM_OP_SOFT_MAX:
      n->shape(&s[0], K, 3, 2, 1), n->shape(&s[1], K, 3, 1, 1), n->shape(d, K, 3, 2, 1);
      break;
    case LOOM_OP_ARGMAX:
      n->shape(&s[0], K, 3, 2, 1), n->shape(d, 3, 2, 1, 1);
      break;
    case LOOM_OP_MUL_MAT_ID:  // 3 experts, U = 2 slots (one B column each), T = 3 tokens
      n->shape(&s[0], K, 4, 3, 1), n->shape(&s[1], K, 2, 3, 1), n->shape(&s[2], 2, 3, 1, 1), n->shape(d, 4, 2, 3, 1);
      break;
    case LOOM_OP_TOP_K:
      n->shape(&s[0], K, 3, 2, 1), n->shape(d, 2, 3, 2, 1);
      n->dst.op_params[0] = 2;
      break;
    case LOOM_OP_SUM_ROWS:
      n->shape(&s[0], K, 3, 2, 1), n->shape(d, 1, 3, 2, 1);
      break;
    case LOOM_OP_ATTENTION:
      n->shape(&s[0], 64, 4, 2, 1), n->shape(&s[1], 64, 16, 2, 1), n->shape(&s[2], 64, 16, 2, 1);
      n->shape(&s[3], 2, 1, 1, 1), n->shape(d, 64, 4, 2, 1);
      {
        const float scale = 0.125f;
        std::memcpy(n->dst.op_params, &scale, sizeof scale);
      }
      break;
    default:  // elementwise, norms, copies: one shape for all
      for (int i = 0; i < sources(op); ++i) n->shape(&s[i], K, 3, 2, 1);
      n->shape(d, K, 3, 2, 1);
      break;
  }
  const int ns = sources(op);
  for (int i = 0; i < ns; ++i) {
    s[i].type = types[1 + i];
    s[i].op = LOOM_OP_NONE;
    Node::strides(&s[i], layout == Layout::kPaddedRows ? false : layout == Layout::kStridedElems);
    if (layout == Layout::kPaddedRows) s[i].nb[1] += 64, s[i].nb[2] = s[i].nb[1] * s[i].ne[1], s[i].nb[3] = s[i].nb[2] * s[i].ne[2];
    n->dst.src[i] = &s[i];
  }
  Node::strides(d, layout == Layout::kStridedResult);
}

bool known(int32_t t) { return block_shape(t).elems > 0; }
// store_elem writes the float types: a value survives the round trip.
bool stores(int32_t t) {
  alignas(8) uint8_t b[8] = {};
  store_elem(t, b, 1.5f);
  return load_elem(t, b) == 1.5f && is_float_type(t);
}
bool quantizes(int32_t t) {
  float x[32] = {};
  uint8_t out[64];
  return quantize_block(t, x, out);
}

// What the launcher of `path` needs of the node's types, from the kernels'
// element functions.
std::string path_mismatch(const loom_tensor_t* n, Path path) {
  for (int i = 0; i < LOOM_MAX_SRC; ++i) {
    if (n->src[i] != nullptr && !known(n->src[i]->type)) return "a source type dequant.cuh does not read";
  }
  const int32_t to = n->type, from = n->src[0]->type;
  switch (path) {
    case Path::kNone: return "no kernel path";
    case Path::kArgMax: return to == LOOM_TYPE_I32 ? "" : "argmax writes i32";
    case Path::kSetRows: return stores(to) || quantizes(to) ? "" : "set_rows result type";
    case Path::kCopyBlocks: return to == from && !is_float_type(to) && block_shape(to).elems > 1 ? "" : "block copy";
    case Path::kCopyQuantize: return quantizes(to) && is_float_type(from) ? "" : "quantize copy";
    case Path::kCopyPlain: return to == from || (stores(to) && is_float_type(from)) ? "" : "plain copy";
    case Path::kMulMat: return to == LOOM_TYPE_F32 && n->nb[0] == 4 ? "" : "mul_mat result";
    case Path::kMulMatId: return to == LOOM_TYPE_F32 && n->src[2]->type == LOOM_TYPE_I32 ? "" : "mul_mat_id types";
    case Path::kTopK: return to == LOOM_TYPE_I32 && from == LOOM_TYPE_F32 ? "" : "top_k types";
    case Path::kSparse:
      return to == LOOM_TYPE_F32 && n->src[1]->type == LOOM_TYPE_F32 && is_float_type(n->src[2]->type) ? ""
                                                                                                        : "sparse types";
    default: return stores(to) ? "" : "result type store_elem does not write";
  }
}

// Well-formed nodes the table may refuse: its documented limits.
bool allowed_refusal(const loom_tensor_t* n, Layout layout) {
  if (n->op == LOOM_OP_MUL_MAT && layout == Layout::kStridedResult) return true;  // cuBLAS writes dense rows
  // ATTENTION over a Q8_0 cache (ABI 1.6): the kernels read float K and V;
  // the llama builder reads such a cache on the unfused path (plugins/cuda/README.md).
  if (n->op == LOOM_OP_ATTENTION && (n->src[1]->type == LOOM_TYPE_Q8_0 || n->src[2]->type == LOOM_TYPE_Q8_0)) return true;
  return false;
}

TEST(CudaSupport, TableMatchesTheLaunchersForEveryOpTypeAndLayout) {
  const std::vector<int32_t> types = all_types();
  std::set<int32_t> claimed_ops;
  int64_t claimed = 0, well_formed = 0;
  for (int32_t op = 0; op < LOOM_OP_COUNT; ++op) {
    if (op == LOOM_OP_NONE || (op >= LOOM_OP_RESHAPE && op <= LOOM_OP_TRANSPOSE)) continue;
    const int ns = sources(op);
    // types[0]: result; types[1..]: sources. Odometer over all of them.
    std::vector<size_t> idx(static_cast<size_t>(ns + 1), 0);
    for (;;) {
      int32_t ty[1 + LOOM_MAX_SRC];
      for (size_t i = 0; i < idx.size(); ++i) ty[i] = types[idx[i]];
      for (Layout layout : kLayouts) {
        Node node;
        build(&node, op, ty, layout);
        const loom_tensor_t* n = &node.dst;
        const bool ok = common::check_node(n) == nullptr;
        const char* why = unsupported_reason(n);
        well_formed += ok;
        if (why == nullptr) {
          ++claimed;
          claimed_ops.insert(op);
          ASSERT_TRUE(ok) << common::describe_node(n) << ": claimed but not well-formed: " << common::check_node(n);
          const std::string bad = path_mismatch(n, node_path(n));
          ASSERT_EQ(bad, "") << common::describe_node(n) << " layout " << static_cast<int>(layout);
        } else if (ok) {
          ASSERT_TRUE(allowed_refusal(n, layout))
              << common::describe_node(n) << " layout " << static_cast<int>(layout) << " refused: " << why;
        }
      }
      size_t d = 0;
      while (d < idx.size() && ++idx[d] == types.size()) idx[d++] = 0;
      if (d == idx.size()) break;
    }
  }
  // Every op of the table claims something, every op claims only through the table.
  for (int32_t op = 0; op < LOOM_OP_COUNT; ++op) {
    EXPECT_EQ(claimed_ops.count(op) == 1, op_support(op) != nullptr) << common::op_name(op);
  }
  EXPECT_GT(claimed, 1000);
  EXPECT_GT(well_formed, claimed);
}

// ABI 1.5: MUL_MAT_ID for every weight type MUL_MAT takes, TOP_K on F32
// only, TANH on the float types.
TEST(CudaSupport, MixtureOfExpertsOpsAreClaimed) {
  for (int32_t t = 0; t < LOOM_TYPE_COUNT; ++t) {
    if (!common::type_is_valid(t)) continue;
    Node mm, mid;
    const int32_t ty[] = {LOOM_TYPE_F32, t, LOOM_TYPE_F32, LOOM_TYPE_I32};
    build(&mm, LOOM_OP_MUL_MAT, ty, Layout::kDense);
    build(&mid, LOOM_OP_MUL_MAT_ID, ty, Layout::kDense);
    EXPECT_EQ(unsupported_reason(&mid.dst) == nullptr, unsupported_reason(&mm.dst) == nullptr) << common::type_name(t);
  }
  for (int32_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    Node top, tanh_node;
    const int32_t tk[] = {LOOM_TYPE_I32, t};
    build(&top, LOOM_OP_TOP_K, tk, Layout::kStridedElems);
    EXPECT_EQ(unsupported_reason(&top.dst) == nullptr, t == LOOM_TYPE_F32) << common::type_name(t);
    const int32_t th[] = {t, t};
    build(&tanh_node, LOOM_OP_TANH, th, Layout::kStridedResult);
    EXPECT_EQ(unsupported_reason(&tanh_node.dst), nullptr) << common::type_name(t);
  }
}

// ABI 1.3: both sparse products for every weight type MUL_MAT takes, with
// F32, F16 or BF16 scores and strided operands (so --sparse-budget can put
// hot neurons on a CUDA device); I32 scores refused.
TEST(CudaSupport, SparseProductsAreClaimedForEveryWeightType) {
  for (int32_t t = 0; t < LOOM_TYPE_COUNT; ++t) {
    if (!common::type_is_valid(t)) continue;
    Node mm;
    const int32_t mt[] = {LOOM_TYPE_F32, t, LOOM_TYPE_F32};
    build(&mm, LOOM_OP_MUL_MAT, mt, Layout::kDense);
    const bool weight = unsupported_reason(&mm.dst) == nullptr;
    for (int32_t op : {LOOM_OP_MUL_MAT_SPARSE_ROWS, LOOM_OP_MUL_MAT_SPARSE_COLS}) {
      for (int32_t ts : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_I32}) {
        for (Layout layout : {Layout::kDense, Layout::kPaddedRows, Layout::kStridedElems}) {
          Node sp;
          const int32_t ty[] = {LOOM_TYPE_F32, t, LOOM_TYPE_F32, ts};
          build(&sp, op, ty, layout);
          if (common::check_node(&sp.dst) != nullptr) continue;  // e.g. strided quantized rows
          EXPECT_EQ(unsupported_reason(&sp.dst) == nullptr, weight && ts != LOOM_TYPE_I32)
              << common::describe_node(&sp.dst) << " layout " << static_cast<int>(layout);
          if (unsupported_reason(&sp.dst) == nullptr) {
            EXPECT_EQ(node_path(&sp.dst), Path::kSparse);
          }
        }
      }
    }
  }
}

TEST(CudaSupport, EveryWeightTypeRunsOnTheGemvAndQuantizedWritesOnlyQ8_0Q4_0) {
  const int32_t weights[] = {LOOM_TYPE_F32,  LOOM_TYPE_F16,  LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0,
                             LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q2_K,
                             LOOM_TYPE_Q3_K, LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_IQ4_XS};
  for (int32_t t : weights) {
    Node node;
    const int32_t ty[] = {LOOM_TYPE_F32, t, LOOM_TYPE_F32};
    build(&node, LOOM_OP_MUL_MAT, ty, Layout::kDense);
    EXPECT_EQ(unsupported_reason(&node.dst), nullptr) << common::type_name(t);
  }
  for (int32_t t : {LOOM_TYPE_Q4_1, LOOM_TYPE_Q4_K, LOOM_TYPE_IQ4_NL, LOOM_TYPE_IQ4_XS}) {
    Node node;
    const int32_t ty[] = {t, LOOM_TYPE_F32, t};
    build(&node, LOOM_OP_CPY, ty, Layout::kDense);
    EXPECT_NE(unsupported_reason(&node.dst), nullptr) << "CPY f32 -> " << common::type_name(t);
  }
}

// conformance/plugin_cases.cpp's UnsupportedNodeIsUnimplementedWithNames:
// the node compute must refuse before launching, and the message it gives.
TEST(CudaSupport, SiluOnI32IsRefusedWithOpNodeAndTypes) {
  Node node;
  const int32_t ty[] = {LOOM_TYPE_I32, LOOM_TYPE_I32};
  build(&node, LOOM_OP_SILU, ty, Layout::kDense);
  std::strcpy(node.dst.name, "my_silu");
  const char* why = unsupported_reason(&node.dst);
  ASSERT_NE(why, nullptr);
  const std::string msg = refusal_message(&node.dst, why);
  EXPECT_NE(msg.find("SILU"), std::string::npos) << msg;
  EXPECT_NE(msg.find("my_silu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("i32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[cuda.compute]"), std::string::npos) << msg;
}

// attention_cases.cpp's OutOfRangeLengthIsAnError and plugin_cases.cpp's
// BadRowIndexIsAStatusNotACrash look for these words.
TEST(CudaSupport, FaultMessagesNameTheBadValueLikeTheCpuPlugin) {
  KernelFault f{kErrVisible, LOOM_OP_ATTENTION, 1, 21, 20};
  EXPECT_NE(fault_message(f).find("visible[1] = 21"), std::string::npos) << fault_message(f);
  f.value = -1;
  EXPECT_NE(fault_message(f).find("visible[1] = -1"), std::string::npos) << fault_message(f);
  const KernelFault r{kErrRowIndex, LOOM_OP_GET_ROWS, 1, 3, 3};
  EXPECT_NE(fault_message(r).find("row index 3"), std::string::npos) << fault_message(r);
  EXPECT_NE(fault_message(r).find("GET_ROWS"), std::string::npos) << fault_message(r);
  EXPECT_EQ(fault_message(KernelFault{}), "");
  // The ranges form: the pair packed first << 32 | end (attention.cuh's query_rows).
  const KernelFault g{kErrRange, LOOM_OP_ATTENTION, 1, (int64_t{9} << 32) | 5, 20};
  EXPECT_NE(fault_message(g).find("rows [9, 5) of query 1 outside [0, 20]"), std::string::npos) << fault_message(g);
  // MUL_MAT_ID (moe_cases.cpp's IdOutsideTheExpertsIsAnError looks for "of token 1"): the slot << 32 | the id.
  const KernelFault x{kErrExpert, LOOM_OP_MUL_MAT_ID, 1, (int64_t{1} << 32) | 0xFFFFFFFFu, 4};
  EXPECT_NE(fault_message(x).find("MUL_MAT_ID: id -1 of token 1, slot 1 outside [0, 4)"), std::string::npos)
      << fault_message(x);
}

}  // namespace
}  // namespace loom::cuda
