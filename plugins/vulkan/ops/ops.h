// Vulkan op layer: which nodes the kernels run (the support table, the same
// rules as the CPU plugin's minus what is listed in README.md) and how a
// node becomes one compute dispatch: shader variant, specialization
// constants, push constants and workgroup counts. No Vulkan calls here; the
// stream records what plan_node returns. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loader.h"
#include "loom/plugin.h"

namespace loom::vulkan {

// Device facts the op layer needs.
struct OpCaps {
  bool f64 = false;           // shaderFloat64: ROPE forms theta in double
  bool subgroup_add = false;  // subgroup arithmetic in compute: mat-vec reduction
  // Decode GEMV over quantized A with B rounded to 8-bit blocks once per
  // node (quantize_q8 + mul_mat_vec_q8, integer dot products): needs
  // subgroup_add; LOOM_VULKAN_DISABLE=int8 keeps the float path.
  bool int8 = false;
  // VK_KHR_shader_integer_dot_product (core 1.3): mul_mat_vec_q8 multiplies
  // four bytes in one OpSDot; else plain integer arithmetic
  // (LOOM_VULKAN_DISABLE=int8dot).
  bool int8dot = false;
  // ATTENTION split over the KV length for decode (attention_split +
  // attention_combine); LOOM_VULKAN_DISABLE=split keeps one pass.
  bool split_kv = true;
  // ATTENTION of more than 8 queries per head with D, Dv <= 128 in blocks
  // of 8 queries (attention_tiled); LOOM_VULKAN_DISABLE=tiled keeps one
  // workgroup per query.
  bool tiled_attention = true;
  // MUL_MAT_ID of more than 8 tokens grouped by expert (moe_group + the
  // tiled GEMM); LOOM_VULKAN_DISABLE=grouped keeps a GEMV per pair.
  bool grouped_moe = true;
  // MUL_MAT of more than 8 columns over F16 or quantized A with K a multiple
  // of 32 on cooperative matrices (mul_mat_cm.comp; coopmat.h): the
  // variant's name, or nullptr for the f32 tiled kernel.
  const char* coopmat_shader = nullptr;
  // The same for MUL_MAT_ID's prefill grouped by expert (-DLOOM_ID_GROUPED).
  const char* coopmat_id_shader = nullptr;
  uint32_t subgroup_size = 32;  // VkPhysicalDeviceSubgroupProperties (rows per GEMV workgroup)
  uint32_t max_groups[3] = {65535, 65535, 65535};
  // Storage bindings: at most max_range bytes (maxStorageBufferRange), at
  // offsets that are multiples of range_align.
  uint64_t max_range = uint64_t{1} << 27;
  uint64_t range_align = 256;
  // Speed class for loom.cost estimates.
  enum class Speed { kDiscrete, kIntegrated, kEmulated };
  Speed speed = Speed::kDiscrete;
  // Barrier-free kernels instead of the workgroup ones: every matmul one
  // invocation per output (mul_mat_rows), ATTENTION one invocation per
  // query row (attention_rows). CPU implementations, where barriers cost
  // more than they share (LOOM_VULKAN_DISABLE=rows turns it off, for tests).
  bool rows_kernels = false;
  // Loop iterations one invocation may run in all, 0 for no limit: lavapipe
  // (llvmpipe) silently ends every loop of an invocation after 65535
  // (LP_MAX_TGSI_LOOP_ITERATIONS, shared by all loops of a shader). Kernels
  // whose loops grow with the data (ATTENTION over n_kv, MUL_MAT over K)
  // switch to a form that fits, or are refused past it.
  uint64_t loop_budget = 0;
};

// One tensor as the shaders see it (shaders/common.glsl TensorDesc).
struct TensorDesc {
  uint32_t off;  // byte offset in its buffer
  uint32_t ne[4];
  uint32_t nb[4];  // byte strides
};

// The push-constant block of every shader: t[0] destination, t[1] and t[2]
// sources; p[0] packs the three type ids, p[1..4] the op's parameters.
struct PushConstants {
  TensorDesc t[3];
  uint32_t p[5];
};
static_assert(sizeof(PushConstants) == 128, "push constants must fit the guaranteed 128 bytes");

// ATTENTION's own push-constant block (shaders/attention.comp AttnPush),
// pushed over the same 128 bytes: byte offset and strides of dims 0..2 of
// Q, K, V and the result; visible's offset and element stride; the sizes
// (D, Dv, H, T, n_kv, H / Hkv); K and V type ids (byte each); scale (f32
// bits); the node id for error words; the split count; visible's dim-1
// stride in the ranges form (0: lengths).
struct AttnRowDesc {
  uint32_t off;
  uint32_t nb[3];
};
struct AttnPushConstants {
  AttnRowDesc q, k, v, dst;
  uint32_t vis_off, vis_nb0;
  uint32_t d, dv, n_head, n_tok, n_kv, group;
  uint32_t types, scale, node_id;
  uint32_t n_split;  // key ranges per (h, t) of the split kernels (flash-decoding)
  uint32_t vis_nb1;  // the ranges form (ABI 1.4): visible's dim-1 stride; 0: lengths [T]
};
static_assert(sizeof(AttnPushConstants) <= sizeof(PushConstants), "attention push constants over 128 bytes");

// Tensor slots of a dispatch: 0 destination, 1 and 2 sources (bindings 0..2)
// and 3, 4 two more sources (bindings 4, 5: binding 3 is the error words).
constexpr int kSlots = 5;
constexpr uint32_t slot_binding(int k) { return k < 3 ? static_cast<uint32_t>(k) : static_cast<uint32_t>(k) + 1; }
constexpr uint32_t kErrorBinding = 3;
constexpr uint32_t kBindings = kSlots + 1;

// Where a tensor's bytes live: a buffer of this device and the offset.
struct Location {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0;       // in the VkBuffer
  uint64_t buffer_size = 0;  // bytes of the VkBuffer
};
// Resolves a tensor's data pointer; "" or why it cannot (not our memory).
using Resolver = std::function<std::string(const loom_tensor_t*, Location*)>;

// Bytes of the stream's scratch buffer for data one dispatch makes for the
// next within a graph (B rounded to 8-bit blocks); *out says where. "" or
// why not. Offsets are 256-aligned; a later node may reuse the bytes (the
// stream's hazard barriers order it after this node's readers).
using ScratchFn = std::function<std::string(uint64_t bytes, Location* out)>;

// One dispatch: what the stream binds, pushes and launches.
struct Dispatch {
  const char* shader = nullptr;  // variant name in the shader table
  // constant_id 0: workgroup size; 1, 2: shader specific
  uint32_t spec[3] = {0, 0, 0};
  uint32_t n_spec = 1;
  // Pushed as is (128 bytes); attention.comp reads AttnPushConstants there.
  PushConstants pc{};
  // Per slot (kSlots): the buffer; an unused slot binds the destination's
  // window with an empty byte range.
  VkBuffer buffers[kSlots] = {};
  // The bound window of each buffer: the whole buffer (offset 0, range =
  // its size) when it fits maxStorageBufferRange, else a window around the
  // tensor; TensorDesc offsets are relative to it.
  uint64_t bind_offset[kSlots] = {};
  uint64_t bind_range[kSlots] = {};
  uint32_t groups[3] = {1, 1, 1};
  // Byte ranges [begin, end) of each buffer, for barriers between dispatches.
  uint64_t begin[kSlots] = {};
  uint64_t end[kSlots] = {};
};

// nullptr when the kernels can run `node`, else a static reason. Never
// allocates (supports_op contract).
const char* unsupported_reason(const OpCaps& caps, const loom_tensor_t* node);

// loom.cost: estimated microseconds for node (0 for views and NONE, < 0
// when unsupported). Rough: a cost per dispatch plus work over a rate by
// speed class (cost.cpp). Never allocates.
double op_time_us(const OpCaps& caps, const loom_tensor_t* node);

// Append the dispatches of `node` (not a view, not NONE, supported,
// elements > 0) to *out: one, or two when a first pass prepares data in
// scratch memory (the int8 GEMV's B). node_id is echoed in error words
// (bad row index, bad visible length). Returns "" or an error text (a
// status INVALID_ARGUMENT naming the node is made by the caller).
std::string plan_node(const OpCaps& caps, const loom_tensor_t* node, uint32_t node_id,
                      const Resolver& resolve, const ScratchFn& scratch, std::vector<Dispatch>* out);

}  // namespace loom::vulkan
