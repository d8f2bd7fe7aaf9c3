// The queue of a remote stream: host<->tensor copies (set_tensor_async,
// get_tensor_async) held on rank 0 instead of one round trip each. A write's
// bytes are copied at the call, so the caller may reuse its memory at once.
// The writes travel inside the stream's next run request (the step inputs of
// a decode step), or with everything queued in one batch request at a flush
// point (a read's result needed: synchronize, the stream's end; a run after
// queued reads); the reads come back in that one reply, in order. Large
// copies (over kMaxQueued bytes) flush the queue and go at once, in set/get
// messages. One per stream; a mutex serialises its stream's thread and a
// rank to rank copy that posts the queued writes first (post_writes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "common/mpi_wire.h"
#include "loom/plugin.h"

namespace loom::mpi {

class RemoteDevice;

class StreamQueue {
 public:
  // Bytes one batch may hold (writes' bytes plus reads' sizes).
  static constexpr size_t kMaxQueued = size_t{16} << 20;

  explicit StreamQueue(RemoteDevice* device) : device_(device) {}

  loom_status_t* write(const loom_tensor_t* t, const void* data, size_t offset, size_t size);
  loom_status_t* read(const loom_tensor_t* t, void* data, size_t offset, size_t size);
  // Send everything queued as one batch and fill the reads (nothing to send:
  // no message, only the replies the rank owes for posted copies are
  // collected). On failure the queue is dropped and the reads' memory is
  // unspecified.
  loom_status_t* flush();

  // The queued writes as a posted batch (its reply collected later), so
  // that what is posted next to this rank comes after them; a flush when
  // reads are queued too. Nothing queued: nothing sent.
  loom_status_t* post_writes();

  bool has_reads() const;
  // Append the queued writes (count, items) to a run request and forget
  // them; only when !has_reads() (reads first need a flush).
  void move_writes_into(common::mpi::Writer& run);

 private:
  void clear();
  loom_status_t* flush_locked();
  mutable std::mutex mu_;

  RemoteDevice* device_;
  common::mpi::Writer items_{common::mpi::Kind::kBatch, ""};  // header unused: items follow it
  uint32_t count_ = 0;
  size_t bytes_ = 0;
  struct Read {
    void* data;
    size_t size;
  };
  std::vector<Read> reads_;
};

}  // namespace loom::mpi
