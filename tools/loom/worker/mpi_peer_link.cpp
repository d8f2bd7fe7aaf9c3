// PeerLink over MPI_COMM_WORLD: the bytes of rank to rank copies go straight
// between two workers (MPI_Isend / MPI_Irecv, all of a request started
// before any is waited for), each wait a test loop with the deadline rank 0
// put in the request, so a peer that died or never got its side costs at
// most that wait, then an error reply.
#ifdef LOOM_HAVE_MPI
#include <mpi.h>

#include <chrono>
#include <list>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "worker/mpi_session.hpp"
#include "worker/peer_link.hpp"

namespace loom::cli::worker {
namespace {

using Clock = std::chrono::steady_clock;

// "sending to rank 2 (tag 8197)": the item's number is the caller's prefix.
std::string side(const Transfer& t) {
  return std::string(t.send ? "sending to rank " : "receiving from rank ") + std::to_string(t.peer) + " (tag " +
         std::to_string(t.tag) + ")";
}

std::string seconds(double s) {
  std::ostringstream o;
  o << s << " s";
  return o.str();
}

class MpiPeerLink : public PeerLink {
 public:
  int world_size() const override {
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }

  void exchange(std::vector<Transfer>* transfers) override {
    reap();
    const auto start = Clock::now();
    std::vector<MPI_Request> reqs(transfers->size(), MPI_REQUEST_NULL);
    size_t open = 0;
    for (size_t i = 0; i < transfers->size(); ++i) {
      Transfer& t = (*transfers)[i];
      const int n = static_cast<int>(t.bytes.size());
      const int rc = t.send ? MPI_Isend(t.bytes.data(), n, MPI_BYTE, t.peer, t.tag, MPI_COMM_WORLD, &reqs[i])
                            : MPI_Irecv(t.bytes.data(), n, MPI_BYTE, t.peer, t.tag, MPI_COMM_WORLD, &reqs[i]);
      if (rc != MPI_SUCCESS) {
        t.status = unavailable(side(t) + ": " + mpi_error(rc));
        reqs[i] = MPI_REQUEST_NULL;
      } else {
        ++open;
      }
    }
    for (int spins = 0; open > 0; ++spins) {
      for (size_t i = 0; i < reqs.size(); ++i) {
        if (reqs[i] == MPI_REQUEST_NULL) continue;
        Transfer& t = (*transfers)[i];
        int done = 0;
        MPI_Status st;
        const int rc = MPI_Test(&reqs[i], &done, &st);
        if (rc != MPI_SUCCESS) {
          t.status = unavailable(side(t) + ": " + mpi_error(rc));
          reqs[i] = MPI_REQUEST_NULL;  // an erroneous request is not tested again
          --open;
        } else if (done) {
          int count = 0;
          if (!t.send) MPI_Get_count(&st, MPI_BYTE, &count);
          t.got = static_cast<size_t>(count < 0 ? 0 : count);
          reqs[i] = MPI_REQUEST_NULL;
          --open;
        } else if (Clock::now() - start > std::chrono::duration<double>(t.wait_s)) {
          t.status = unavailable(side(t) + ": rank " + std::to_string(t.peer) + (t.send ? " took nothing" : " sent nothing") +
                                 " within " + seconds(t.wait_s));
          give_up(&reqs[i], &t);
          --open;
        }
      }
      if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  void discard(int from, int tag, double wait_s) override {
    const auto deadline = Clock::now() + std::chrono::duration<double>(wait_s);
    for (int spins = 0; Clock::now() < deadline; ++spins) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS) return;
      if (flag) {
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        std::vector<uint8_t> sink(static_cast<size_t>(count < 0 ? 0 : count));
        MPI_Recv(sink.data(), count, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
      }
      if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

 private:
  // Cancel a request; a receive completes once cancelled, a send may not:
  // its bytes stay here until MPI is done with them.
  void give_up(MPI_Request* req, Transfer* t) {
    MPI_Cancel(req);
    if (!t->send) {
      MPI_Wait(req, MPI_STATUS_IGNORE);
      return;
    }
    int done = 0;
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (!done) pending_.push_back({*req, std::move(t->bytes)});
    *req = MPI_REQUEST_NULL;
  }
  void reap() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->req, &done, MPI_STATUS_IGNORE);
      it = done ? pending_.erase(it) : std::next(it);
    }
  }
  struct Pending {
    MPI_Request req;
    std::vector<uint8_t> bytes;
  };
  std::list<Pending> pending_;
};

}  // namespace

std::unique_ptr<PeerLink> make_mpi_peer_link() { return std::make_unique<MpiPeerLink>(); }

}  // namespace loom::cli::worker
#endif
