// A stream of the CPU device: compute runs the graph synchronously on the
// device's pool, so synchronize has nothing to wait for. One thread at a time.
#pragma once

#include "device.h"
#include "loom/plugin.h"

namespace loom::cpu {

class Stream {
 public:
  Stream(Device* device, const loom_stream_iface_t* iface);
  static Stream* from(loom_stream_t* s) { return static_cast<Stream*>(s->context); }

  loom_stream_t* handle() { return &handle_; }
  loom_status_t* compute(const loom_graph_t* graph) { return device_->compute(graph); }

 private:
  loom_stream_t handle_;
  Device* device_;
};

}  // namespace loom::cpu
