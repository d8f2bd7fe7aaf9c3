// The raw-handle door (include/loom/registry/plugin_calls.hpp): guarded calls with
// struct_size checks for buffers and buffer types.
#include "loom/registry/plugin_calls.hpp"

#include <cstring>

#include "common/type_traits.h"
#include "loom/runtime/log.hpp"
#include "registry/guard.hpp"
#include "registry/loader.hpp"

namespace loom::registry {
namespace {

bool has_buffer_entry(const loom_buffer_t* b, size_t end) {
  return b && b->iface && b->iface->struct_size >= end;
}

Status no_buffer(const char* op) { return invalid_argument(std::string("[") + op + "] buffer is null"); }

}  // namespace

StatusOr<size_t> tensor_span_bytes(const loom_tensor_t* t) {
  if (!common::type_is_valid(t->type)) return invalid_argument("type id " + std::to_string(t->type) + " is unknown");
  const common::TypeTraits& tr = common::type_traits(t->type);
  for (int i = 0; i < LOOM_MAX_DIMS; ++i) {
    if (t->ne[i] < 0) return invalid_argument("negative extent");
    if (t->ne[i] == 0) return size_t{0};
  }
  // As ggml counts: the last element's (or block's) end from data.
  unsigned __int128 bytes = tr.type_size;
  const uint64_t blocks = (static_cast<uint64_t>(t->ne[0]) + tr.block_size - 1) / static_cast<uint64_t>(tr.block_size);
  bytes += static_cast<unsigned __int128>(blocks - 1) * static_cast<uint64_t>(t->nb[0]);
  for (int i = 1; i < LOOM_MAX_DIMS; ++i) {
    bytes += static_cast<unsigned __int128>(t->ne[i] - 1) * static_cast<uint64_t>(t->nb[i]);
  }
  if (bytes > SIZE_MAX) return invalid_argument("its byte span overflows");
  return static_cast<size_t>(bytes);
}

Status check_tensor_range(const char* op, loom_buffer_t* b, const loom_tensor_t* t, size_t offset, size_t size) {
  const std::string where = std::string("[") + op + "] ";
  if (t == nullptr) return invalid_argument(where + "tensor is null");
  const std::string name = "tensor '" + std::string(t->name, strnlen(t->name, LOOM_MAX_NAME)) + "'";
  StatusOr<size_t> span = tensor_span_bytes(t);
  if (!span.ok()) return invalid_argument(where + name + ": " + span.status().message());
  if (offset > *span || size > *span - offset) {
    return invalid_argument(where + name + ": bytes [" + std::to_string(offset) + ", " + std::to_string(offset) +
                            " + " + std::to_string(size) + ") are outside its " + std::to_string(*span) + " bytes");
  }
  if (b == nullptr || *span == 0) return Status();
  const char* base = static_cast<const char*>(buffer_base(b));
  const char* data = static_cast<const char*>(t->data);
  if (base == nullptr) return Status();  // a buffer without addresses: the plugin places its tensors itself
  if (data < base || static_cast<size_t>(data - base) > b->size || *span > b->size - static_cast<size_t>(data - base)) {
    return invalid_argument(where + name + ": its " + std::to_string(*span) + " bytes at data " +
                            std::to_string(reinterpret_cast<uintptr_t>(data)) + " are not inside its buffer [" +
                            std::to_string(reinterpret_cast<uintptr_t>(base)) + ", +" + std::to_string(b->size) + ")");
  }
  return Status();
}

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
  if (Status st = check_tensor_range("buffer.set_tensor", b, t, offset, size); !st.ok()) return st;
  if (data == nullptr && size > 0) return invalid_argument("[buffer.set_tensor] data is null");
  return call_plugin_status("buffer.set_tensor", buffer_type_name(b->buffer_type),
                            [&] { return b->iface->set_tensor(b, t, data, offset, size); });
}

Status buffer_get_tensor(loom_buffer_t* b, const loom_tensor_t* t, void* data, size_t offset, size_t size) {
  if (!b) return no_buffer("buffer.get_tensor");
  if (!has_buffer_entry(b, LOOM_STRUCT_END(loom_buffer_iface_t, get_tensor)) || !b->iface->get_tensor) {
    return internal_error("[buffer.get_tensor] " + buffer_type_name(b->buffer_type) + ": no get_tensor entry");
  }
  if (Status st = check_tensor_range("buffer.get_tensor", b, t, offset, size); !st.ok()) return st;
  if (data == nullptr && size > 0) return invalid_argument("[buffer.get_tensor] data is null");
  return call_plugin_status("buffer.get_tensor", buffer_type_name(b->buffer_type),
                            [&] { return b->iface->get_tensor(b, t, data, offset, size); });
}

bool buffer_offers_copy(const loom_buffer_t* b) {
  return b && has_buffer_entry(b, LOOM_STRUCT_END(loom_buffer_iface_t, copy_tensor)) && b->iface->copy_tensor;
}

Status buffer_copy_tensor(loom_buffer_t* b, const loom_tensor_t* src, loom_tensor_t* dst) {
  if (!b) return no_buffer("buffer.copy_tensor");
  if (!has_buffer_entry(b, LOOM_STRUCT_END(loom_buffer_iface_t, copy_tensor)) || !b->iface->copy_tensor) {
    return unimplemented("[buffer.copy_tensor] not provided");
  }
  if (Status st = check_tensor_range("buffer.copy_tensor", b, dst, 0, 0); !st.ok()) return st;
  if (Status st = check_tensor_range("buffer.copy_tensor", src ? src->buffer : nullptr, src, 0, 0); !st.ok()) {
    return st;
  }
  return call_plugin_status("buffer.copy_tensor", buffer_type_name(b->buffer_type),
                            [&] { return b->iface->copy_tensor(b, src, dst); });
}

}  // namespace loom::registry
