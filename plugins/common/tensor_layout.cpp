#include "common/tensor_layout.h"

#include "common/type_traits.h"

namespace loom::common {

size_t tensor_span(const loom_tensor_t* t) {
  const TypeTraits& tr = type_traits(t->type);
  size_t span = tr.type_size;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    const int64_t n = d == 0 ? t->ne[0] / tr.block_size : t->ne[d];
    if (n <= 0) return 0;
    span += static_cast<size_t>(n - 1) * t->nb[d];
  }
  return span;
}

bool tensor_is_dense(const loom_tensor_t* t) {
  const TypeTraits& tr = type_traits(t->type);
  size_t expect = tr.type_size;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (t->nb[d] != expect) return false;
    expect *= static_cast<size_t>(d == 0 ? t->ne[0] / tr.block_size : t->ne[d]);
  }
  return true;
}

}  // namespace loom::common
