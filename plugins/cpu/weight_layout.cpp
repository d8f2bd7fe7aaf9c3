#include "weight_layout.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "common/env.h"
#include "common/type_traits.h"
#include "ops/ops.h"

namespace loom::cpu {
namespace {

std::atomic<const loom_buffer_type_t*> g_weight_type{nullptr};

size_t block_bytes(int32_t type) { return common::type_traits(type).type_size; }

// Byte offset, within a repacked tensor, of canonical block `b` (row-major
// over (row, block index)), and of its scale / quant chunk t.
struct Place {
  size_t super;  // the superblock's first byte
  size_t lane;   // row within the group
};
Place place_of(size_t b, int64_t nblk, size_t bs) {
  const auto row = static_cast<int64_t>(b) / nblk;
  const auto i = static_cast<int64_t>(b) % nblk;
  const int64_t g = row / kWeightGroupRows;
  return {static_cast<size_t>(g * nblk + i) * bs * kWeightGroupRows, static_cast<size_t>(row % kWeightGroupRows)};
}

// One canonical block <-> its scattered place in the superblock.
void scatter_block(const uint8_t* blk, uint8_t* base, Place p, size_t bs) {
  uint8_t* sb = base + p.super;
  std::memcpy(sb + 2 * p.lane, blk, 2);
  const size_t chunks = (bs - 2) / 4;
  for (size_t t = 0; t < chunks; ++t) std::memcpy(sb + 16 + 32 * t + 4 * p.lane, blk + 2 + 4 * t, 4);
}
void gather_block(const uint8_t* base, Place p, size_t bs, uint8_t* blk) {
  const uint8_t* sb = base + p.super;
  std::memcpy(blk, sb + 2 * p.lane, 2);
  const size_t chunks = (bs - 2) / 4;
  for (size_t t = 0; t < chunks; ++t) std::memcpy(blk + 2 + 4 * t, sb + 16 + 32 * t + 4 * p.lane, 4);
}

void store(const loom_tensor_t* t, const void* src, size_t offset, size_t size) {
  const size_t bs = block_bytes(t->type);
  const int64_t nblk = t->ne[0] / common::type_traits(t->type).block_size;
  auto* base = static_cast<uint8_t*>(t->data);
  const auto* in = static_cast<const uint8_t*>(src);
  for (size_t b = offset / bs; b < (offset + size) / bs; ++b, in += bs) scatter_block(in, base, place_of(b, nblk, bs), bs);
}

void load(const loom_tensor_t* t, void* dst, size_t offset, size_t size) {
  const size_t bs = block_bytes(t->type);
  const int64_t nblk = t->ne[0] / common::type_traits(t->type).block_size;
  const auto* base = static_cast<const uint8_t*>(t->data);
  auto* out = static_cast<uint8_t*>(dst);
  for (size_t b = offset / bs; b < (offset + size) / bs; ++b, out += bs) gather_block(base, place_of(b, nblk, bs), bs, out);
}

const common::HostLayout kLayout = {weight_layout_unsupported, store, load};

}  // namespace

const common::HostLayout* weight_layout() { return &kLayout; }

common::HostBufferConfig weight_buffer_config() {
  common::HostBufferConfig c{"cpu_weights", "cpu", 64, false};
  c.layout = &kLayout;
  return c;
}

const char* weight_layout_unsupported(const loom_tensor_t* t) {
  if (t == nullptr) return "null tensor";
  if (t->type != LOOM_TYPE_Q8_0 && t->type != LOOM_TYPE_Q4_0) return "only Q8_0 and Q4_0 matrices are repacked";
  if (t->view_src != nullptr) return "a view";
  if (t->ne[2] != 1 || t->ne[3] != 1) return "more than 2 dimensions";
  if (t->ne[1] % kWeightGroupRows != 0) return "rows not a multiple of 8";
  const size_t bs = block_bytes(t->type);
  const int64_t nblk = t->ne[0] / common::type_traits(t->type).block_size;
  if (t->ne[0] % 32 != 0 || t->nb[0] != bs || t->nb[1] != bs * static_cast<size_t>(nblk)) return "not dense";
  return nullptr;
}

bool float_weight_copied(const loom_tensor_t* t) {
  if (t == nullptr || !common::type_traits(t->type).is_float || t->view_src != nullptr) return false;
  if (t->ne[2] != 1 || t->ne[3] != 1) return false;
  const size_t es = common::type_traits(t->type).type_size;
  if (t->nb[0] != es || t->nb[1] != es * static_cast<size_t>(t->ne[0])) return false;
  return es * static_cast<size_t>(t->ne[0] * t->ne[1]) >= kFloatWeightCopyMin;
}

void set_weight_buffer_type(const loom_buffer_type_t* bt) { g_weight_type.store(bt); }

bool is_repacked(const loom_tensor_t* t) {
  const loom_buffer_type_t* wt = g_weight_type.load(std::memory_order_relaxed);
  return wt != nullptr && t->buffer != nullptr && t->buffer->buffer_type == wt;
}

void repacked_row(const loom_tensor_t* t, int64_t row, void* out) {
  const size_t bs = block_bytes(t->type);
  const int64_t nblk = t->ne[0] / common::type_traits(t->type).block_size;
  const auto* base = static_cast<const uint8_t*>(t->data);
  auto* o = static_cast<uint8_t*>(out);
  for (int64_t i = 0; i < nblk; ++i) {
    gather_block(base, place_of(static_cast<size_t>(row * nblk + i), nblk, bs), bs, o + static_cast<size_t>(i) * bs);
  }
}

bool weight_layout_enabled() {
  static const bool on = [] {
    return int8_dot_built() && common::plugin_env_flag("LOOM_CPU_REPACK", true);
  }();
  return on;
}

}  // namespace loom::cpu
