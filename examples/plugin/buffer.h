// The example device's memory: its own buffer type "example". Buffers are
// blocks the plugin allocates itself; is_host() answers false, so the host
// never reads or writes them through tensor->data: every transfer goes
// through set_tensor / get_tensor (as with a real accelerator's memory),
// and the scheduler plans copies between it and the cpu device.
#pragma once

#include <cstddef>

#include "loom/plugin.h"

namespace example {

constexpr size_t kAlignment = 64;

// One per device; lives until plugin shutdown.
class BufferType {
 public:
  explicit BufferType(loom_device_t* device);
  loom_buffer_type_t* handle() { return &raw_; }
  // Whether t's bytes lie inside a buffer of this type (kernels check their
  // operands with it before touching memory).
  static bool owns(const loom_buffer_type_t* type, const loom_tensor_t* t);

 private:
  loom_buffer_type_t raw_;
};

}  // namespace example
