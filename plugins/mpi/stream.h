// A stream of a remote device: runs a graph on the worker. The graph is
// serialised (every tensor it touches: fields, buffer id and offset, sources
// by index) and keyed by a hash of those bytes; the first compute of a key
// sends the graph once ("graph" message, cached by the worker), every later
// one sends only "run key". Rank 0 keeps a copy of each worker's bounded
// graph cache (transport.h), so a graph the worker dropped is sent again
// before its run. A run is posted: compute returns once it is sent, and its
// reply (done, or the error) is collected at the next flush point
// (synchronize, a read, destroy) or the next request to that rank; the
// queued copies (queue.h) are held until a run carries the writes or a flush
// point sends them as one batch. So the device is LOOM_DEVICE_CAP_ASYNC
// (its work may still run when compute returns). One thread at a time.
#pragma once

#include <cstdint>

#include "loom/plugin.h"
#include "queue.h"

namespace loom::mpi {

class RemoteDevice;

class RemoteStream {
 public:
  // A new stream; the caller destroys it through its iface->destroy.
  static loom_stream_t* create(RemoteDevice* device);

  loom_status_t* compute(const loom_graph_t* graph);
  StreamQueue& queue() { return queue_; }
  RemoteDevice* device() { return device_; }

 private:
  explicit RemoteStream(RemoteDevice* device);
  friend struct StreamAccess;
  loom_status_t* post_run(uint64_t key);
  RemoteDevice* device_;
  StreamQueue queue_;
  loom_stream_t raw_;
};

}  // namespace loom::mpi
