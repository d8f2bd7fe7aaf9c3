// Facts about the host machine that plugins whose device is host memory
// (cpu, blas) report in get_props. Thread-safe; each call reads /proc anew.
#pragma once

#include <cstdint>
#include <string>

#include "loom/plugin.h"

namespace loom::common {

// The processor model from /proc/cpuinfo ("model name", or an ARM kernel's
// "Processor"), else "CPU".
std::string cpu_model_name();

// Total and available bytes of host memory from /proc/meminfo, else
// sysinfo; 0 where neither says.
void host_memory(uint64_t* total, uint64_t* avail);

// Full props of a device whose memory is host memory: the host's memory,
// no PCI id or UUID, caps HOST_BUFFER | BUFFER_FROM_HOST_PTR. `name` and
// `description` are borrowed (they must live as long as the device); hand
// the result to write_device_props.
loom_device_props_t host_device_props(const char* name, const char* description, int32_t type);

}  // namespace loom::common
