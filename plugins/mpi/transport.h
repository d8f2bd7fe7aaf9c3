// Rank 0's side of the wire: one request, one reply, to one worker rank,
// with a deadline. MPI errors come back as statuses (the communicator's
// error handler is MPI_ERRORS_RETURN); a worker that does not answer within
// LOOM_MPI_TIMEOUT seconds is marked lost, and every later request to it
// fails at once with the same message. Rank to rank copies are posted:
// their items wait on rank 0 and go, one copies request per rank, before
// rank 0 next waits for any reply (a worker's side may depend on another
// rank's); runs are posted too (sent at once, after the copies posted
// before them). A posted request's reply is owed and collected (in order:
// replies from one rank never overtake each other) by the next request to
// that rank or by collect(); an error in an owed reply is returned there.
// It also keeps a copy of each worker's graph cache (the rule of
// wire::kWireMaxGraphs), so a run is posted only for a graph the worker has. Thread-safe: one
// mutex serialises the exchanges, so replies never interleave. Lives in the
// plugin context until shutdown.
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <unordered_set>
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

  // Queue one item of a copies request for `peer` (see above). nullptr, or
  // the lost-rank status.
  loom_status_t* post(int peer, const std::string& what, const common::mpi::WireCopy& item);
  // Send what is posted, then wait for the replies `peer` owes; the first
  // error among them, else nullptr.
  loom_status_t* collect(int peer);
  // Send `msg` (a run) to `peer` after the copies posted so far, its reply
  // owed: an error in it, or a run that did not find its graph, comes back
  // from the call that collects it. nullptr, or the send's error.
  loom_status_t* post_request(int peer, const std::string& what, common::mpi::Writer& msg);

  // The copy of the workers' graph caches. Hold graph_lock() from the check
  // through the run's post, so no other thread's graph evicts it between.
  std::unique_lock<std::mutex> graph_lock() { return std::unique_lock<std::mutex>(graphs_mu_); }
  bool graph_cached(int peer, uint64_t key) const;
  // `peer` answered ok to a graph message of `key`.
  void graph_sent(int peer, uint64_t key);

  // The tag of the next rank to rank copy (kMpiCopyTagBase + n mod kMpiCopyTags).
  int next_copy_tag();
  // A rank to rank copy of `bytes` was posted (counted, never sent through rank 0).
  void count_copy(uint64_t bytes);

  static constexpr uint32_t kKinds = 32;
  // Messages and bytes sent so far, and the bytes of their replies, by kind
  // (logged at shutdown: the plan-reuse test counts graph messages), the
  // tensor bytes read back per rank (the payloads of get and batch replies)
  // and the rank to rank copies.
  struct Counts {
    uint64_t messages[kKinds] = {};
    uint64_t bytes[kKinds] = {};
    uint64_t reply_bytes[kKinds] = {};  // the replies' bytes (header included), by request kind
    std::vector<uint64_t> read_back;    // per rank
    uint64_t copies = 0, copy_bytes = 0;
    uint64_t posted[kKinds] = {};  // of messages[]: those whose reply was owed (runs, copies)
  };
  Counts counts() const;

 private:
  struct Owed {
    uint32_t kind;
    std::string what;
  };
  std::string send(int peer, const std::vector<uint8_t>& out);
  std::string receive(int peer, std::vector<uint8_t>* in);
  std::string wait(void* request, const char* step, int peer);
  // Send every rank's posted items (one copies request each, reply owed);
  // the first error. Holds mu_.
  loom_status_t* send_posted();
  // Every reply owed by `peer`, in order; returns `first` or the first
  // error among them (the others freed), or the lost rank's error once the
  // peer is lost (then the rest stay owed). Under mu_.
  loom_status_t* drain_owed(int peer, loom_status_t* first);
  // Count msg and send it; nullptr or the lost-rank status. Holds mu_.
  loom_status_t* send_counted(int peer, const std::string& what, const std::vector<uint8_t>& msg);
  // Receive one reply of `kind` for `what`; its payload on success. Holds mu_.
  loom_status_t* reply(int peer, uint32_t kind, const std::string& what, std::vector<uint8_t>* payload);
  loom_status_t* lose(int peer, const std::string& what, const std::string& why);

  int rank_;
  int size_;
  double timeout_s_;
  std::string loom_version_;
  mutable std::mutex mu_;
  std::vector<std::string> lost_;  // per rank: why it is lost, "" while it answers
  std::vector<std::deque<Owed>> owed_;  // per rank: replies of posted requests, oldest first
  struct Outbox {
    std::string what;
    uint32_t count = 0;
    std::vector<uint8_t> items;  // the copies request's items, without header and count
  };
  std::vector<Outbox> outbox_;  // per rank: posted items not sent yet
  Counts counts_;
  uint32_t copy_tags_ = 0;
  std::mutex graphs_mu_;  // taken before mu_, never after
  std::vector<std::unordered_set<uint64_t>> graphs_;  // per rank: the keys its cache holds

};

}  // namespace loom::mpi
