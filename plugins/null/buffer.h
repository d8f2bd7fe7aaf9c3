// The null plugin's memory: one buffer type ("null") whose buffers are plain
// host memory, the shared host buffer type of plugins/common. A new backend
// replaces this with its device memory: its own loom_buffer_type_iface_t and
// loom_buffer_iface_t tables (see plugins/common/host_buffer.cpp for the
// layout and the range checks every set/get must make).
#pragma once

#include "common/host_buffer.h"

namespace loom::null {

using BufferType = common::HostBufferType;

// The config of each device's buffer type: name and error prefix "null",
// 64-byte alignment, no copy_tensor (the host stages copies through host
// memory).
common::HostBufferConfig buffer_config();

}  // namespace loom::null
