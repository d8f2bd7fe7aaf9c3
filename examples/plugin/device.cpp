#include "device.h"

#include <cstring>

#include "common/glue.h"
#include "ops.h"
#include "stream.h"

namespace example {
namespace {

using loom::common::guarded;

loom_status_t* device_get_props(loom_device_t*, loom_device_props_t* out) {
  return guarded("example.get_props", [&]() -> loom_status_t* {
    loom_device_props_t props{};
    props.struct_size = sizeof props;
    props.name = "example0";
    props.description = "loom example backend (out-of-tree plugin: MUL_MAT, SOFT_MAX, ADD, SCALE on F32)";
    props.type = LOOM_DEVICE_TYPE_ACCEL;
    props.caps = 0;  // synchronous, no events, no host buffer type
    // Writes only the fields that end within the struct_size the host set.
    loom::common::write_device_props(props, out);
    return nullptr;
  });
}

loom_buffer_type_t* device_buffer_type(loom_device_t* d) { return Device::from(d)->buffer_type().handle(); }

// Must answer for any node without failing: ops.cpp decides.
bool device_supports_op(loom_device_t*, const loom_tensor_t* node) { return node != nullptr && supports(node); }

// The kernels read only this device's own memory.
bool device_supports_buffer_type(loom_device_t* d, const loom_buffer_type_t* t) {
  return t == Device::from(d)->buffer_type().handle();
}

loom_status_t* device_stream_create(loom_device_t* d, loom_stream_t** out) {
  return guarded("example.stream_create", [&]() -> loom_status_t* {
    *out = create_stream(d);
    return nullptr;
  });
}

const loom_device_iface_t kDeviceIface = {
    sizeof(loom_device_iface_t),
    device_get_props,
    device_buffer_type,
    nullptr,  // host_buffer_type: none
    device_supports_op,
    device_supports_buffer_type,
    device_stream_create,
    nullptr,  // event_create: none; the host synchronises the stream
    nullptr,  // get_extension: none
    nullptr,  // buffer_from_host_ptr: the host copies into our memory
};

}  // namespace

Device::Device() : raw_{sizeof(loom_device_t), &kDeviceIface, this}, buffer_type_(&raw_) {}

}  // namespace example
