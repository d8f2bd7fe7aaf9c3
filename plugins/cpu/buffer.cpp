#include "buffer.h"

namespace loom::cpu {

common::HostBufferConfig buffer_config() { return {"cpu", "cpu", 64, true}; }

}  // namespace loom::cpu
