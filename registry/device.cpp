// registry::Device: the C++ face of a plugin's loom_device_t. Every call
// into the plugin catches escaping exceptions; results are validated.
#include <cstring>
#include <string>

#include "common/op_info.h"
#include "common/type_traits.h"
#include "loom/runtime/log.hpp"
#include "loom/registry/plugin_calls.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/tensor.hpp"
#include "registry/guard.hpp"
#include "registry/loader.hpp"
#include "registry/plugin_handle.hpp"

namespace loom::registry {
namespace {

// Release a buffer the host refuses; only when its table is usable.
void free_rejected_buffer(loom_buffer_t* b) {
  if (b && b->struct_size >= kBufferSize10 && b->iface && b->iface->free) {
    call_plugin([&] { b->iface->free(b); });
  }
}

void destroy_rejected_stream(loom_stream_t* s) {
  if (s && s->struct_size >= kStreamSize10 && s->iface && s->iface->destroy) {
    call_plugin([&] { s->iface->destroy(s); });
  }
}

// Why a buffer a plugin returned is unusable, "" when it is fine.
std::string check_buffer(const loom_buffer_t* b, size_t size) {
  if (!b) return "returned OK but no buffer";
  if (b->struct_size < kBufferSize10) {
    return "loom_buffer_t struct_size " + std::to_string(b->struct_size) + " < " + std::to_string(kBufferSize10);
  }
  if (!b->iface) return "buffer iface is NULL";
  if (b->iface->struct_size < kBufferIfaceSize10) {
    return "loom_buffer_iface_t struct_size " + std::to_string(b->iface->struct_size) + " < " +
           std::to_string(kBufferIfaceSize10);
  }
  if (!b->iface->free || !b->iface->base || !b->iface->set_tensor || !b->iface->get_tensor ||
      !b->iface->clear) {
    return "a required loom_buffer_iface_t entry is NULL";
  }
  if (b->size < size) return "buffer has " + std::to_string(b->size) + " bytes, fewer than asked";
  return "";
}

}  // namespace

bool Device::supports_op(const Tensor* node) const {
  if (!node) return false;
  // Host rule 15: never ask about an op, or a form of one (ROPE's frequency
  // factors), added after the plugin's minor.
  if (plugin_ && !common::plugin_knows_node_op(plugin_->table()->abi_version, node)) return false;
  // The same for types: a 1.1 plugin never sees a Q4_K tensor.
  if (plugin_) {
    const uint32_t v = plugin_->table()->abi_version;
    if (!common::plugin_knows_type(v, node->type)) return false;
    for (int i = 0; i < LOOM_MAX_SRC; ++i) {
      if (node->src[i] && !common::plugin_knows_type(v, node->src[i]->type)) return false;
    }
  }
  bool ok = false;
  std::string err = call_plugin([&] { ok = raw_->iface->supports_op(raw_, static_cast<const loom_tensor_t*>(node)); });
  if (!err.empty()) {
    LOOM_LOG_WARN("registry", "[device.supports_op] " + name() + ": " + err);
    return false;
  }
  return ok;
}

bool Device::reads_host_pointers() const {
  if (info().type == LOOM_DEVICE_TYPE_GPU || info().type == LOOM_DEVICE_TYPE_IGPU) return false;
  loom_buffer_type_t* own = buffer_type();
  return own && own->iface->is_host(own);
}

bool Device::supports_buffer_type(const loom_buffer_type_t* buft) const {
  if (!buft) return false;
  bool ok = false;
  std::string err = call_plugin([&] { ok = raw_->iface->supports_buffer_type(raw_, buft); });
  if (!err.empty()) {
    LOOM_LOG_WARN("registry", "[device.supports_buffer_type] " + name() + ": " + err);
    return false;
  }
  return ok;
}

loom_buffer_type_t* Device::buffer_type() const {
  loom_buffer_type_t* buft = nullptr;
  std::string err = call_plugin([&] { buft = raw_->iface->buffer_type(raw_); });
  if (!err.empty()) {
    LOOM_LOG_WARN("registry", "[device.buffer_type] " + name() + ": " + err);
    return nullptr;
  }
  return buft;
}

StatusOr<Device::Memory> Device::memory() const {
  loom_device_props_t props;
  std::memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  Status st = call_plugin_status("device.memory", name(), [&] { return raw_->iface->get_props(raw_, &props); });
  if (!st.ok()) return st;
  return Memory{props.memory_total, props.memory_free};
}

StatusOr<Buffer> Device::alloc_buffer(size_t size) const { return alloc_buffer(size, nullptr); }

StatusOr<Buffer> Device::alloc_buffer(size_t size, loom_buffer_type_t* buft) const {
  const std::string who = "[device.alloc_buffer] " + name() + ": " + std::to_string(size) + " bytes: ";
  if (!buft) buft = buffer_type();
  if (!buft) return internal_error(who + "the device has no buffer type");
  loom_buffer_t* b = nullptr;
  Status st = call_plugin_status("device.alloc_buffer", name(), [&] { return buft->iface->alloc(buft, size, &b); });
  if (!st.ok()) {
    free_rejected_buffer(b);
    return Status(st.code(), who + st.message());
  }
  std::string bad = check_buffer(b, size);
  if (!bad.empty()) {
    free_rejected_buffer(b);
    return internal_error(who + "plugin " + info_.plugin + " returned a bad buffer: " + bad);
  }
  return Buffer(b, plugin_);
}

StatusOr<Buffer> Device::buffer_from_host_ptr(void* ptr, size_t size) const {
  const std::string who = "[device.buffer_from_host_ptr] " + name() + ": " + std::to_string(size) + " bytes: ";
  if (!raw_->iface->buffer_from_host_ptr) return unimplemented(who + "the device cannot wrap host memory");
  loom_buffer_t* b = nullptr;
  Status st = call_plugin_status("device.buffer_from_host_ptr", name(),
                                 [&] { return raw_->iface->buffer_from_host_ptr(raw_, ptr, size, &b); });
  if (!st.ok()) {
    free_rejected_buffer(b);
    return Status(st.code(), who + st.message());
  }
  std::string bad = check_buffer(b, size);
  if (!bad.empty()) {
    free_rejected_buffer(b);
    return internal_error(who + "plugin " + info_.plugin + " returned a bad buffer: " + bad);
  }
  return Buffer(b, plugin_);
}

bool Device::has_events() const { return raw_->iface->event_create != nullptr; }

StatusOr<Event> Device::create_event() const {
  const std::string who = "[device.create_event] " + name() + ": ";
  if (!has_events()) return unimplemented(who + "the device has no events");
  loom_event_t* e = nullptr;
  Status st = call_plugin_status("device.create_event", name(),
                                 [&] { return raw_->iface->event_create(raw_, &e); });
  if (!st.ok()) return Status(st.code(), who + st.message());
  if (!e || e->struct_size < LOOM_STRUCT_END(loom_event_t, context) || !e->iface ||
      !e->iface->destroy || !e->iface->synchronize) {
    return internal_error(who + "plugin " + info_.plugin + " returned a bad event");
  }
  return Event(e, plugin_);
}

StatusOr<Stream> Device::create_stream() const {
  const std::string who = "[device.create_stream] " + name() + ": ";
  loom_stream_t* s = nullptr;
  Status st = call_plugin_status("device.create_stream", name(), [&] { return raw_->iface->stream_create(raw_, &s); });
  if (!st.ok()) {
    destroy_rejected_stream(s);
    return Status(st.code(), who + st.message());
  }
  std::string bad;
  if (!s) {
    bad = "stream_create returned OK but no stream";
  } else if (s->struct_size < kStreamSize10) {
    bad = "loom_stream_t struct_size " + std::to_string(s->struct_size) + " < " + std::to_string(kStreamSize10);
  } else if (!s->iface) {
    bad = "stream iface is NULL";
  } else if (s->iface->struct_size < kStreamIfaceSize10) {
    bad = "loom_stream_iface_t struct_size " + std::to_string(s->iface->struct_size) + " < " +
          std::to_string(kStreamIfaceSize10);
  } else if (!s->iface->destroy || !s->iface->compute || !s->iface->synchronize) {
    bad = "a required loom_stream_iface_t entry is NULL";
  }
  if (!bad.empty()) {
    destroy_rejected_stream(s);
    return internal_error(who + "plugin " + info_.plugin + " returned a bad stream: " + bad);
  }
  return Stream(s, plugin_);
}

const void* Device::extension(const char* id, uint32_t version) const {
  if (!id || !raw_->iface->get_extension) return nullptr;
  const void* ext = nullptr;
  std::string err = call_plugin([&] { ext = raw_->iface->get_extension(raw_, id, version); });
  if (!err.empty()) {
    LOOM_LOG_WARN("registry", "[device.extension] " + name() + ": " + id + ": " + err);
    return nullptr;
  }
  return ext;
}

loom_buffer_type_t* Device::weight_buffer_type(const Tensor* weight) const {
  const auto* ext =
      static_cast<const loom_ext_weight_layout_t*>(extension(LOOM_EXT_WEIGHT_LAYOUT, LOOM_EXT_WEIGHT_LAYOUT_VERSION));
  if (!ext || !weight || ext->struct_size < LOOM_STRUCT_END(loom_ext_weight_layout_t, weight_buffer_type) ||
      !ext->weight_buffer_type) {
    return nullptr;
  }
  loom_buffer_type_t* bt = nullptr;
  std::string err = call_plugin([&] { bt = ext->weight_buffer_type(raw_, weight); });
  if (!err.empty()) {
    LOOM_LOG_WARN("registry", "[device.weight_buffer_type] " + name() + ": " + err);
    return nullptr;
  }
  // Only a type the device itself reads, with the ABI table a buffer type needs.
  if (bt && (bt->struct_size < sizeof(loom_buffer_type_t) || !bt->iface || !bt->iface->alloc ||
             !bt->iface->alignment || !supports_buffer_type(bt))) {
    LOOM_LOG_WARN("registry", "[device.weight_buffer_type] " + name() + ": ignored a buffer type the device does not read");
    return nullptr;
  }
  return bt;
}

double Device::op_time_us(const Tensor* node) const {
  if (!cost_ext_asked_) {
    cost_ext_asked_ = true;
    const auto* ext = static_cast<const loom_ext_cost_t*>(extension(LOOM_EXT_COST, LOOM_EXT_COST_VERSION));
    if (ext && ext->struct_size >= LOOM_STRUCT_END(loom_ext_cost_t, op_time_us) && ext->op_time_us) cost_ext_ = ext;
  }
  if (!cost_ext_ || !node) return -1.0;
  const auto* ext = static_cast<const loom_ext_cost_t*>(cost_ext_);
  double us = -1.0;
  std::string err = call_plugin([&] { us = ext->op_time_us(raw_, node); });
  if (!err.empty()) {
    LOOM_LOG_WARN("registry", "[device.op_time_us] " + name() + ": " + err);
    return -1.0;
  }
  return us >= 0.0 && us < 1e300 ? us : -1.0;
}

Status Device::set_threads(int n_threads) const {
  const std::string who = "[device.set_threads] " + name() + ": ";
  if (n_threads < 1) return invalid_argument(who + "thread count " + std::to_string(n_threads) + " < 1");
  auto* ext = static_cast<const loom_ext_threads_t*>(extension(LOOM_EXT_THREADS, LOOM_EXT_THREADS_VERSION));
  if (!ext || ext->struct_size < LOOM_STRUCT_END(loom_ext_threads_t, set_threads) || !ext->set_threads) {
    return unimplemented(who + "no " LOOM_EXT_THREADS " extension");
  }
  Status st = call_plugin_status("device.set_threads", name(), [&] { return ext->set_threads(raw_, n_threads); });
  return st.ok() ? st : Status(st.code(), who + st.message());
}

int Device::threads() const {
  auto* ext = static_cast<const loom_ext_threads_t*>(extension(LOOM_EXT_THREADS, LOOM_EXT_THREADS_VERSION));
  if (!ext || ext->struct_size < LOOM_STRUCT_END(loom_ext_threads_t, get_threads) || !ext->get_threads) return -1;
  int32_t n = -1;
  std::string err = call_plugin([&] { n = ext->get_threads(raw_); });
  if (!err.empty()) {
    LOOM_LOG_WARN("registry", "[device.threads] " + name() + ": " + err);
    return -1;
  }
  return n >= 1 ? n : -1;
}

namespace {

const loom_ext_file_load_t* file_load_ext(const Device& d) {
  const auto* ext = static_cast<const loom_ext_file_load_t*>(d.extension(LOOM_EXT_FILE_LOAD, LOOM_EXT_FILE_LOAD_VERSION));
  if (!ext || ext->struct_size < LOOM_STRUCT_END(loom_ext_file_load_t, set_tensor_from_file) ||
      !ext->set_tensor_from_file) {
    return nullptr;
  }
  return ext;
}

}  // namespace

bool Device::has_file_load() const { return file_load_ext(*this) != nullptr; }

Status Device::set_tensor_from_file(Tensor* t, const std::string& path, uint64_t file_offset, uint64_t size,
                                    uint64_t checksum64) const {
  const std::string who = "[device.set_tensor_from_file] " + name() + ": ";
  const loom_ext_file_load_t* ext = file_load_ext(*this);
  if (!ext) return unimplemented(who + "no " LOOM_EXT_FILE_LOAD " extension");
  if (t == nullptr || t->buffer == nullptr) return invalid_argument(who + "the tensor is not in a buffer");
  if (size > SIZE_MAX) return invalid_argument(who + std::to_string(size) + " bytes exceed this host's size_t");
  LOOM_RETURN_IF_ERROR(check_tensor_range("device.set_tensor_from_file", t->buffer, t, 0, static_cast<size_t>(size)));
  Status st = call_plugin_status("device.set_tensor_from_file", name(), [&] {
    return ext->set_tensor_from_file(raw_, t->buffer, t, path.c_str(), file_offset, size, checksum64);
  });
  return st.ok() ? st : Status(st.code(), who + st.message());
}

}  // namespace loom::registry
