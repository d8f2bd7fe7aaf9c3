// One host-memory buffer type and its buffers, shared by every plugin whose
// device memory is plain host memory (cpu, blas, null): owned allocations
// from the host's aligned_alloc, or wrappers of caller memory that never
// free it. The ABI tables live in host_buffer.cpp; a plugin only owns a
// HostBufferType and hands out its handle(). A HostBuffer is not
// thread-safe (the host serialises calls per buffer); the HostBufferType is
// (immutable after construction).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "loom/plugin.h"

namespace loom::common {

// Tensors kept in a layout of the plugin's own instead of the canonical
// bytes (loom.weight_layout in plugin.h): set_tensor / get_tensor convert,
// ranges in whole quant blocks. A type with a layout is not is_host() and
// makes no direct copies.
struct HostLayout {
  // nullptr when tensor `t` can be stored in this layout, else why not
  // (init_tensor refuses it with that reason).
  const char* (*unsupported)(const loom_tensor_t* t);
  // Canonical bytes [offset, offset + size) of t: from src into t->data, and
  // from t->data into dst. offset and size are whole blocks.
  void (*store)(const loom_tensor_t* t, const void* src, size_t offset, size_t size);
  void (*load)(const loom_tensor_t* t, void* dst, size_t offset, size_t size);
};

// What makes one plugin's host buffer type its own.
struct HostBufferConfig {
  std::string name;          // the buffer type's name, e.g. "cpu"
  std::string category;      // error-message prefix: "cpu" gives "[cpu.set_tensor] ..."
  size_t alignment = 64;     // of every owned allocation
  bool direct_copy = true;   // offer copy_tensor (dense copies from host buffers)
  const HostLayout* layout = nullptr;  // static; nullptr: canonical bytes
};

// A buffer type owned by its device (`device` must outlive it); lives until
// plugin shutdown. Not copyable: the ABI handle points back at it.
class HostBufferType {
 public:
  HostBufferType(loom_device_t* device, HostBufferConfig config);
  HostBufferType(const HostBufferType&) = delete;
  HostBufferType& operator=(const HostBufferType&) = delete;

  static HostBufferType* from(loom_buffer_type_t* bt) { return static_cast<HostBufferType*>(bt->context); }
  // Borrowed; valid as long as this object.
  loom_buffer_type_t* handle() { return &handle_; }
  const HostBufferConfig& config() const { return config_; }

  // New owned buffer of `size` bytes; the caller owns *out_buffer and frees
  // it through its iface->free. RESOURCE_EXHAUSTED names the size.
  loom_status_t* alloc(size_t size, loom_buffer_t** out_buffer);
  // Wrap `ptr` (not owned; must outlive the buffer) as a buffer of this type;
  // the caller owns *out_buffer.
  loom_status_t* wrap(void* ptr, size_t size, loom_buffer_t** out_buffer);

 private:
  HostBufferConfig config_;
  loom_buffer_type_t handle_;
};

// Whether this buffer type's memory can be read through tensor->data (any
// host buffer type); what cpu and blas kernels need.
bool is_host_buffer_type(const loom_buffer_type_t* buffer_type);

}  // namespace loom::common
