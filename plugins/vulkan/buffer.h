// Vulkan memory as loom buffers. One buffer = one VkBuffer bound to its own
// VkDeviceMemory; shaders bind it whole, or a window of it when it is larger
// than maxStorageBufferRange. Two kinds of buffer type:
//  - device memory that the host cannot map (discrete GPUs): a tensor's
//    address (base + offset) is not a host pointer; the base is a
//    non-canonical address made from a unique id, so it can never equal a
//    real pointer. Host copies go through the device's staging buffer.
//  - host-visible memory (is_host): the base is the persistent mapping, so
//    the CPU plugin reads and writes these tensors in place and the
//    scheduler copies nothing between them. On integrated GPUs and CPU
//    implementations (lavapipe) the device's own type is of this kind.
//    Buffers wrapping host memory (buffer_from_host_ptr, through
//    VK_EXT_external_memory_host) are of this type too.
// The device maps any data pointer back to its buffer (Device::find_buffer).
// Buffers are not thread-safe (the host serialises calls per buffer); the
// buffer type is.
#pragma once

#include <cstdint>
#include <string>

#include "loader.h"
#include "loom/plugin.h"

namespace loom::vulkan {

class Device;

class BufferType {
 public:
  // host: memory of `memory_type` is host visible + coherent and mapped;
  // data pointers are host pointers.
  BufferType(Device* device, std::string name, uint32_t memory_type, bool host);
  BufferType(const BufferType&) = delete;
  BufferType& operator=(const BufferType&) = delete;

  loom_buffer_type_t* handle() { return &raw_; }
  static BufferType* from(const loom_buffer_type_t* t) {
    return static_cast<BufferType*>(t->context);
  }
  static bool is_ours(const loom_buffer_type_t* t);
  Device* device() { return device_; }
  const std::string& name() const { return name_; }
  bool host() const { return host_; }

  // RESOURCE_EXHAUSTED naming the size and the limit it breaks (largest
  // allocation, heap size) or the failed call.
  loom_status_t* alloc(size_t size, loom_buffer_t** out);
  // Wrap host memory [ptr, ptr + size) (host types only; the device has
  // VK_EXT_external_memory_host). The pages around it are imported whole,
  // so they must stay mapped while the buffer lives.
  loom_status_t* import(void* ptr, size_t size, loom_buffer_t** out);

 private:
  loom_buffer_type_t raw_;
  Device* device_;
  std::string name_;
  uint32_t memory_type_;
  bool host_;
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
  // Bytes of the VkBuffer; data starts at byte offset lead() in it (host
  // pointers imported from a page boundary below them), so a tensor at
  // base() + k lives at VkBuffer offset lead() + k.
  uint64_t alloc_size() const { return alloc_size_; }
  uint64_t lead() const { return lead_; }
  // Where tensors of this buffer point: the mapping (host buffers) or a
  // non-canonical address made from the id.
  uint64_t base() const { return base_; }
  size_t size() const { return raw_.size; }
  Device* device() { return device_; }

  // Byte offset of a data pointer from base(); false when outside.
  bool offset_of(const void* data, uint64_t* out) const;
  // Host pointer of base() (host buffers), else null.
  uint8_t* mapped() const { return mapped_; }

  loom_status_t* set(const loom_tensor_t* t, const void* data, size_t offset, size_t size);
  loom_status_t* get(const loom_tensor_t* t, void* data, size_t offset, size_t size);
  loom_status_t* clear(uint8_t value);
  loom_status_t* copy_from(const loom_tensor_t* src, const loom_tensor_t* dst);

  // The bytes [offset, offset + size) of tensor t as an offset into the
  // VkBuffer (lead() included); a status naming `op` when t does not live
  // here or the range leaves the buffer.
  loom_status_t* span(const char* op, const loom_tensor_t* t, size_t offset, size_t size,
                      uint64_t* out);

 private:
  friend class BufferType;
  friend class Device;  // sets base_ when registering
  Buffer() = default;
  // Creates the VkBuffer (size alloc_size_, external host memory when
  // `external`) and binds `memory_`-to-be; the caller allocates memory.
  loom_status_t* create_vk_buffer(bool external);
  // The range [offset, offset + size) of tensor t, as an offset into this
  // buffer; a status when it leaves the buffer.
  loom_status_t* range(const char* op, const loom_tensor_t* t, size_t offset, size_t size,
                       uint64_t* out);

  loom_buffer_t raw_{};
  Device* device_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint8_t* mapped_ = nullptr;  // host view of byte lead_ (host buffers)
  bool owns_mapping_ = false;  // vkMapMemory was called (not an import)
  uint64_t alloc_size_ = 0;
  uint64_t lead_ = 0;
  uint64_t base_ = 0;
};

}  // namespace loom::vulkan
