// Buffer and Stream (include/loom/buffer.hpp): RAII owners that count
// themselves as live objects of their plugin, so the plugin unloads only
// after they are released.
#include "loom/buffer.hpp"

#include <utility>

#include "loom/log.hpp"
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

void* Buffer::base() const {
  if (!raw_) return nullptr;
  void* p = nullptr;
  std::string err = call_plugin([&] { p = raw_->iface->base(raw_); });
  if (!err.empty()) LOOM_LOG_WARN("registry", "[buffer.base] " + err);
  return p;
}

bool Buffer::is_host() const {
  if (!raw_ || !raw_->buffer_type || !raw_->buffer_type->iface) return false;
  loom_buffer_type_t* t = raw_->buffer_type;
  bool host = false;
  std::string err = call_plugin([&] { host = t->iface->is_host(t); });
  if (!err.empty()) LOOM_LOG_WARN("registry", "[buffer.is_host] " + err);
  return host;
}

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

}  // namespace loom
