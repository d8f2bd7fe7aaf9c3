// The example stream: runs a graph's nodes in order, synchronously (the
// device has no LOOM_DEVICE_CAP_ASYNC), so synchronize has nothing to wait
// for. A node it cannot run is UNIMPLEMENTED naming the node (plugin rule 9).
#pragma once

#include "loom/plugin.h"

namespace example {

// A new stream on `device`; the host destroys it through its table.
loom_stream_t* create_stream(loom_device_t* device);

}  // namespace example
