// Rank 0's side of the wire: one request, one reply, to one worker rank,
// with a deadline. MPI errors come back as statuses (the communicator's
// error handler is MPI_ERRORS_RETURN); a worker that does not answer within
// LOOM_MPI_TIMEOUT seconds is marked lost, and every later request to it
// fails at once with the same message. Thread-safe: one mutex serialises
// request/reply pairs, so replies never interleave. Lives in the plugin
// context until shutdown.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "common/mpi_wire.h"
#include "loom/plugin.h"

namespace loom::mpi {

class Transport {
 public:
  // The communicator's rank/size; timeout_s > 0.
  Transport(int rank, int size, double timeout_s, std::string loom_version);

  int rank() const { return rank_; }
  int size() const { return size_; }
  double timeout_s() const { return timeout_s_; }
  const std::string& loom_version() const { return loom_version_; }

  // Send `msg` to `peer` and wait for its reply. On an ok reply *payload
  // holds the bytes after the header; an error reply becomes its status; a
  // lost peer or an MPI error becomes UNAVAILABLE naming `what` (the device,
  // e.g. "r1.cpu") and the rank. nullptr = OK.
  loom_status_t* request(int peer, const std::string& what, common::mpi::Writer& msg,
                         std::vector<uint8_t>* payload);

  // Messages and bytes sent so far, and the bytes of their replies, by kind
  // (logged at shutdown: the plan-reuse test counts graph messages).
  struct Counts {
    uint64_t messages[16] = {};
    uint64_t bytes[16] = {};
    uint64_t reply_bytes[16] = {};  // the replies' bytes (header included), by request kind
  };
  Counts counts() const;

 private:
  std::string exchange(int peer, const std::vector<uint8_t>& out, std::vector<uint8_t>* in);
  std::string wait(void* request, const char* step, int peer);

  int rank_;
  int size_;
  double timeout_s_;
  std::string loom_version_;
  mutable std::mutex mu_;
  std::vector<std::string> lost_;  // per rank: why it is lost, "" while it answers
  Counts counts_;
};

}  // namespace loom::mpi
