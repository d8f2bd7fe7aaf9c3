// A null stream: an in-order queue that runs nothing. compute answers
// UNIMPLEMENTED naming the first node it would have to run; synchronize
// has nothing to wait for. A new backend queues its kernels here.
#pragma once

#include "loom/plugin.h"

namespace loom::null {

class Stream {
 public:
  // A new stream on the device; the host destroys it through its iface.
  static loom_stream_t* create(loom_device_t* device);

 private:
  explicit Stream(loom_device_t* device);
  loom_stream_t raw_;
  friend struct StreamAccess;
};

}  // namespace loom::null
