// A stream of a remote device: runs a graph on the worker. The graph is
// serialised (every tensor it touches: fields, buffer id and offset, sources
// by index) and keyed by a hash of those bytes; the first compute of a key
// sends the graph once ("graph" message, cached by the worker), every later
// one sends only "run key". A worker that dropped the key (its cache is
// bounded) answers NOT_FOUND and the graph is sent again. compute returns
// when the worker's stream is done; the queued copies (queue.h) are held
// until a run carries the writes or a flush point (synchronize, destroy)
// sends them as one batch, which is why the device reports
// LOOM_DEVICE_CAP_ASYNC. One thread at a time.
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

 private:
  explicit RemoteStream(RemoteDevice* device);
  friend struct StreamAccess;
  loom_status_t* run(uint64_t key, bool carry_writes, bool* ran);
  RemoteDevice* device_;
  StreamQueue queue_;
  loom_stream_t raw_;
};

}  // namespace loom::mpi
