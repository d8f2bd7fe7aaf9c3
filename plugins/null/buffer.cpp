#include "buffer.h"

namespace loom::null {

common::HostBufferConfig buffer_config() { return {"null", "null", 64, false}; }

}  // namespace loom::null
