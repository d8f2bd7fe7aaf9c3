// Host-memory buffers of the CPU device ("cpu" buffer type): the shared
// host buffer type of plugins/common (owned allocations from the host's
// aligned_alloc, or wrappers of caller memory), named and prefixed "cpu".
#pragma once

#include "common/host_buffer.h"

namespace loom::cpu {

using BufferType = common::HostBufferType;

// The config of the device's one buffer type: name and error prefix "cpu",
// 64-byte alignment, direct copies between host buffers.
common::HostBufferConfig buffer_config();

}  // namespace loom::cpu
