#include "buffer.h"

namespace loom::blas {

common::HostBufferConfig buffer_config() { return {"blas", "blas", 64, true}; }

}  // namespace loom::blas
