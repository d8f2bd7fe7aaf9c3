// RAII owners of plugin objects. Each keeps the plugin library loaded (and
// counted as a live object) until it is released, so a plugin is never
// unloaded while something it made is still alive. Move-only; not
// thread-safe.
#pragma once

#include <cstddef>
#include <memory>

#include "loom/plugin.h"
#include "loom/status.hpp"

namespace loom {

namespace registry {
class PluginHandle;  // the loaded library; internal
}

class Buffer {
 public:
  Buffer() = default;
  Buffer(loom_buffer_t* raw, std::shared_ptr<registry::PluginHandle> owner);
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  loom_buffer_t* raw() const { return raw_; }
  explicit operator bool() const { return raw_ != nullptr; }
  size_t size() const { return raw_ ? raw_->size : 0; }
  void* base() const;
  bool is_host() const;
  Status clear(uint8_t value);
  void reset();

 private:
  loom_buffer_t* raw_ = nullptr;
  std::shared_ptr<registry::PluginHandle> owner_;
};

class Stream {
 public:
  Stream() = default;
  Stream(loom_stream_t* raw, std::shared_ptr<registry::PluginHandle> owner);
  ~Stream() { reset(); }
  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  loom_stream_t* raw() const { return raw_; }
  explicit operator bool() const { return raw_ != nullptr; }
  Status compute(const loom_graph_t& graph);
  Status synchronize();
  void reset();

 private:
  loom_stream_t* raw_ = nullptr;
  std::shared_ptr<registry::PluginHandle> owner_;
};

// Take ownership of a status a plugin returned (NULL = OK).
Status status_from_abi(loom_status_t* status);

}  // namespace loom
