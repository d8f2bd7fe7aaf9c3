#include "llm/session/kv_cache.hpp"

#include <algorithm>
#include <string>

#include "loom/sched/executor.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/runtime/types.hpp"

namespace loom::llm {

StatusOr<KvCache> KvCache::create(Context& ctx, registry::Device& device, int64_t n_layer, int64_t head_dim,
                                  int64_t n_head_kv, int64_t n_ctx, loom_type_t type) {
  if (n_layer < 1) {
    return invalid_argument("[llm.kv_cache] n_layer " + std::to_string(n_layer) + " must be >= 1");
  }
  return create(ctx, std::vector<registry::Device*>(static_cast<size_t>(n_layer), &device), head_dim, n_head_kv,
                n_ctx, type);
}

int64_t KvCache::window_rows(int64_t n_swa, int64_t n_batch, int64_t slot_ctx) {
  if (n_swa <= 0) return slot_ctx;
  return std::min(slot_ctx, n_swa + std::max(n_batch, n_swa / 4));
}

bool KvCache::writable_on(const registry::Device& dev, loom_type_t type, int64_t head_dim, int64_t n_head_kv) {
  Context ctx;
  StatusOr<Tensor*> dst = ctx.new_tensor(type, {head_dim, 2, n_head_kv}, "probe_cache");
  StatusOr<Tensor*> src = ctx.new_tensor(LOOM_TYPE_F32, {head_dim, 1, n_head_kv}, "probe_src");
  StatusOr<Tensor*> rows = ctx.new_tensor(LOOM_TYPE_I64, {1, n_head_kv}, "probe_rows");
  if (!dst.ok() || !src.ok() || !rows.ok()) return false;
  StatusOr<Tensor*> node = op::set_rows(ctx, *dst, *src, *rows);
  return node.ok() && dev.supports_op(*node);
}

StatusOr<KvCache> KvCache::create(Context& ctx, const std::vector<registry::Device*>& layer_devices,
                                  int64_t head_dim, int64_t n_head_kv, int64_t n_ctx, loom_type_t type,
                                  const KvWindow& window) {
  const auto n_layer = static_cast<int64_t>(layer_devices.size());
  if (type != LOOM_TYPE_F32 && type != LOOM_TYPE_F16 && type != LOOM_TYPE_Q8_0) {
    return invalid_argument(std::string("[llm.kv_cache] type ") + type_name(type) + " must be f32, f16 or q8_0");
  }
  if (type == LOOM_TYPE_Q8_0 && head_dim % 32 != 0) {
    return invalid_argument("[llm.kv_cache] type q8_0 keeps each head's row in blocks of 32 values; this model's heads are " +
                            std::to_string(head_dim) + " wide (use --kv-type f16)");
  }
  if (n_layer < 1 || head_dim < 1 || n_head_kv < 1 || n_ctx < 1) {
    return invalid_argument("[llm.kv_cache] n_layer " + std::to_string(n_layer) + ", head_dim " +
                            std::to_string(head_dim) + ", n_head_kv " + std::to_string(n_head_kv) + ", n_ctx " +
                            std::to_string(n_ctx) + " must be >= 1");
  }
  const bool has_window = !window.local.empty();
  if (window.n_seq < 1 || n_ctx % window.n_seq != 0 ||
      (has_window && (static_cast<int64_t>(window.local.size()) != n_layer || window.n_swa < 1 ||
                      window.rows < window.n_swa || window.rows > n_ctx / window.n_seq))) {
    return invalid_argument("[llm.kv_cache] window of " + std::to_string(window.rows) + " rows (n_swa " +
                            std::to_string(window.n_swa) + ", " + std::to_string(window.local.size()) +
                            " layers) over " + std::to_string(window.n_seq) + " slots of a cache of " +
                            std::to_string(n_ctx) + " rows and " + std::to_string(n_layer) + " layers");
  }
  KvCache c;
  c.n_ctx_ = n_ctx;
  c.n_seq_ = window.n_seq;
  c.n_swa_ = window.n_swa;
  c.window_rows_ = has_window ? window.rows : n_ctx / window.n_seq;
  c.local_ = has_window ? window.local : std::vector<bool>(static_cast<size_t>(n_layer), false);
  c.base_.assign(static_cast<size_t>(window.n_seq), 0);
  c.head_dim_ = head_dim;
  c.n_head_kv_ = n_head_kv;
  std::vector<registry::Device*> devs;  // distinct, in first-use order
  std::vector<std::vector<Tensor*>> per_dev;
  for (int64_t l = 0; l < n_layer; ++l) {
    registry::Device* d = layer_devices[static_cast<size_t>(l)];
    if (!d) return invalid_argument("[llm.kv_cache] layer " + std::to_string(l) + " has no device");
    size_t di = 0;
    while (di < devs.size() && devs[di] != d) ++di;
    if (di == devs.size()) {
      devs.push_back(d);
      per_dev.emplace_back();
    }
    // A local layer of a windowed cache: window_rows per slot.
    const int64_t rows = c.bounded(l) ? c.window_rows_ * c.n_seq_ : n_ctx;
    LOOM_ASSIGN_OR_RETURN(Tensor * k, ctx.new_tensor(type, {head_dim, rows, n_head_kv}, "cache_k." + std::to_string(l)));
    LOOM_ASSIGN_OR_RETURN(Tensor * v, ctx.new_tensor(type, {head_dim, rows, n_head_kv}, "cache_v." + std::to_string(l)));
    c.k_.push_back(k);
    c.v_.push_back(v);
    per_dev[di].push_back(k);
    per_dev[di].push_back(v);
  }
  for (size_t di = 0; di < devs.size(); ++di) {
    StatusOr<Buffer> b = allocate_tensors(*devs[di], per_dev[di]);
    if (!b.ok()) return b.status().with_context("llm.kv_cache");
    c.buffers_.push_back(std::move(b).value());
    // Unwritten rows are masked out, but keep them finite (0 * NaN is NaN).
    LOOM_RETURN_IF_ERROR(c.buffers_.back().clear(0));
  }
  return c;
}

}  // namespace loom::llm
