// Key/value cache of a llama model: per layer one K and one V tensor of
// [head_dim, rows, n_head_kv], allocated once: layer l's tensors on
// layer_devices[l] (one buffer per distinct device). Row r of head g holds
// the key (value) of one position for kv head g; each kv head's rows are one
// contiguous run, so attention reads a head's keys front to back. Graphs
// write rows with SET_ROWS at the batch's rows (rows [head_dim, T,
// n_head_kv], indices [T, n_head_kv]) and read [0, n_kv) through views.
//
// Rows are n_seq slots. A global layer's slot holds every position of its
// sequence: n_ctx / n_seq rows, position p in row p of the slot. A local
// (sliding-window) layer with a KvWindow holds only window_rows() per slot
// (window_rows(), below): position p in row p - base(seq) of the slot. Keys
// are stored after RoPE (at their absolute positions), so rows can move:
// when a write would pass the slot's last row, the session first moves the
// n_swa - 1 rows still visible to the slot's front and raises base
// (llm/session/kv_window.hpp). Without a window every layer is global.
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

// The sliding-window layers' bounded layout (KvCache::create).
struct KvWindow {
  int32_t n_seq = 1;         // slots (the cache's n_ctx is n_seq slots of n_ctx / n_seq rows)
  int64_t n_swa = 0;         // the window: a token sees its own and the n_swa - 1 earlier positions
  int64_t rows = 0;          // rows per slot of a local layer (KvCache::window_rows)
  std::vector<bool> local;   // per layer: bounded (empty: none)
};

class KvCache {
 public:
  // type: F32, F16 or Q8_0 (an 8-bit cache: head_dim a multiple of 32, rows
  // of whole blocks; read by ATTENTION of ABI 1.6, or through a CPY to F32 on
  // the unfused path). n_ctx: the rows of a global layer, every slot's.
  static StatusOr<KvCache> create(Context& ctx, registry::Device& device, int64_t n_layer, int64_t head_dim,
                                  int64_t n_head_kv, int64_t n_ctx, loom_type_t type);
  static StatusOr<KvCache> create(Context& ctx, const std::vector<registry::Device*>& layer_devices,
                                  int64_t head_dim, int64_t n_head_kv, int64_t n_ctx, loom_type_t type,
                                  const KvWindow& window = {});
  // Whether dev runs the SET_ROWS that writes a cache of this type and
  // head shape (probed on a tiny graph in a scratch context).
  static bool writable_on(const registry::Device& dev, loom_type_t type, int64_t head_dim, int64_t n_head_kv);
  // The KV size rule of a local layer: rows per slot
  //   W = n_swa + max(n_batch, n_swa / 4), at most slot_ctx
  // (slot_ctx when n_swa <= 0). W >= n_swa - 1 + n_batch, so after a move a
  // whole batch fits; moving n_swa - 1 rows once every W - n_swa + 1 >=
  // n_swa / 4 tokens costs at most ~4 row copies per token, against the
  // n_swa rows each token's attention reads.
  static int64_t window_rows(int64_t n_swa, int64_t n_batch, int64_t slot_ctx);

  Tensor* k(int64_t layer) const { return k_[static_cast<size_t>(layer)]; }
  Tensor* v(int64_t layer) const { return v_[static_cast<size_t>(layer)]; }
  int64_t n_layer() const { return static_cast<int64_t>(k_.size()); }
  int64_t n_ctx() const { return n_ctx_; }  // a global layer's rows, every slot's
  int64_t head_dim() const { return head_dim_; }
  int64_t n_head_kv() const { return n_head_kv_; }
  int64_t kv_dim() const { return head_dim_ * n_head_kv_; }
  int32_t n_seq() const { return n_seq_; }
  int64_t slot_ctx() const { return n_ctx_ / n_seq_; }
  // Whether local layers hold fewer rows than global ones, and how many per slot.
  bool windowed() const { return window_rows_ < slot_ctx(); }
  int64_t window_rows() const { return window_rows_; }
  int64_t n_swa() const { return n_swa_; }
  bool bounded(int64_t layer) const { return windowed() && local_[static_cast<size_t>(layer)]; }
  // The first position a slot's local rows hold (row 0); 0 unless windowed().
  int64_t base(int32_t seq) const { return base_[static_cast<size_t>(seq)]; }
  void set_base(int32_t seq, int64_t b) { base_[static_cast<size_t>(seq)] = b; }
  // The buffers' bytes (with their alignment), and the K and V tensors' alone.
  size_t bytes() const {
    size_t n = 0;
    for (const Buffer& b : buffers_) n += b.size();
    return n;
  }
  size_t tensor_bytes() const {
    size_t n = 0;
    for (size_t l = 0; l < k_.size(); ++l) n += k_[l]->nbytes() + v_[l]->nbytes();
    return n;
  }

 private:
  std::vector<Tensor*> k_, v_;
  int64_t n_ctx_ = 0;
  int64_t head_dim_ = 0;
  int64_t n_head_kv_ = 0;
  int32_t n_seq_ = 1;
  int64_t n_swa_ = 0;
  int64_t window_rows_ = 0;
  std::vector<bool> local_;
  std::vector<int64_t> base_;
  std::vector<Buffer> buffers_;
};

}  // namespace loom::llm
