// The BLAS plugin's exported entry and the C -> C++ glue: every table entry
// forwards to the C++ objects, wrapped so no exception crosses the ABI.
#include <cstring>
#include <new>

#include "buffer.h"
#include "common/glue.h"
#include "device.h"
#include "loom/plugin.h"
#include "ops/ops.h"
#include "stream.h"

#ifndef LOOM_BLAS_VERSION
#define LOOM_BLAS_VERSION "0.0.0"
#endif

namespace loom::blas {
namespace {

using common::guarded;
using common::make_status;

// ------------------------------------------------------------------ buffer

void buffer_free(loom_buffer_t* b) {
  if (b != nullptr) Buffer::from(b)->destroy();
}
void* buffer_base(loom_buffer_t* b) { return Buffer::from(b)->base(); }
loom_status_t* buffer_set_tensor(loom_buffer_t* b, loom_tensor_t* t, const void* data,
                                 size_t offset, size_t size) {
  return guarded("blas.set_tensor",
                 [&] { return Buffer::from(b)->set_tensor(t, data, offset, size); });
}
loom_status_t* buffer_get_tensor(loom_buffer_t* b, const loom_tensor_t* t, void* data,
                                 size_t offset, size_t size) {
  return guarded("blas.get_tensor",
                 [&] { return Buffer::from(b)->get_tensor(t, data, offset, size); });
}
loom_status_t* buffer_clear(loom_buffer_t* b, uint8_t value) {
  return guarded("blas.clear", [&] { return Buffer::from(b)->clear(value); });
}
loom_status_t* buffer_copy_tensor(loom_buffer_t* b, const loom_tensor_t* src, loom_tensor_t* dst) {
  return guarded("blas.copy_tensor", [&] { return Buffer::from(b)->copy_tensor(src, dst); });
}

const loom_buffer_iface_t kBufferIface = {
    sizeof(loom_buffer_iface_t), buffer_free,        buffer_base,
    buffer_set_tensor,           buffer_get_tensor,  buffer_clear,
    /*init_tensor=*/nullptr,     buffer_copy_tensor,
};

// ------------------------------------------------------------- buffer type

const char* buft_name(loom_buffer_type_t*) { return "blas"; }
loom_status_t* buft_alloc(loom_buffer_type_t* bt, size_t size, loom_buffer_t** out) {
  return guarded("blas.buffer_alloc", [&] {
    return static_cast<BufferType*>(bt->context)->alloc(size, &kBufferIface, out);
  });
}
size_t buft_alignment(loom_buffer_type_t*) { return BufferType::kAlignment; }
bool buft_is_host(loom_buffer_type_t*) { return true; }

const loom_buffer_type_iface_t kBufferTypeIface = {
    sizeof(loom_buffer_type_iface_t),
    buft_name,
    buft_alloc,
    buft_alignment,
    /*max_size=*/nullptr,
    /*alloc_size=*/nullptr,
    buft_is_host,
};

// ------------------------------------------------------------------ stream

void stream_destroy(loom_stream_t* s) {
  if (s != nullptr) delete Stream::from(s);
}
loom_status_t* stream_compute(loom_stream_t* s, const loom_graph_t* graph) {
  return guarded("blas.compute", [&] { return Stream::from(s)->compute(graph); });
}
loom_status_t* stream_synchronize(loom_stream_t*) { return nullptr; }  // compute is synchronous

const loom_stream_iface_t kStreamIface = {
    sizeof(loom_stream_iface_t),
    stream_destroy,
    stream_compute,
    stream_synchronize,
    /*set_tensor_async=*/nullptr,
    /*get_tensor_async=*/nullptr,
    /*record_event=*/nullptr,
    /*wait_event=*/nullptr,
};

// ------------------------------------------------------------------ device

loom_status_t* threads_set(loom_device_t* d, int32_t n) {
  return guarded("blas.set_threads", [&] { return Device::from(d)->set_threads(n); });
}
int32_t threads_get(loom_device_t* d) { return Device::from(d)->threads(); }

const loom_ext_threads_t kThreadsExt = {sizeof(loom_ext_threads_t), threads_set, threads_get};

loom_status_t* device_get_props(loom_device_t* d, loom_device_props_t* out) {
  return guarded("blas.get_props", [&] { return Device::from(d)->get_props(out); });
}
loom_buffer_type_t* device_buffer_type(loom_device_t* d) {
  return Device::from(d)->buffer_type().handle();
}
loom_buffer_type_t* device_host_buffer_type(loom_device_t* d) {
  return Device::from(d)->buffer_type().handle();  // device memory is host memory
}
bool device_supports_op(loom_device_t*, const loom_tensor_t* node) { return supports_op(node); }
bool device_supports_buffer_type(loom_device_t* d, const loom_buffer_type_t* bt) {
  return Device::from(d)->supports_buffer_type(bt);
}
loom_status_t* device_stream_create(loom_device_t* d, loom_stream_t** out) {
  return guarded("blas.stream_create", [&]() -> loom_status_t* {
    if (out == nullptr)
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[blas.stream_create] out_stream is null");
    *out = (new Stream(Device::from(d), &kStreamIface))->handle();
    return nullptr;
  });
}
const void* device_get_extension(loom_device_t*, const char* id, uint32_t version) {
  if (id != nullptr && std::strcmp(id, LOOM_EXT_THREADS) == 0 &&
      version == LOOM_EXT_THREADS_VERSION) {
    return &kThreadsExt;
  }
  return nullptr;
}
loom_status_t* device_buffer_from_host_ptr(loom_device_t* d, void* ptr, size_t size,
                                           loom_buffer_t** out) {
  return guarded("blas.buffer_from_host_ptr", [&] {
    return Buffer::wrap(Device::from(d)->buffer_type().handle(), &kBufferIface, ptr, size, out);
  });
}

const loom_device_iface_t kDeviceIface = {
    sizeof(loom_device_iface_t), device_get_props,     device_buffer_type,
    device_host_buffer_type,     device_supports_op,   device_supports_buffer_type,
    device_stream_create,
    /*event_create=*/nullptr,    device_get_extension, device_buffer_from_host_ptr,
};

// ------------------------------------------------------------------ plugin

struct PluginContext {
  Device device{Ifaces{&kDeviceIface, &kBufferTypeIface}};
};

loom_status_t* plugin_init(void** out_context) {
  return guarded("blas.init", [&]() -> loom_status_t* {
    if (out_context == nullptr)
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[blas.init] out_context is null");
    *out_context = new PluginContext();
    return nullptr;
  });
}
void plugin_shutdown(void* context) { delete static_cast<PluginContext*>(context); }
size_t plugin_device_count(void*) { return 1; }
loom_device_t* plugin_device_get(void* context, size_t index) {
  return index == 0 ? static_cast<PluginContext*>(context)->device.handle() : nullptr;
}

const loom_plugin_t kPlugin = {
    sizeof(loom_plugin_t),     LOOM_ABI_VERSION, "blas",          "",
    LOOM_BLAS_VERSION,
    /*score=*/nullptr,         plugin_init,      plugin_shutdown, plugin_device_count,
    plugin_device_get,
    /*get_extension=*/nullptr,
};

}  // namespace
}  // namespace loom::blas

extern "C" LOOM_PLUGIN_EXPORT const loom_plugin_t* loom_plugin_query(
    uint32_t host_abi_version, const loom_host_services_t* services) {
  if (LOOM_ABI_MAJOR(host_abi_version) != LOOM_ABI_VERSION_MAJOR || services == nullptr ||
      services->struct_size < LOOM_STRUCT_END(loom_host_services_t, aligned_free)) {
    return nullptr;
  }
  loom::common::set_host_services(services);
  return &loom::blas::kPlugin;
}
