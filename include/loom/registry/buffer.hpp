// RAII owners of plugin objects. Each keeps the plugin library loaded (and
// counted as a live object) until it is released, so a plugin is never
// unloaded while something it made is still alive. Move-only; not
// thread-safe.
#pragma once

#include <cstddef>
#include <memory>

#include "loom/plugin.h"
#include "loom/runtime/status.hpp"

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
  // With LOOM_DEVICE_CAP_ASYNC the work may still run when compute returns;
  // the tensors of `graph` must stay unchanged until it is done (synchronize
  // or an event recorded after it); the graph struct itself only for the call.
  Status compute(const loom_graph_t& graph);
  Status synchronize();
  // Whether the optional queued copy / event entries are present.
  bool has_set_async() const;
  bool has_events() const;
  // Queued host -> tensor copy: `data` must stay alive and unchanged until
  // the stream passes it (synchronize or an event recorded after it).
  // UNIMPLEMENTED when the stream has no set_tensor_async.
  Status set_tensor_async(loom_tensor_t* tensor, const void* data, size_t offset, size_t size);
  // Queued tensor -> host copy: `data` is written by the time the stream
  // passes it (synchronize or an event recorded after it).
  bool has_get_async() const;
  Status get_tensor_async(const loom_tensor_t* tensor, void* data, size_t offset, size_t size);
  Status record_event(loom_event_t* event);
  Status wait_event(loom_event_t* event);
  void reset();

 private:
  loom_stream_t* raw_ = nullptr;
  std::shared_ptr<registry::PluginHandle> owner_;
};

// An event of a device (device.event_create): recorded on a stream after
// queued work, waited on by another stream or by the host.
class Event {
 public:
  Event() = default;
  Event(loom_event_t* raw, std::shared_ptr<registry::PluginHandle> owner);
  ~Event() { reset(); }
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  loom_event_t* raw() const { return raw_; }
  explicit operator bool() const { return raw_ != nullptr; }
  // Block until the work recorded before the event is done.
  Status synchronize();
  void reset();

 private:
  loom_event_t* raw_ = nullptr;
  std::shared_ptr<registry::PluginHandle> owner_;
};

// Take ownership of a status a plugin returned (NULL = OK).
Status status_from_abi(loom_status_t* status);

}  // namespace loom
