#include "weight_layout.h"

#include <atomic>
#include <cstring>

#include "common/env.h"

namespace loom::cuda {
namespace {

std::atomic<const loom_buffer_type_iface_t*> g_weights_iface{nullptr};

}  // namespace

bool split_shape(int32_t type, SplitShape* out) {
  switch (type) {
    case LOOM_TYPE_Q4_0:
      *out = {32, 18, 16};
      return true;
    case LOOM_TYPE_Q8_0:
      *out = {32, 34, 32};
      return true;
    default:
      return false;
  }
}

const char* weight_layout_unsupported(const loom_tensor_t* t) {
  SplitShape s{};
  if (t == nullptr) return "null tensor";
  if (!split_shape(t->type, &s)) return "only Q8_0 and Q4_0 matrices are split";
  if (t->view_src != nullptr) return "a view";
  if (t->ne[2] != 1 || t->ne[3] != 1)
    return "not one matrix (a stack of experts stays in GGUF's blocks)";
  if (t->ne[0] <= 0 || t->ne[1] <= 0 || t->ne[0] % s.elems != 0) return "rows not whole blocks";
  const size_t row = static_cast<size_t>(t->ne[0] / s.elems) * static_cast<size_t>(s.block_bytes);
  if (t->nb[0] != static_cast<size_t>(s.block_bytes) || t->nb[1] != row) return "not dense";
  return nullptr;
}

bool weight_layout_enabled() { return common::plugin_env_flag("LOOM_CUDA_REPACK", true); }

void set_weights_type_iface(const loom_buffer_type_iface_t* iface) { g_weights_iface.store(iface); }

bool is_split(const loom_tensor_t* t) {
  const loom_buffer_type_iface_t* iface = g_weights_iface.load();
  return t != nullptr && iface != nullptr && t->buffer != nullptr &&
         t->buffer->buffer_type != nullptr && t->buffer->buffer_type->iface == iface;
}

void split_blocks(const SplitShape& s, const uint8_t* canonical, size_t count, uint8_t* quants,
                  uint8_t* scales) {
  const size_t q = static_cast<size_t>(s.quant_bytes);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* b = canonical + i * static_cast<size_t>(s.block_bytes);
    std::memcpy(scales + 2 * i, b, 2);
    std::memcpy(quants + q * i, b + 2, q);
  }
}

void join_blocks(const SplitShape& s, const uint8_t* quants, const uint8_t* scales, size_t count,
                 uint8_t* canonical) {
  const size_t q = static_cast<size_t>(s.quant_bytes);
  for (size_t i = 0; i < count; ++i) {
    uint8_t* b = canonical + i * static_cast<size_t>(s.block_bytes);
    std::memcpy(b, scales + 2 * i, 2);
    std::memcpy(b + 2, quants + q * i, q);
  }
}

size_t split_block_count(const loom_tensor_t* t, const SplitShape& s) {
  size_t n = 1;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) n *= static_cast<size_t>(t->ne[d] > 0 ? t->ne[d] : 0);
  return n / static_cast<size_t>(s.elems);
}

}  // namespace loom::cuda
