// The one BLAS device ("blas", type ACCEL): properties (the OpenBLAS build in
// the description), its host-memory "blas" buffer type, the thread count
// (OpenBLAS's, process-wide, plus a small pool for operand conversion) and
// the thread-count extension. Thread-safe: computes on the device are
// serialised, set_threads waits for a running compute.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "buffer.h"
#include "common/thread_pool.h"
#include "loom/plugin.h"
#include "ops/ops.h"

namespace loom::blas {

// LOOM_BLAS_THREADS when set to a valid count, else the hardware threads.
int default_blas_threads();

class Device {
 public:
  // `iface` is static and outlives the device.
  explicit Device(const loom_device_iface_t* iface);
  static Device* from(loom_device_t* d) { return static_cast<Device*>(d->context); }

  loom_device_t* handle() { return &handle_; }
  BufferType& buffer_type() { return buffer_type_; }
  // Writes only the fields that end within out_props->struct_size.
  loom_status_t* get_props(loom_device_props_t* out_props) const;
  // Any host-memory buffer type (the kernels read and write through `data`).
  bool supports_buffer_type(const loom_buffer_type_t* buffer_type) const;

  loom_status_t* set_threads(int32_t n_threads);
  int32_t threads() const;

  // Run every node of the graph in order with the stream's scratch;
  // synchronous: returns at completion.
  loom_status_t* compute(const loom_graph_t* graph, Scratch& scratch);

 private:
  loom_device_t handle_;
  BufferType buffer_type_;
  std::string description_;
  mutable std::mutex mu_;  // guards the fields below; held through compute
  int n_threads_;
  int applied_threads_ = 0;                   // what OpenBLAS was last told; 0 = not yet
  std::unique_ptr<common::ThreadPool> pool_;  // conversion pool, made on first compute
};

}  // namespace loom::blas
