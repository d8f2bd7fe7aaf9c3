#include "llm/kv_cache.hpp"

#include <string>

#include "loom/executor.hpp"
#include "loom/types.hpp"

namespace loom::llm {

StatusOr<KvCache> KvCache::create(Context& ctx, registry::Device& device, int64_t n_layer, int64_t kv_dim,
                                  int64_t n_ctx, loom_type_t type) {
  if (type != LOOM_TYPE_F32 && type != LOOM_TYPE_F16) {
    return invalid_argument(std::string("[llm.kv_cache] type ") + type_name(type) + " must be f32 or f16");
  }
  if (n_layer < 1 || kv_dim < 1 || n_ctx < 1) {
    return invalid_argument("[llm.kv_cache] n_layer " + std::to_string(n_layer) + ", kv_dim " +
                            std::to_string(kv_dim) + ", n_ctx " + std::to_string(n_ctx) + " must be >= 1");
  }
  KvCache c;
  c.n_ctx_ = n_ctx;
  c.kv_dim_ = kv_dim;
  std::vector<Tensor*> all;
  for (int64_t l = 0; l < n_layer; ++l) {
    LOOM_ASSIGN_OR_RETURN(Tensor * k, ctx.new_tensor(type, {kv_dim, n_ctx}, "cache_k." + std::to_string(l)));
    LOOM_ASSIGN_OR_RETURN(Tensor * v, ctx.new_tensor(type, {kv_dim, n_ctx}, "cache_v." + std::to_string(l)));
    c.k_.push_back(k);
    c.v_.push_back(v);
    all.push_back(k);
    all.push_back(v);
  }
  StatusOr<Buffer> b = allocate_tensors(device, all);
  if (!b.ok()) return b.status().with_context("llm.kv_cache");
  c.buffer_ = std::move(b).value();
  // Unwritten rows are masked out, but keep them finite (0 * NaN is NaN).
  LOOM_RETURN_IF_ERROR(c.buffer_.clear(0));
  return c;
}

}  // namespace loom::llm
