// Byte layout facts of a tensor from its type, extents and strides, shared
// by the plugins (host buffers' and remote buffers' copy_tensor). Pure
// functions, thread-safe; the tensor's type must be valid (type_is_valid).
#pragma once

#include <cstddef>

#include "loom/plugin.h"

namespace loom::common {

// Bytes from t's data to the end of its last element (the dense size when
// contiguous; 0 for an empty tensor).
size_t tensor_span(const loom_tensor_t* t);
// Whether t's strides are the dense ones of its type and extents.
bool tensor_is_dense(const loom_tensor_t* t);

}  // namespace loom::common
