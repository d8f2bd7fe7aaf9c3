// The null plugin's memory: one buffer type ("null") whose buffers are plain
// host memory taken from the host's aligned_alloc. A new backend replaces
// this with its device memory (keep the table layout and the checks).
#pragma once

#include <cstddef>
#include <string>

#include "loom/plugin.h"

namespace loom::null {

// A buffer type owned by its device; lives until plugin shutdown.
// Thread-safe (immutable after construction).
class BufferType {
 public:
  BufferType(loom_device_t* device, std::string name, size_t alignment);
  BufferType(const BufferType&) = delete;
  BufferType& operator=(const BufferType&) = delete;

  loom_buffer_type_t* raw() { return &raw_; }
  const std::string& name() const { return name_; }
  size_t alignment() const { return alignment_; }
  static BufferType* from(loom_buffer_type_t* raw) { return static_cast<BufferType*>(raw->context); }

 private:
  std::string name_;
  size_t alignment_;
  loom_buffer_type_t raw_;
};

}  // namespace loom::null
