// How a worker moves the bytes of rank to rank copies to and from other
// workers: MPI point-to-point on each copy's own tag (mpi_peer_link.cpp),
// or a test double (tests/mpi). The WorkerServer validates every copy
// before it calls this, so the link sees only well-formed ranks, tags and
// sizes. Not thread-safe: the worker's one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "loom/runtime/status.hpp"

namespace loom::cli::worker {

// One message to send or receive.
struct Transfer {
  bool send = false;
  int peer = 0;
  int tag = 0;
  double wait_s = 0;           // how long to wait for the other side
  std::vector<uint8_t> bytes;  // send: the bytes (empty: "this side failed"); receive: room for the most expected
  size_t got = 0;              // receive: bytes that came
  Status status;               // after exchange()
};

class PeerLink {
 public:
  virtual ~PeerLink() = default;
  // Ranks in the job (rank 0 included).
  virtual int world_size() const = 0;
  // Start every transfer (non-blocking), then wait for all, each at most its
  // wait_s; each gets its status. A send given up on keeps its bytes in the
  // link while MPI may still read them; a longer message than a receive's
  // room is an error.
  virtual void exchange(std::vector<Transfer>* transfers) = 0;
  // Receive and drop the one message rank `from` sends on `tag` (this side's
  // copy was refused), waiting at most wait_s.
  virtual void discard(int from, int tag, double wait_s) = 0;
};

#ifdef LOOM_HAVE_MPI
// Over MPI_COMM_WORLD (MPI initialised, errors returned).
std::unique_ptr<PeerLink> make_mpi_peer_link();
#endif

}  // namespace loom::cli::worker
