// The simulated devices: configuration, buffer type and device objects.
//
// Memory is host malloc inside, but every address the plugin hands out
// (buffer base, hence tensor data) is shifted by kFakeOffset: a fake device
// address. The host must go through set_tensor/get_tensor; a direct host
// read of tensor data faults. The plugin translates back with real_ptr().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/op_info.h"
#include "loom/plugin.h"

namespace loom::sim {

// A host-readable device (LOOM_SIM_HOST_<i>=1) hands out real addresses
// instead, like a BLAS-style accelerator working on host memory.
//
// Far above any user-space mapping on x86-64/aarch64 (47-bit) when added to
// a heap address, so a stray host dereference crashes instead of reading.
constexpr uintptr_t kFakeOffset = uintptr_t{1} << 52;

inline void* fake_ptr(void* real) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(real) + kFakeOffset);
}
inline char* real_ptr(const void* fake) {
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(fake) - kFakeOffset);
}

struct DeviceConfig {
  std::string name;  // "sim0"
  std::string description;
  bool host = false;      // memory is host-readable; reads any host buffer
  std::vector<bool> ops;  // ops[op]: this device runs op
  size_t memory = 0;      // capacity in bytes (LOOM_SIM_MEMORY_<i>); 0: unlimited
  bool emulated = false;    // LOOM_DEVICE_CAP_EMULATED (LOOM_SIM_EMULATED_<i>=1)
  double flops_per_us = 0;  // loom.cost speed (LOOM_SIM_FLOPS_<i>); 0: no cost hint
  bool async = false;       // LOOM_SIM_ASYNC=1: worker-thread streams, events, queued copies
  bool copy = false;        // LOOM_SIM_COPY=1: buffers copy_tensor from other sim buffers
  unsigned jitter_us = 0;   // LOOM_SIM_JITTER_US: random delay per queued work item
  unsigned spin_us = 0;     // LOOM_SIM_SPIN_US: poll this long before blocking (worker, waits)
  unsigned delay_us = 0;    // LOOM_SIM_DELAY_US_<i>: fixed sleep per computed node
  double gbps = 0;          // LOOM_SIM_GBPS_<i>: a node takes >= node_bytes / gbps ns; 0: off
};

// One device with its own buffer type ("sim<i>"); lives until shutdown.
class Device {
 public:
  explicit Device(DeviceConfig config, size_t index);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  loom_device_t* raw() { return &raw_; }
  loom_buffer_type_t* buffer_type() { return &buft_; }
  const DeviceConfig& config() const { return config_; }
  size_t index() const { return index_; }
  // Bytes held by live buffers (counted against config().memory).
  size_t used = 0;
  static Device* from(loom_device_t* d) { return static_cast<Device*>(d->context); }
  static Device* from_buft(const loom_buffer_type_t* b) { return static_cast<Device*>(b->context); }

 private:
  DeviceConfig config_;
  size_t index_;
  loom_device_t raw_;
  loom_buffer_type_t buft_;
};

// Host address of t's data: translated back for fake-address (non-host)
// buffers, as is for host-readable ones (a host sim device, the CPU's).
inline char* data_ptr(const loom_tensor_t* t) {
  loom_buffer_type_t* bt = t->buffer ? t->buffer->buffer_type : nullptr;
  const bool host = bt && bt->iface->is_host(bt);
  return host ? static_cast<char*>(t->data) : real_ptr(t->data);
}

// Whether device `dev` runs this node (op enabled, F32 types).
bool node_supported(const Device& dev, const loom_tensor_t* node);

// Op names for messages and LOOM_SIM_OPS_<i> parsing (common/op_info.h).
using common::op_name;

// The loom.sim.trace extension (sim_trace.h), shared by every device.
const void* trace_extension();
// LOOM_SIM_PROFILE=1: log the per-op times (category "sim", info; at shutdown) and reset.
void profile_report();

loom_status_t* stream_create(loom_device_t* device, loom_stream_t** out_stream);
// Only offered with LOOM_SIM_ASYNC=1 (the device table has NULL otherwise).
loom_status_t* event_create(loom_device_t* device, loom_event_t** out_event);

}  // namespace loom::sim
