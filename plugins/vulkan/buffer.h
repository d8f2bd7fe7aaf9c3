// Vulkan device memory as loom buffers. One buffer = one VkBuffer bound to
// its own VkDeviceMemory, used whole as storage buffer by the shaders. The
// address a tensor gets (base + offset) is not a host pointer: a buffer's
// base is id << 32 (ids never reused while the plugin lives), so a data
// pointer maps back to its buffer and offset. Host copies go through a
// mapping when the memory is host visible (integrated GPUs, lavapipe),
// else through the device's staging buffer. Buffers are not thread-safe
// (the host serialises calls per buffer); the buffer type is.
#pragma once

#include <cstdint>
#include <string>

#include "loader.h"
#include "loom/plugin.h"

namespace loom::vulkan {

class Device;

class BufferType {
 public:
  BufferType(Device* device, std::string name);
  BufferType(const BufferType&) = delete;
  BufferType& operator=(const BufferType&) = delete;

  loom_buffer_type_t* handle() { return &raw_; }
  static BufferType* from(const loom_buffer_type_t* t) {
    return static_cast<BufferType*>(t->context);
  }
  static bool is_ours(const loom_buffer_type_t* t);
  Device* device() { return device_; }
  const std::string& name() const { return name_; }

  // RESOURCE_EXHAUSTED naming the size and the limit it breaks (largest
  // storage buffer, largest allocation, heap size) or the failed call.
  loom_status_t* alloc(size_t size, loom_buffer_t** out);

 private:
  loom_buffer_type_t raw_;
  Device* device_;
  std::string name_;
};

class Buffer {
 public:
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  static Buffer* from(const loom_buffer_t* b) { return static_cast<Buffer*>(b->context); }
  static bool is_ours(const loom_buffer_t* b);
  loom_buffer_t* handle() { return &raw_; }
  VkBuffer vk_buffer() const { return buffer_; }
  uint64_t alloc_size() const { return alloc_size_; }
  uint64_t base() const { return id_ << 32; }
  Device* device() { return device_; }

  // Byte offset of a data pointer in this buffer; false when outside.
  bool offset_of(const void* data, uint64_t* out) const;

  loom_status_t* set(const loom_tensor_t* t, const void* data, size_t offset, size_t size);
  loom_status_t* get(const loom_tensor_t* t, void* data, size_t offset, size_t size);
  loom_status_t* clear(uint8_t value);
  loom_status_t* copy_from(const loom_tensor_t* src, const loom_tensor_t* dst);

 private:
  friend class BufferType;
  Buffer() = default;
  // The range [offset, offset + size) of tensor t, as an offset into this
  // buffer; a status when it leaves the buffer.
  loom_status_t* range(const char* op, const loom_tensor_t* t, size_t offset, size_t size,
                       uint64_t* out);

  loom_buffer_t raw_{};
  Device* device_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint8_t* mapped_ = nullptr;
  uint64_t alloc_size_ = 0;
  uint64_t id_ = 0;
};

}  // namespace loom::vulkan
