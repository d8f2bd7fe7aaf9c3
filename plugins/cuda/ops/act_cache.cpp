#include "act_cache.h"

#include "common/type_traits.h"

namespace loom::cuda {

ByteSpan tensor_span(const loom_tensor_t* t) {
  const auto lo = reinterpret_cast<uintptr_t>(t->data);
  for (int d = 0; d < 4; ++d) {
    if (t->ne[d] <= 0) return {lo, lo};
  }
  const common::TypeTraits& tr = common::type_traits(t->type);
  // Row 0: whole blocks for quantized types, else the last element's end.
  uint64_t end = tr.is_quantized ? static_cast<uint64_t>(t->ne[0] / tr.block_size) * tr.type_size
                                 : static_cast<uint64_t>(t->ne[0] - 1) * t->nb[0] + tr.type_size;
  for (int d = 1; d < 4; ++d) end += static_cast<uint64_t>(t->ne[d] - 1) * t->nb[d];
  return {lo, lo + end};
}

bool spans_overlap(ByteSpan a, ByteSpan b) { return a.lo < b.hi && b.lo < a.hi; }

bool ActCache::find(const loom_tensor_t* b, int block, uint64_t generation, ActQ8* out) const {
  if (!valid_ || b->data != data_ || b->type != type_ || block != block_ || generation != generation_) return false;
  for (int d = 0; d < 4; ++d) {
    if (b->ne[d] != ne_[d] || b->nb[d] != nb_[d]) return false;
  }
  *out = act_;
  return true;
}

void ActCache::store(const loom_tensor_t* b, int block, uint64_t generation, ActQ8 act) {
  valid_ = true;
  data_ = b->data;
  type_ = b->type;
  for (int d = 0; d < 4; ++d) {
    ne_[d] = b->ne[d];
    nb_[d] = b->nb[d];
  }
  block_ = block;
  generation_ = generation;
  span_ = tensor_span(b);
  act_ = act;
}

void ActCache::note_write(const loom_tensor_t* written) {
  if (valid_ && spans_overlap(tensor_span(written), span_)) valid_ = false;
}

}  // namespace loom::cuda
