// The raw-handle door (include/loom/plugin_calls.hpp): guarded calls with
// struct_size checks for buffers and buffer types.
#include "loom/plugin_calls.hpp"

#include "loom/log.hpp"
#include "registry/guard.hpp"
#include "registry/loader.hpp"

namespace loom::registry {
namespace {

bool has_buffer_entry(const loom_buffer_t* b, size_t end) {
  return b && b->iface && b->iface->struct_size >= end;
}

Status no_buffer(const char* op) { return invalid_argument(std::string("[") + op + "] buffer is null"); }

}  // namespace

StatusOr<size_t> buffer_type_alignment(loom_buffer_type_t* buft) {
  if (!buft || !buft->iface) return invalid_argument("[buffer_type.alignment] buffer type is null");
  size_t a = 0;
  std::string err = call_plugin([&] { a = buft->iface->alignment(buft); });
  if (!err.empty()) return internal_error("[buffer_type.alignment] " + buffer_type_name(buft) + ": " + err);
  if (a == 0 || (a & (a - 1)) != 0) {
    return internal_error("[buffer_type.alignment] " + buffer_type_name(buft) + ": alignment " +
                          std::to_string(a) + " is not a power of two");
  }
  return a;
}

StatusOr<size_t> buffer_type_alloc_size(loom_buffer_type_t* buft, const Tensor* t) {
  if (!buft || !buft->iface || !buft->iface->alloc_size) return t->nbytes();
  size_t n = 0;
  std::string err = call_plugin([&] { n = buft->iface->alloc_size(buft, t); });
  if (!err.empty()) return internal_error("[buffer_type.alloc_size] " + buffer_type_name(buft) + ": " + err);
  return n;
}

std::string buffer_type_name(loom_buffer_type_t* buft) {
  if (!buft || !buft->iface || !buft->iface->name) return "?";
  const char* n = nullptr;
  std::string err = call_plugin([&] { n = buft->iface->name(buft); });
  return err.empty() && n ? std::string(n) : std::string("?");
}

bool buffer_type_is_host(loom_buffer_type_t* buft) {
  if (!buft || !buft->iface || !buft->iface->is_host) return false;
  bool host = false;
  std::string err = call_plugin([&] { host = buft->iface->is_host(buft); });
  if (!err.empty()) LOOM_LOG_WARN("registry", "[buffer_type.is_host] " + err);
  return err.empty() && host;
}

void* buffer_base(loom_buffer_t* b) {
  if (!has_buffer_entry(b, LOOM_STRUCT_END(loom_buffer_iface_t, base)) || !b->iface->base) return nullptr;
  void* p = nullptr;
  std::string err = call_plugin([&] { p = b->iface->base(b); });
  if (!err.empty()) LOOM_LOG_WARN("registry", "[buffer.base] " + err);
  return err.empty() ? p : nullptr;
}

Status buffer_init_tensor(loom_buffer_t* b, loom_tensor_t* t) {
  if (!b) return no_buffer("buffer.init_tensor");
  if (!has_buffer_entry(b, LOOM_STRUCT_END(loom_buffer_iface_t, init_tensor)) || !b->iface->init_tensor) {
    return Status();
  }
  Status st = call_plugin_status("buffer.init_tensor", buffer_type_name(b->buffer_type),
                                 [&] { return b->iface->init_tensor(b, t); });
  if (!st.ok()) return st.with_context("init_tensor of '" + std::string(t->name) + "'");
  return st;
}

Status buffer_set_tensor(loom_buffer_t* b, loom_tensor_t* t, const void* data, size_t offset, size_t size) {
  if (!b) return no_buffer("buffer.set_tensor");
  if (!has_buffer_entry(b, LOOM_STRUCT_END(loom_buffer_iface_t, set_tensor)) || !b->iface->set_tensor) {
    return internal_error("[buffer.set_tensor] " + buffer_type_name(b->buffer_type) + ": no set_tensor entry");
  }
  return call_plugin_status("buffer.set_tensor", buffer_type_name(b->buffer_type),
                            [&] { return b->iface->set_tensor(b, t, data, offset, size); });
}

Status buffer_get_tensor(loom_buffer_t* b, const loom_tensor_t* t, void* data, size_t offset, size_t size) {
  if (!b) return no_buffer("buffer.get_tensor");
  if (!has_buffer_entry(b, LOOM_STRUCT_END(loom_buffer_iface_t, get_tensor)) || !b->iface->get_tensor) {
    return internal_error("[buffer.get_tensor] " + buffer_type_name(b->buffer_type) + ": no get_tensor entry");
  }
  return call_plugin_status("buffer.get_tensor", buffer_type_name(b->buffer_type),
                            [&] { return b->iface->get_tensor(b, t, data, offset, size); });
}

Status buffer_copy_tensor(loom_buffer_t* b, const loom_tensor_t* src, loom_tensor_t* dst) {
  if (!b) return no_buffer("buffer.copy_tensor");
  if (!has_buffer_entry(b, LOOM_STRUCT_END(loom_buffer_iface_t, copy_tensor)) || !b->iface->copy_tensor) {
    return unimplemented("[buffer.copy_tensor] not provided");
  }
  return call_plugin_status("buffer.copy_tensor", buffer_type_name(b->buffer_type),
                            [&] { return b->iface->copy_tensor(b, src, dst); });
}

}  // namespace loom::registry
