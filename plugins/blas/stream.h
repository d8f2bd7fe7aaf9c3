// A stream of the BLAS device: compute runs the graph synchronously in the
// caller's thread (OpenBLAS fans out to its own threads inside each call), so
// synchronize has nothing to wait for. Owns the f32 scratch operands are
// converted into, reused across computes. One thread at a time.
#pragma once

#include "device.h"
#include "loom/plugin.h"
#include "ops/ops.h"

namespace loom::blas {

class Stream {
 public:
  Stream(Device* device, const loom_stream_iface_t* iface);
  static Stream* from(loom_stream_t* s) { return static_cast<Stream*>(s->context); }

  loom_stream_t* handle() { return &handle_; }
  loom_status_t* compute(const loom_graph_t* graph) { return device_->compute(graph, scratch_); }

 private:
  loom_stream_t handle_;
  Device* device_;
  Scratch scratch_;
};

}  // namespace loom::blas
