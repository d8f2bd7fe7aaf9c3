// The CUDA device's three buffer types. kDevice: device memory
// (cudaMalloc) behind a caching pool — freed buffers are kept for reuse up
// to a cap, and given back to the driver before an allocation would fail.
// kPinned: page-locked host memory (cudaHostAlloc, portable and
// mapped) that copies to and from the GPU asynchronously at full link
// speed; is_host, so CPU-like devices read it in place. kWeights
// ("cuda<N>_weights", loom.weight_layout): device memory whose Q8_0 / Q4_0
// matrices are in the split layout (weight_layout.h); set_tensor and
// get_tensor convert, copy_tensor declines (the host then copies through
// get_tensor). Out of memory is a
// RESOURCE_EXHAUSTED status naming the requested and free bytes; the device
// stays usable. Both types are thread-safe; a buffer is not (the host
// serialises calls per buffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "loom/plugin.h"

namespace loom::cuda {

class Device;

class BufferType {
 public:
  enum class Kind { kDevice, kPinned, kWeights };
  BufferType(Device* device, Kind kind);
  ~BufferType();  // frees the pool
  BufferType(const BufferType&) = delete;
  BufferType& operator=(const BufferType&) = delete;

  loom_buffer_type_t* handle() { return &handle_; }
  static BufferType* from(loom_buffer_type_t* bt) { return static_cast<BufferType*>(bt->context); }
  // Whether bt is a buffer type of this plugin (any CUDA device).
  static bool is_ours(const loom_buffer_type_t* bt);
  bool pinned() const { return kind_ == Kind::kPinned; }
  bool weights() const { return kind_ == Kind::kWeights; }
  Device* device() const { return device_; }
  const std::string& name() const { return name_; }

  loom_status_t* alloc(size_t size, loom_buffer_t** out);
  // Memory of a freed buffer: back to the pool, or to the driver past the cap.
  void release(void* ptr, size_t size);
  // Give every cached block back to the driver (before reporting OOM).
  void trim();
  size_t cached_bytes();

 private:
  void* raw_alloc(size_t size);  // nullptr on failure (error cleared)
  void raw_free(void* ptr);

  Device* device_;
  Kind kind_;
  std::string name_;
  loom_buffer_type_t handle_;
  std::mutex mutex_;
  std::multimap<size_t, void*> cache_;  // size -> block
  size_t cached_ = 0;
  size_t cap_ = 0;  // most bytes kept cached
};

}  // namespace loom::cuda
