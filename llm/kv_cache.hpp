// Key/value cache of a llama model: per layer one K and one V tensor of
// [kv_dim, n_ctx] (row p holds the keys/values of position p, all kv heads
// side by side), allocated once: layer l's tensors on layer_devices[l] (one
// buffer per distinct device). Graphs write rows with
// SET_ROWS at the batch's positions and read [0, n_kv) through views.
//
// The tensors are made in the model's Context (graphs must not mix
// contexts), so create the cache before marking the context for per-step
// graphs. Ownership: the cache owns its buffer; the tensors live as long as
// the Context. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/buffer.hpp"
#include "loom/registry.hpp"
#include "loom/tensor.hpp"

namespace loom::llm {

class KvCache {
 public:
  // type: F32 or F16.
  static StatusOr<KvCache> create(Context& ctx, registry::Device& device, int64_t n_layer, int64_t kv_dim,
                                  int64_t n_ctx, loom_type_t type);
  static StatusOr<KvCache> create(Context& ctx, const std::vector<registry::Device*>& layer_devices,
                                  int64_t kv_dim, int64_t n_ctx, loom_type_t type);

  Tensor* k(int64_t layer) const { return k_[static_cast<size_t>(layer)]; }
  Tensor* v(int64_t layer) const { return v_[static_cast<size_t>(layer)]; }
  int64_t n_ctx() const { return n_ctx_; }
  int64_t kv_dim() const { return kv_dim_; }
  size_t bytes() const {
    size_t n = 0;
    for (const Buffer& b : buffers_) n += b.size();
    return n;
  }

 private:
  std::vector<Tensor*> k_, v_;
  int64_t n_ctx_ = 0;
  int64_t kv_dim_ = 0;
  std::vector<Buffer> buffers_;
};

}  // namespace loom::llm
