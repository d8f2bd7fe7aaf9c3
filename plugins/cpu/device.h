// The one CPU device: properties, its "cpu" buffer type, the thread pool that
// runs kernels, and the thread-count extension. Thread-safe: computes on the
// device are serialised (one pool), set_threads waits for a running compute.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "buffer.h"
#include "profile.h"
#include "common/thread_pool.h"
#include "loom/plugin.h"

namespace loom::cpu {

class Device {
 public:
  // `iface` is static and outlives the device.
  explicit Device(const loom_device_iface_t* iface);
  static Device* from(loom_device_t* d) { return static_cast<Device*>(d->context); }

  loom_device_t* handle() { return &handle_; }
  BufferType& buffer_type() { return buffer_type_; }
  // "cpu_weights": Q8_0 / Q4_0 weights repacked for the int8 kernels
  // (weight_layout.h), offered through loom.weight_layout.
  BufferType& weight_buffer_type() { return weight_type_; }
  // Writes only the fields that end within out_props->struct_size.
  loom_status_t* get_props(loom_device_props_t* out_props) const;
  // Whether the kernels can read/write memory of this buffer type.
  bool supports_buffer_type(const loom_buffer_type_t* buffer_type) const;

  loom_status_t* set_threads(int32_t n_threads);
  int32_t threads() const;

  // Run every node of the graph in order on the pool; returns at completion.
  loom_status_t* compute(const loom_graph_t* graph);

 private:
  loom_device_t handle_;
  BufferType buffer_type_;
  BufferType weight_type_;
  std::string description_;
  mutable std::mutex mu_;  // guards n_threads_ and pool_, held through compute
  int n_threads_;
  std::unique_ptr<common::ThreadPool> pool_;  // made on first compute
  std::vector<uint8_t> scratch_;
  Profile profile_;  // LOOM_CPU_PROFILE              // kernels' shared scratch (ops/ops.h Exec)
};

}  // namespace loom::cpu
