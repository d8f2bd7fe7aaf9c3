// The example device: one device "example0" with its own memory
// (buffer.h), a stream that runs its kernels (stream.h), and a support
// table (supports_op in device.cpp) that claims only what ops.cpp computes:
// MUL_MAT, SOFT_MAX, ADD and SCALE on F32. The scheduler gives every other
// node of a graph to another device (the cpu plugin) and plans the copies.
#pragma once

#include "buffer.h"
#include "loom/plugin.h"

namespace example {

// Owned by the plugin context; lives until plugin shutdown. Immutable after
// construction, so its entries are thread-safe.
class Device {
 public:
  Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  loom_device_t* raw() { return &raw_; }
  BufferType& buffer_type() { return buffer_type_; }
  static Device* from(loom_device_t* raw) { return static_cast<Device*>(raw->context); }

 private:
  loom_device_t raw_;
  BufferType buffer_type_;
};

}  // namespace example
