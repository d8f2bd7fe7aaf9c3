#include "device.h"

#include <cstring>

#include "common/glue.h"
#include "stream.h"

namespace loom::null {
namespace {

using loom::common::guarded;
using loom::common::make_status;
using loom::common::write_device_props;

loom_status_t* device_get_props(loom_device_t* d, loom_device_props_t* out) {
  return guarded("null.get_props", [&]() -> loom_status_t* {
    const DeviceConfig& c = Device::from(d)->config();
    loom_device_props_t props{};
    props.struct_size = sizeof props;
    props.name = c.name.c_str();
    props.description = c.description.c_str();
    props.type = c.type;
    // memory_total/free stay 0 (unknown): the null device has no memory of its own.
    std::strncpy(props.pci_bus_id, c.pci_bus_id.c_str(), sizeof props.pci_bus_id - 1);
    std::memcpy(props.uuid, c.uuid, sizeof props.uuid);
    props.has_uuid = c.has_uuid;
    props.caps = c.caps;
    write_device_props(props, out);
    return nullptr;
  });
}

loom_buffer_type_t* device_buffer_type(loom_device_t* d) { return Device::from(d)->buffer_type().handle(); }

bool device_supports_op(loom_device_t*, const loom_tensor_t*) {
  return false;  // a real backend answers from the node's op, types and shapes
}

bool device_supports_buffer_type(loom_device_t* d, const loom_buffer_type_t* t) {
  return t == Device::from(d)->buffer_type().handle();
}

loom_status_t* device_stream_create(loom_device_t* d, loom_stream_t** out_stream) {
  return guarded("null.stream_create", [&]() -> loom_status_t* {
    *out_stream = Stream::create(d);
    return nullptr;
  });
}

loom_status_t* threads_set(loom_device_t* d, int32_t n) {
  return guarded("null.set_threads", [&]() -> loom_status_t* {
    if (n < 1) {
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[null.set_threads] thread count " + std::to_string(n) + " < 1");
    }
    Device::from(d)->set_threads(n);
    return nullptr;
  });
}

int32_t threads_get(loom_device_t* d) { return Device::from(d)->threads(); }

const loom_ext_threads_t kThreadsExt = {sizeof(loom_ext_threads_t), threads_set, threads_get};

const void* device_get_extension(loom_device_t*, const char* id, uint32_t version) {
  if (id && std::strcmp(id, LOOM_EXT_THREADS) == 0 && version == LOOM_EXT_THREADS_VERSION) return &kThreadsExt;
  return nullptr;
}

const loom_device_iface_t kDeviceIface = {
    sizeof(loom_device_iface_t),
    device_get_props,
    device_buffer_type,
    nullptr,  // host_buffer_type: plain host memory is already this device's memory
    device_supports_op,
    device_supports_buffer_type,
    device_stream_create,
    nullptr,  // event_create: no events; the host synchronises streams
    device_get_extension,
    nullptr,  // buffer_from_host_ptr: the host copies instead
};

}  // namespace

DeviceConfig make_device_config(const std::string& prefix, size_t index, const char* tag) {
  DeviceConfig c;
  c.name = prefix + std::to_string(index);
  c.description = "loom null device " + std::to_string(index) + " (host memory, no ops)";
  c.type = LOOM_DEVICE_TYPE_ACCEL;
  c.has_uuid = true;
  std::memcpy(c.uuid, tag, strnlen(tag, 8));
  c.uuid[15] = static_cast<uint8_t>(index & 0xFF);
  c.uuid[14] = static_cast<uint8_t>((index >> 8) & 0xFF);
  return c;
}

Device::Device(DeviceConfig config)
    : config_(std::move(config)),
      raw_{sizeof(loom_device_t), &kDeviceIface, this},
      buffer_type_(&raw_, buffer_config()) {}

}  // namespace loom::null
