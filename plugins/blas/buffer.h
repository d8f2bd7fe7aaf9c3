// Host-memory buffers of the BLAS device ("blas" buffer type): owned
// allocations from the host's aligned_alloc, or wrappers of caller memory
// (buffer_from_host_ptr) that never free it. A Buffer is not thread-safe
// (the host serialises calls per buffer); the BufferType is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/plugin.h"

namespace loom::blas {

class BufferType {
 public:
  static constexpr size_t kAlignment = 64;

  BufferType(loom_device_t* device, const loom_buffer_type_iface_t* iface);
  loom_buffer_type_t* handle() { return &handle_; }
  // New owned buffer of `size` bytes; RESOURCE_EXHAUSTED names the size.
  loom_status_t* alloc(size_t size, const loom_buffer_iface_t* iface, loom_buffer_t** out_buffer);

 private:
  loom_buffer_type_t handle_;
};

class Buffer {
 public:
  // Wrap `ptr` (not owned) as a buffer of `buffer_type`.
  static loom_status_t* wrap(loom_buffer_type_t* buffer_type, const loom_buffer_iface_t* iface,
                             void* ptr, size_t size, loom_buffer_t** out_buffer);
  static Buffer* from(loom_buffer_t* b) { return static_cast<Buffer*>(b->context); }

  // Frees the memory when owned, then the Buffer itself.
  void destroy();
  void* base() const { return base_; }
  loom_status_t* set_tensor(loom_tensor_t* tensor, const void* data, size_t offset, size_t size);
  loom_status_t* get_tensor(const loom_tensor_t* tensor, void* data, size_t offset, size_t size);
  loom_status_t* clear(uint8_t value);
  // Direct copy from another host-visible buffer when layouts match.
  loom_status_t* copy_tensor(const loom_tensor_t* src, loom_tensor_t* dst);

 private:
  friend class BufferType;
  Buffer(loom_buffer_type_t* buffer_type, const loom_buffer_iface_t* iface, void* base, size_t size,
         bool owned);
  // INVALID_ARGUMENT unless [tensor->data + offset, + size) lies in this buffer.
  loom_status_t* check_range(const char* what, const loom_tensor_t* tensor, size_t offset,
                             size_t size) const;

  loom_buffer_t handle_;
  void* base_;
  bool owned_;
};

}  // namespace loom::blas
