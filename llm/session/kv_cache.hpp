// Key/value cache of a llama model: per layer one K and one V tensor of
// [head_dim, n_ctx, n_head_kv], allocated once: layer l's tensors on
// layer_devices[l] (one buffer per distinct device). Row p of head g holds
// the key (value) of position p for kv head g; each kv head's rows are one
// contiguous run, so attention reads a head's keys front to back. Graphs
// write rows with SET_ROWS at the batch's positions (rows [head_dim, T,
// n_head_kv], indices [T, n_head_kv]) and read [0, n_kv) through views.
//
// The tensors are made in the model's Context (graphs must not mix
// contexts), so create the cache before marking the context for per-step
// graphs. Ownership: the cache owns its buffer; the tensors live as long as
// the Context. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/registry/buffer.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::llm {

class KvCache {
 public:
  // type: F32 or F16.
  static StatusOr<KvCache> create(Context& ctx, registry::Device& device, int64_t n_layer, int64_t head_dim,
                                  int64_t n_head_kv, int64_t n_ctx, loom_type_t type);
  static StatusOr<KvCache> create(Context& ctx, const std::vector<registry::Device*>& layer_devices,
                                  int64_t head_dim, int64_t n_head_kv, int64_t n_ctx, loom_type_t type);
  // Whether dev runs the SET_ROWS that writes a cache of this type and
  // head shape (probed on a tiny graph in a scratch context).
  static bool writable_on(const registry::Device& dev, loom_type_t type, int64_t head_dim, int64_t n_head_kv);

  Tensor* k(int64_t layer) const { return k_[static_cast<size_t>(layer)]; }
  Tensor* v(int64_t layer) const { return v_[static_cast<size_t>(layer)]; }
  int64_t n_ctx() const { return n_ctx_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t n_head_kv() const { return n_head_kv_; }
  int64_t kv_dim() const { return head_dim_ * n_head_kv_; }
  size_t bytes() const {
    size_t n = 0;
    for (const Buffer& b : buffers_) n += b.size();
    return n;
  }

 private:
  std::vector<Tensor*> k_, v_;
  int64_t n_ctx_ = 0;
  int64_t head_dim_ = 0;
  int64_t n_head_kv_ = 0;
  std::vector<Buffer> buffers_;
};

}  // namespace loom::llm
