// The Vulkan op planner's shared pieces (internal to ops/): Planner binds
// tensors and scratch ranges into a Dispatch and sizes its grid, and the
// facts of the MUL_MAT kernels that MUL_MAT_ID's variants share
// (ops/dispatch.cpp defines them, ops/mul_mat_id.cpp uses them too).
// Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/type_traits.h"
#include "ops/ops.h"

namespace loom::vulkan {

// Quantized types the shaders write (SET_ROWS, CPY from float).
inline bool is_writable_quant(int32_t t) { return t == LOOM_TYPE_Q8_0 || t == LOOM_TYPE_Q4_0; }
// Any block type (shaders/quant.glsl decodes every one in place).
inline bool is_block_type(int32_t t) { return common::type_is_valid(t) && common::type_traits(t).is_quantized; }

inline int64_t nrows(const loom_tensor_t* t) { return t->ne[1] * t->ne[2] * t->ne[3]; }
inline int64_t nelements(const loom_tensor_t* t) { return t->ne[0] * nrows(t); }

// Bytes the shaders touch: alignment each offset and stride must have.
inline uint64_t type_align(int32_t t) {
  return (t == LOOM_TYPE_F32 || t == LOOM_TYPE_I32 || t == LOOM_TYPE_I64) ? 4 : 2;
}

class Planner {
 public:
  Planner(const OpCaps& caps, const Resolver& resolve, Dispatch* out)
      : caps_(caps), resolve_(resolve), d_(out) {}

  // Describe tensor t at slot k (0..2: t[k] of the common push constants,
  // 0 = destination); "" or the error.
  std::string bind(int k, const loom_tensor_t* t) {
    uint32_t off = 0;
    std::string err = bind_buffer(k, t, &off);
    if (!err.empty()) return err;
    TensorDesc& td = d_->pc.t[k];
    td.off = off;
    for (int i = 0; i < 4; ++i) {
      td.ne[i] = static_cast<uint32_t>(t->ne[i]);
      td.nb[i] = static_cast<uint32_t>(t->nb[i]);
    }
    d_->pc.p[0] |= static_cast<uint32_t>(t->type) << (8 * k);
    return "";
  }

  // Bind tensor t's buffer at slot k (< kSlots) and set its barrier range;
  // *off = t's byte offset in the bound window. "" or the error.
  std::string bind_buffer(int k, const loom_tensor_t* t, uint32_t* off) {
    Location loc;
    std::string err = resolve_(t, &loc);
    if (!err.empty()) return err;
    const uint64_t align = type_align(t->type);
    uint64_t extent = 0;
    if (nelements(t) > 0) {
      const common::TypeTraits& tr = common::type_traits(t->type);
      extent = tr.type_size;
      for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
        const int64_t n = d == 0 ? t->ne[0] / tr.block_size : t->ne[d];
        extent += static_cast<uint64_t>(n - 1) * t->nb[d];
        if (n > 1 && t->nb[d] % align != 0)
          return "stride nb[" + std::to_string(d) + "] not aligned";
      }
    }
    if (loc.offset % align != 0)
      return "data offset " + std::to_string(loc.offset) + " not aligned";
    if (loc.offset + extent > loc.buffer_size) {
      return "tensor '" + std::string(t->name) + "' spans bytes [" + std::to_string(loc.offset) +
             ", " + std::to_string(loc.offset + extent) + ") of a " +
             std::to_string(loc.buffer_size) + "-byte buffer";
    }
    return bind_range(k, loc, extent, "tensor '" + std::string(t->name) + "'", off);
  }

  // Bind bytes [loc.offset, loc.offset + extent) of loc's buffer at slot k
  // (a tensor's, or scratch memory); *off = their offset in the bound
  // window. "" or the error, naming `what`.
  std::string bind_range(int k, const Location& loc, uint64_t extent, const std::string& what,
                         uint32_t* off) {
    uint64_t win = 0;
    uint64_t range = loc.buffer_size;
    if (!window(loc, extent, &win, &range)) {
      return what + " spans " + std::to_string(extent) +
             " bytes, more than one storage binding holds (maxStorageBufferRange " +
             std::to_string(caps_.max_range) + ")";
    }
    *off = static_cast<uint32_t>(loc.offset - win);
    d_->buffers[k] = loc.buffer;
    d_->bind_offset[k] = win;
    d_->bind_range[k] = range;
    d_->begin[k] = loc.offset;
    d_->end[k] = loc.offset + extent;
    return "";
  }

  // Slot k unused: bind the destination's window with an empty range.
  // (plan_node does this for every slot a kernel left empty.)
  void unused(int k) {
    d_->buffers[k] = d_->buffers[0];
    d_->bind_offset[k] = d_->bind_offset[0];
    d_->bind_range[k] = d_->bind_range[0];
    d_->begin[k] = d_->end[k] = 0;
  }

  // The window [*win, *win + *range) of the buffer to bind for bytes
  // [loc.offset, loc.offset + extent): the whole buffer when it fits one
  // binding; else a window starting on a multiple of half the largest
  // binding (few distinct windows: descriptor sets are shared), or, for a
  // tensor that straddles those, one starting just below it. False when
  // the tensor is larger than any binding.
  bool window(const Location& loc, uint64_t extent, uint64_t* win, uint64_t* range) const {
    const uint64_t max = caps_.max_range;
    if (loc.buffer_size <= max) {
      *win = 0;
      *range = loc.buffer_size;
      return true;
    }
    const uint64_t a = caps_.range_align;
    const uint64_t step = std::max<uint64_t>(a, (max / 2) / a * a);
    uint64_t w = loc.offset / step * step;
    if (loc.offset + extent - w > max) w = loc.offset / a * a;
    if (loc.offset + extent - w > max) return false;
    *win = w;
    *range = std::min(max, loc.buffer_size - w);
    return true;
  }

  // A 1-D grid of `items` invocations in workgroups of wg (wrapping into y).
  std::string grid(uint64_t items, uint32_t wg) { return groups((items + wg - 1) / wg, wg); }
  std::string groups(uint64_t n_groups, uint32_t wg) {
    d_->spec[0] = wg;
    const uint64_t x = std::min<uint64_t>(std::max<uint64_t>(n_groups, 1), caps_.max_groups[0]);
    const uint64_t y = (n_groups + x - 1) / x;
    if (y > caps_.max_groups[1])
      return std::to_string(n_groups) + " workgroups exceed the device's grid";
    d_->groups[0] = static_cast<uint32_t>(x);
    d_->groups[1] = static_cast<uint32_t>(std::max<uint64_t>(y, 1));
    d_->groups[2] = 1;
    return "";
  }

 private:
  const OpCaps& caps_;
  const Resolver& resolve_;
  Dispatch* d_;
};

#define LOOM_VK_TRY(expr)       \
  do {                          \
    std::string e_ = (expr);    \
    if (!e_.empty()) return e_; \
  } while (0)

// ------------------------------------------------------------ MUL_MAT kernels

constexpr int64_t kMatVecMaxN = 8;  // mul_mat_vec.comp MAX_N
constexpr int64_t kShortK = 128;    // rows shorter than this: mul_mat_rows.comp

// MUL_MAT kernels (plan_mul_mat picks among those that fit). kCoopmat:
// mul_mat_cm.comp, where caps.coopmat_shader names a form and the node
// suits it (coopmat_suits).
enum class MatKernel { kRows, kVec, kTiled, kCoopmat };

// The A mul_mat_cm.comp reads: F16 or a block type, K a multiple of 32.
inline bool coopmat_reads(const loom_tensor_t* a) {
  return (a->type == LOOM_TYPE_F16 || is_block_type(a->type)) && a->ne[0] % 32 == 0;
}

// Whether MUL_MAT node n may run on cooperative matrices: the device has
// them, more than kMatVecMaxN columns (MUL_MAT's F16-inputs rule,
// docs/plugin-abi.md), coopmat_reads(A), B F32.
bool coopmat_suits(const OpCaps& caps, const loom_tensor_t* n);

// Loop iterations one invocation of a MUL_MAT kernel runs at most over A
// (K = a->ne[0]) and `cols` columns of B, counted from the shaders' loops
// (inner loops over a 32-element chunk are unrolled; quant.glsl): per chunk
// of 32 for a block type, per element (or four, the f32 vec4 path) for
// float A. Conservative: loops that may be unrolled by the compiler count
// as not.
uint64_t mul_mat_loops(MatKernel k, const loom_tensor_t* a, uint64_t cols, uint32_t wg);

// The int8 GEMV (decode, quantized A): quantize_q8 + mul_mat_vec_q8.
constexpr uint32_t kQ8Wg = 128;         // mul_mat_vec_q8.comp: workgroup size
constexpr uint64_t kQ8ChunkBytes = 48;  // per 32 elements of B: 8 words of quants, d, two sums, pad
constexpr uint32_t kQuantizeWg = 64;    // quantize_q8.comp: one invocation per block
// Rows of A per mul_mat_vec_q8 workgroup: one per subgroup as the device
// reports its size (the shader shares any other count out correctly).
uint32_t q8_rows(const OpCaps& caps);
// Loop iterations of one invocation of quantize_q8 + mul_mat_vec_q8.
uint64_t q8_loops(const OpCaps& caps, const loom_tensor_t* a, uint64_t cols);

// mul_mat_vec_float.comp: float A, a row per subgroup. Its wide path
// (p[2] = 1) loads 16 bytes of A and B per lane: rows dense and 16-byte
// aligned in the bound windows, K a multiple of 8.
constexpr uint32_t kFloatVecWg = 128;
inline bool aligned16(const TensorDesc& t) {
  return t.off % 16 == 0 && t.nb[1] % 16 == 0 && t.nb[2] % 16 == 0 && t.nb[3] % 16 == 0;
}
bool float_vec_wide(const loom_tensor_t* a, const loom_tensor_t* b, const PushConstants& pc);
// Loop iterations of one invocation of mul_mat_vec_float (lanes = the
// subgroup size, 4 elements per step on the wide path).
uint64_t float_vec_loops(const OpCaps& caps, const loom_tensor_t* a, uint64_t cols, bool wide);

// ------------------------------------------------------------ MUL_MAT_ID (mul_mat_id.cpp)

// This plugin's limits on a well-formed MUL_MAT_ID; nullptr when none bites.
const char* mul_mat_id_limits(const OpCaps& caps, const loom_tensor_t* n);
// Its dispatches: quantize_q8 + the int8 GEMV variant, or one of the
// MUL_MAT kernels' id variants. "" or the error.
std::string plan_mul_mat_id(const OpCaps& caps, const loom_tensor_t* n, uint32_t node_id, const Resolver& resolve,
                            const ScratchFn& scratch, std::vector<Dispatch>* out);

}  // namespace loom::vulkan
