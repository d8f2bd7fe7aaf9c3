// The ABI tables of a plugin with one host-memory device (cpu, blas): stream,
// thread-count extension, device and plugin entries, each forwarding to the
// plugin's C++ Device and Stream with no exception crossing the ABI. The
// plugin's plugin.cpp keeps its loom_plugin_t (name, version) and the one
// extern "C" symbol. Header-only: instantiated once per plugin library.
//
// Traits supplies:
//   static constexpr const char* kName;  // "cpu": device name prefix in messages
//   using Device = ...;  // Device(const loom_device_iface_t*), from(loom_device_t*), handle(),
//                        // buffer_type() (a common::HostBufferType&), get_props(out),
//                        // supports_buffer_type(bt), set_threads(n), threads()
//   using Stream = ...;  // Stream(Device*, const loom_stream_iface_t*), from(loom_stream_t*),
//                        // handle(), compute(graph) (synchronous)
//   static bool supports_op(const loom_tensor_t* node);
//   static double op_time_us(Device&, const loom_tensor_t* node);  // loom.cost
//   static const void* extension(Device&, const char* id, uint32_t version);  // others, or nullptr
#pragma once

#include <cstring>
#include <string>

#include "common/glue.h"
#include "common/host_buffer.h"
#include "loom/plugin.h"

namespace loom::common {

template <typename Traits>
struct HostPlugin {
  using Device = typename Traits::Device;
  using Stream = typename Traits::Stream;

  // ---------------------------------------------------------------- stream

  static void stream_destroy(loom_stream_t* s) {
    if (s != nullptr) delete Stream::from(s);
  }
  static loom_status_t* stream_compute(loom_stream_t* s, const loom_graph_t* graph) {
    return guarded(Traits::kName, "compute", [&] { return Stream::from(s)->compute(graph); });
  }
  static loom_status_t* stream_synchronize(loom_stream_t*) { return nullptr; }  // compute is synchronous

  static inline const loom_stream_iface_t kStreamIface = {
      sizeof(loom_stream_iface_t), stream_destroy, stream_compute, stream_synchronize,
      /*set_tensor_async=*/nullptr, /*get_tensor_async=*/nullptr,
      /*record_event=*/nullptr, /*wait_event=*/nullptr,
  };

  // ---------------------------------------------------------------- device

  static loom_status_t* threads_set(loom_device_t* d, int32_t n) {
    return guarded(Traits::kName, "set_threads", [&] { return Device::from(d)->set_threads(n); });
  }
  static int32_t threads_get(loom_device_t* d) { return Device::from(d)->threads(); }

  static inline const loom_ext_threads_t kThreadsExt = {sizeof(loom_ext_threads_t), threads_set,
                                                        threads_get};

  static double cost_op_time_us(loom_device_t* d, const loom_tensor_t* node) {
    try {
      return Traits::op_time_us(*Device::from(d), node);
    } catch (...) {
      return -1.0;
    }
  }

  static inline const loom_ext_cost_t kCostExt = {sizeof(loom_ext_cost_t), cost_op_time_us};

  static loom_status_t* device_get_props(loom_device_t* d, loom_device_props_t* out) {
    return guarded(Traits::kName, "get_props", [&] { return Device::from(d)->get_props(out); });
  }
  // Device memory is host memory: one buffer type answers both.
  static loom_buffer_type_t* device_buffer_type(loom_device_t* d) {
    return Device::from(d)->buffer_type().handle();
  }
  static bool device_supports_op(loom_device_t*, const loom_tensor_t* node) {
    return Traits::supports_op(node);
  }
  static bool device_supports_buffer_type(loom_device_t* d, const loom_buffer_type_t* bt) {
    return Device::from(d)->supports_buffer_type(bt);
  }
  static loom_status_t* device_stream_create(loom_device_t* d, loom_stream_t** out) {
    return guarded(Traits::kName, "stream_create", [&]() -> loom_status_t* {
      if (out == nullptr) {
        return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                           std::string("[") + Traits::kName + ".stream_create] out_stream is null");
      }
      *out = (new Stream(Device::from(d), &kStreamIface))->handle();
      return nullptr;
    });
  }
  static const void* device_get_extension(loom_device_t* d, const char* id, uint32_t version) {
    if (id != nullptr && std::strcmp(id, LOOM_EXT_THREADS) == 0 && version == LOOM_EXT_THREADS_VERSION) {
      return &kThreadsExt;
    }
    if (id != nullptr && std::strcmp(id, LOOM_EXT_COST) == 0 && version == LOOM_EXT_COST_VERSION) {
      return &kCostExt;
    }
    return Traits::extension(*Device::from(d), id, version);
  }
  static loom_status_t* device_buffer_from_host_ptr(loom_device_t* d, void* ptr, size_t size,
                                                    loom_buffer_t** out) {
    return guarded(Traits::kName, "buffer_from_host_ptr",
                   [&] { return Device::from(d)->buffer_type().wrap(ptr, size, out); });
  }

  static inline const loom_device_iface_t kDeviceIface = {
      sizeof(loom_device_iface_t),
      device_get_props,
      device_buffer_type,
      /*host_buffer_type=*/device_buffer_type,
      device_supports_op,
      device_supports_buffer_type,
      device_stream_create,
      /*event_create=*/nullptr,
      device_get_extension,
      device_buffer_from_host_ptr,
  };

  // ---------------------------------------------------------------- plugin

  // What init returns as the plugin context; owns the one device.
  struct Context {
    Device device{&kDeviceIface};
  };

  static loom_status_t* init(void** out_context) {
    return guarded(Traits::kName, "init", [&]() -> loom_status_t* {
      if (out_context == nullptr) {
        return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                           std::string("[") + Traits::kName + ".init] out_context is null");
      }
      *out_context = new Context();
      return nullptr;
    });
  }
  static void shutdown(void* context) { delete static_cast<Context*>(context); }
  static size_t device_count(void*) { return 1; }
  static loom_device_t* device_get(void* context, size_t index) {
    return index == 0 ? static_cast<Context*>(context)->device.handle() : nullptr;
  }
};

}  // namespace loom::common
