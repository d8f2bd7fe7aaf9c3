// Buffer and Stream (include/loom/registry/buffer.hpp): RAII owners that count
// themselves as live objects of their plugin, so the plugin unloads only
// after they are released.
#include "loom/registry/buffer.hpp"

#include <utility>

#include "loom/runtime/log.hpp"
#include "loom/registry/plugin_calls.hpp"
#include "registry/guard.hpp"
#include "registry/plugin_handle.hpp"

namespace loom {

using registry::call_plugin;
using registry::call_plugin_status;

Buffer::Buffer(loom_buffer_t* raw, std::shared_ptr<registry::PluginHandle> owner)
    : raw_(raw), owner_(std::move(owner)) {
  if (!raw_) owner_.reset();  // only a held object is counted
  if (owner_) owner_->add_object();
}

Buffer::Buffer(Buffer&& o) noexcept
    : raw_(std::exchange(o.raw_, nullptr)), owner_(std::move(o.owner_)) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    raw_ = std::exchange(o.raw_, nullptr);
    owner_ = std::move(o.owner_);
  }
  return *this;
}

// Through the raw-handle door, with its struct_size checks.
void* Buffer::base() const { return raw_ ? registry::buffer_base(raw_) : nullptr; }

bool Buffer::is_host() const { return raw_ && registry::buffer_type_is_host(raw_->buffer_type); }

Status Buffer::clear(uint8_t value) {
  if (!raw_) return invalid_argument("[buffer.clear] empty buffer");
  return call_plugin_status("buffer.clear", "clear", [&] { return raw_->iface->clear(raw_, value); });
}

void Buffer::reset() {
  if (raw_) {
    loom_buffer_t* b = std::exchange(raw_, nullptr);
    std::string err = call_plugin([&] { b->iface->free(b); });
    if (!err.empty()) LOOM_LOG_WARN("registry", "[buffer.free] " + err);
  }
  // Released last: this may unload the plugin whose code just ran.
  if (owner_) {
    std::shared_ptr<registry::PluginHandle> owner = std::move(owner_);
    owner->release_object();
  }
}

Stream::Stream(loom_stream_t* raw, std::shared_ptr<registry::PluginHandle> owner)
    : raw_(raw), owner_(std::move(owner)) {
  if (!raw_) owner_.reset();  // only a held object is counted
  if (owner_) owner_->add_object();
}

Stream::Stream(Stream&& o) noexcept
    : raw_(std::exchange(o.raw_, nullptr)), owner_(std::move(o.owner_)) {}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    reset();
    raw_ = std::exchange(o.raw_, nullptr);
    owner_ = std::move(o.owner_);
  }
  return *this;
}

Status Stream::compute(const loom_graph_t& graph) {
  if (!raw_) return invalid_argument("[stream.compute] empty stream");
  return call_plugin_status("stream.compute", "compute", [&] { return raw_->iface->compute(raw_, &graph); });
}

Status Stream::synchronize() {
  if (!raw_) return invalid_argument("[stream.synchronize] empty stream");
  return call_plugin_status("stream.synchronize", "synchronize",
                            [&] { return raw_->iface->synchronize(raw_); });
}

bool Stream::has_set_async() const {
  return raw_ && raw_->iface->struct_size >= LOOM_STRUCT_END(loom_stream_iface_t, set_tensor_async) &&
         raw_->iface->set_tensor_async != nullptr;
}

bool Stream::has_events() const {
  return raw_ && raw_->iface->struct_size >= LOOM_STRUCT_END(loom_stream_iface_t, wait_event) &&
         raw_->iface->record_event != nullptr && raw_->iface->wait_event != nullptr;
}

Status Stream::set_tensor_async(loom_tensor_t* tensor, const void* data, size_t offset,
                                size_t size) {
  if (!has_set_async()) return unimplemented("[stream.set_tensor_async] not provided");
  Status range = registry::check_tensor_range("stream.set_tensor_async", tensor ? tensor->buffer : nullptr, tensor,
                                              offset, size);
  if (!range.ok()) return range;
  return call_plugin_status("stream.set_tensor_async", "set_tensor_async", [&] {
    return raw_->iface->set_tensor_async(raw_, tensor, data, offset, size);
  });
}

bool Stream::has_get_async() const {
  return raw_ && raw_->iface->struct_size >= LOOM_STRUCT_END(loom_stream_iface_t, get_tensor_async) &&
         raw_->iface->get_tensor_async != nullptr;
}

Status Stream::get_tensor_async(const loom_tensor_t* tensor, void* data, size_t offset, size_t size) {
  if (!has_get_async()) return unimplemented("[stream.get_tensor_async] not provided");
  Status range = registry::check_tensor_range("stream.get_tensor_async", tensor ? tensor->buffer : nullptr, tensor,
                                              offset, size);
  if (!range.ok()) return range;
  return call_plugin_status("stream.get_tensor_async", "get_tensor_async", [&] {
    return raw_->iface->get_tensor_async(raw_, tensor, data, offset, size);
  });
}

Status Stream::record_event(loom_event_t* event) {
  if (!has_events()) return unimplemented("[stream.record_event] not provided");
  return call_plugin_status("stream.record_event", "record_event",
                            [&] { return raw_->iface->record_event(raw_, event); });
}

Status Stream::wait_event(loom_event_t* event) {
  if (!has_events()) return unimplemented("[stream.wait_event] not provided");
  return call_plugin_status("stream.wait_event", "wait_event",
                            [&] { return raw_->iface->wait_event(raw_, event); });
}

void Stream::reset() {
  if (raw_) {
    loom_stream_t* s = std::exchange(raw_, nullptr);
    std::string err = call_plugin([&] { s->iface->destroy(s); });
    if (!err.empty()) LOOM_LOG_WARN("registry", "[stream.destroy] " + err);
  }
  if (owner_) {
    std::shared_ptr<registry::PluginHandle> owner = std::move(owner_);
    owner->release_object();
  }
}

Event::Event(loom_event_t* raw, std::shared_ptr<registry::PluginHandle> owner)
    : raw_(raw), owner_(std::move(owner)) {
  if (!raw_) owner_.reset();  // only a held object is counted
  if (owner_) owner_->add_object();
}

Event::Event(Event&& o) noexcept
    : raw_(std::exchange(o.raw_, nullptr)), owner_(std::move(o.owner_)) {}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    reset();
    raw_ = std::exchange(o.raw_, nullptr);
    owner_ = std::move(o.owner_);
  }
  return *this;
}

Status Event::synchronize() {
  if (!raw_) return invalid_argument("[event.synchronize] empty event");
  return call_plugin_status("event.synchronize", "synchronize",
                            [&] { return raw_->iface->synchronize(raw_); });
}

void Event::reset() {
  if (raw_) {
    loom_event_t* e = std::exchange(raw_, nullptr);
    std::string err = call_plugin([&] { e->iface->destroy(e); });
    if (!err.empty()) LOOM_LOG_WARN("registry", "[event.destroy] " + err);
  }
  if (owner_) {
    std::shared_ptr<registry::PluginHandle> owner = std::move(owner_);
    owner->release_object();
  }
}

}  // namespace loom
