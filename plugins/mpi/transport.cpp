#include "transport.h"

#include <mpi.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/glue.h"

namespace loom::mpi {
namespace {

using common::make_status;
namespace wire = common::mpi;

std::string mpi_error(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

}  // namespace

Transport::Transport(int rank, int size, double timeout_s, std::string loom_version)
    : rank_(rank), size_(size), timeout_s_(timeout_s), loom_version_(std::move(loom_version)),
      lost_(static_cast<size_t>(size)), owed_(static_cast<size_t>(size)), outbox_(static_cast<size_t>(size)),
      graphs_(static_cast<size_t>(size)) {
  counts_.read_back.assign(static_cast<size_t>(size), 0);
}

Transport::Counts Transport::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

// Test `request` until it completes or the deadline passes; "" when done.
// Polling (with a short sleep) instead of MPI_Wait is what bounds the wait.
std::string Transport::wait(void* request, const char* step, int peer) {
  auto* req = static_cast<MPI_Request*>(request);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  for (int spins = 0;; ++spins) {
    int done = 0;
    const int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return std::string(step) + " failed: " + mpi_error(rc);
    if (done) return "";
    if (std::chrono::steady_clock::now() > deadline) {
      MPI_Cancel(req);
      return "rank " + std::to_string(peer) + " did not answer within " + std::to_string(static_cast<int>(timeout_s_)) +
             " s (" + step + "; LOOM_MPI_TIMEOUT)";
    }
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::string Transport::send(int peer, const std::vector<uint8_t>& out) {
  if (out.size() > static_cast<size_t>(INT32_MAX)) return "message of " + std::to_string(out.size()) + " bytes exceeds MPI's int count";
  MPI_Request req;
  const int rc = MPI_Isend(out.data(), static_cast<int>(out.size()), MPI_BYTE, peer, wire::kMpiTag, MPI_COMM_WORLD, &req);
  if (rc != MPI_SUCCESS) return "send failed: " + mpi_error(rc);
  return wait(&req, "send", peer);
}

std::string Transport::receive(int peer, std::vector<uint8_t>* in) {
  // The reply's size first (probe with a deadline), then the reply itself.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  MPI_Status st;
  for (int spins = 0;; ++spins) {
    int flag = 0;
    const int rc = MPI_Iprobe(peer, wire::kMpiTag, MPI_COMM_WORLD, &flag, &st);
    if (rc != MPI_SUCCESS) return "probe failed: " + mpi_error(rc);
    if (flag) break;
    if (std::chrono::steady_clock::now() > deadline) {
      return "rank " + std::to_string(peer) + " did not answer within " + std::to_string(static_cast<int>(timeout_s_)) +
             " s (LOOM_MPI_TIMEOUT)";
    }
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  in->resize(static_cast<size_t>(count));
  const int rc = MPI_Recv(in->data(), count, MPI_BYTE, peer, wire::kMpiTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) return "receive failed: " + mpi_error(rc);
  return "";
}

loom_status_t* Transport::lose(int peer, const std::string& what, const std::string& why) {
  std::string& lost = lost_[static_cast<size_t>(peer)];
  lost = "device " + what + " lost (rank " + std::to_string(peer) + ": " + why + ")";
  owed_[static_cast<size_t>(peer)].clear();
  outbox_[static_cast<size_t>(peer)] = Outbox{};
  return make_status(LOOM_STATUS_UNAVAILABLE, lost);
}

loom_status_t* Transport::send_counted(int peer, const std::string& what, const std::vector<uint8_t>& msg) {
  if (peer <= 0 || peer >= size_) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[mpi.request] rank " + std::to_string(peer) + " is not a worker");
  }
  const std::string& lost = lost_[static_cast<size_t>(peer)];
  if (!lost.empty()) return make_status(LOOM_STATUS_UNAVAILABLE, lost);
  const auto* hdr = reinterpret_cast<const wire::WireHeader*>(msg.data());
  if (hdr->kind < kKinds) {
    counts_.messages[hdr->kind] += 1;
    counts_.bytes[hdr->kind] += msg.size();
  }
  const std::string err = send(peer, msg);
  return err.empty() ? nullptr : lose(peer, what, err);
}

loom_status_t* Transport::reply(int peer, uint32_t kind, const std::string& what, std::vector<uint8_t>* payload) {
  std::vector<uint8_t> in;
  std::string err = receive(peer, &in);
  if (err.empty() && in.size() < sizeof(wire::WireHeader)) err = "rank " + std::to_string(peer) + " sent a short reply";
  wire::WireHeader h{};
  if (err.empty()) {
    std::memcpy(&h, in.data(), sizeof h);
    err = wire::check_header(h, loom_version_, peer);
  }
  if (kind < kKinds) counts_.reply_bytes[kind] += in.size();
  if (!err.empty()) return lose(peer, what, err);
  wire::Reader r(in.data() + sizeof h, in.size() - sizeof h);
  if (h.kind == static_cast<uint32_t>(wire::Kind::kReplyError)) {
    const uint32_t code = r.u32();
    const std::string text = r.str(1u << 16);
    const auto c = (code >= 1 && code <= LOOM_STATUS_ABORTED) ? static_cast<loom_status_code_t>(code) : LOOM_STATUS_INTERNAL;
    return make_status(c, "[mpi." + std::string(wire::kind_name(kind)) + "] " + what + " (rank " +
                              std::to_string(peer) + "): " + text);
  }
  if (h.kind != static_cast<uint32_t>(wire::Kind::kReplyOk)) {
    return make_status(LOOM_STATUS_INTERNAL, "[mpi.request] rank " + std::to_string(peer) + " replied with kind " +
                                                 std::to_string(h.kind));
  }
  if (kind == static_cast<uint32_t>(wire::Kind::kGet) || kind == static_cast<uint32_t>(wire::Kind::kBatch)) {
    counts_.read_back[static_cast<size_t>(peer)] += in.size() - sizeof h;
  }
  if (payload) payload->assign(in.begin() + sizeof h, in.end());
  return nullptr;
}

loom_status_t* Transport::request(int peer, const std::string& what, wire::Writer& msg,
                                  std::vector<uint8_t>* payload) {
  std::lock_guard<std::mutex> lock(mu_);
  loom_status_t* owed_error = send_posted();
  if (loom_status_t* st = send_counted(peer, what, msg.data())) {
    if (owed_error) common::host_services()->status_free(owed_error);
    return st;
  }
  // Sent first, then the owed replies: the worker may work on both meanwhile.
  owed_error = drain_owed(peer, owed_error);
  if (owed_error != nullptr && !lost_[static_cast<size_t>(peer)].empty()) return owed_error;
  const uint32_t kind = reinterpret_cast<const wire::WireHeader*>(msg.data().data())->kind;
  loom_status_t* st = reply(peer, kind, what, payload);
  if (owed_error == nullptr) return st;
  if (st) common::host_services()->status_free(st);
  return owed_error;
}

loom_status_t* Transport::post(int peer, const std::string& what, const wire::WireCopy& item) {
  std::lock_guard<std::mutex> lock(mu_);
  if (peer <= 0 || peer >= size_) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[mpi.request] rank " + std::to_string(peer) + " is not a worker");
  }
  const std::string& lost = lost_[static_cast<size_t>(peer)];
  if (!lost.empty()) return make_status(LOOM_STATUS_UNAVAILABLE, lost);
  Outbox& o = outbox_[static_cast<size_t>(peer)];
  if (o.count == wire::kWireMaxCopies) {
    if (loom_status_t* st = send_posted()) return st;
  }
  wire::Writer w(wire::Kind::kCopies, loom_version_);  // only the item's bytes are kept
  wire::write_copy(w, item);
  o.what = what;
  o.items.insert(o.items.end(), w.data().begin() + sizeof(wire::WireHeader), w.data().end());
  ++o.count;
  return nullptr;
}

loom_status_t* Transport::send_posted() {
  loom_status_t* first = nullptr;
  for (int peer = 1; peer < size_; ++peer) {
    Outbox& o = outbox_[static_cast<size_t>(peer)];
    if (o.count == 0) continue;
    wire::Writer m(wire::Kind::kCopies, loom_version_);
    m.u32(o.count);
    m.bytes(o.items.data(), o.items.size());
    const std::string what = o.what;
    o = Outbox{};
    loom_status_t* st = send_counted(peer, what, m.data());
    if (st == nullptr) {
      owed_[static_cast<size_t>(peer)].push_back({static_cast<uint32_t>(wire::Kind::kCopies), what});
      counts_.posted[static_cast<uint32_t>(wire::Kind::kCopies)] += 1;
    } else if (first == nullptr) {
      first = st;
    } else {
      common::host_services()->status_free(st);
    }
  }
  return first;
}

loom_status_t* Transport::drain_owed(int peer, loom_status_t* first) {
  std::deque<Owed>& owed = owed_[static_cast<size_t>(peer)];
  while (!owed.empty()) {
    const Owed o = owed.front();
    owed.pop_front();
    std::vector<uint8_t> payload;
    loom_status_t* st = reply(peer, o.kind, o.what, &payload);
    if (st == nullptr && o.kind == static_cast<uint32_t>(wire::Kind::kRun)) {
      // A posted run answers whether it found its graph: rank 0 posts only
      // runs of graphs its copy of the cache holds, so "no" is a bug here.
      wire::Reader r(payload.data(), payload.size());
      if (r.u32() != 1 || r.failed()) {
        st = make_status(LOOM_STATUS_INTERNAL, "[mpi.run] " + o.what + " (rank " + std::to_string(peer) +
                                                   ") did not have the graph rank 0 ran: their graph caches differ");
      }
    }
    if (st == nullptr) continue;
    if (!lost_[static_cast<size_t>(peer)].empty()) {  // the lost rank's error is the one to report
      if (first) common::host_services()->status_free(first);
      return st;
    }
    if (first == nullptr) {
      first = st;
    } else {
      common::host_services()->status_free(st);
    }
  }
  return first;
}

loom_status_t* Transport::collect(int peer) {
  std::lock_guard<std::mutex> lock(mu_);
  loom_status_t* first = send_posted();
  if (peer <= 0 || peer >= size_) return first;
  return drain_owed(peer, first);
}

loom_status_t* Transport::post_request(int peer, const std::string& what, wire::Writer& msg) {
  std::lock_guard<std::mutex> lock(mu_);
  // The copies posted before it first: the run may read what they bring.
  if (loom_status_t* st = send_posted()) return st;
  if (loom_status_t* st = send_counted(peer, what, msg.data())) return st;
  const uint32_t kind = reinterpret_cast<const wire::WireHeader*>(msg.data().data())->kind;
  owed_[static_cast<size_t>(peer)].push_back({kind, what});
  if (kind < kKinds) counts_.posted[kind] += 1;
  return nullptr;
}

bool Transport::graph_cached(int peer, uint64_t key) const {
  return peer > 0 && peer < size_ && graphs_[static_cast<size_t>(peer)].count(key) != 0;
}

void Transport::graph_sent(int peer, uint64_t key) {
  if (peer <= 0 || peer >= size_) return;
  std::unordered_set<uint64_t>& cache = graphs_[static_cast<size_t>(peer)];
  if (cache.size() >= wire::kWireMaxGraphs) cache.clear();  // the worker's rule (WorkerServer::graph)
  cache.insert(key);
}

int Transport::next_copy_tag() {
  std::lock_guard<std::mutex> lock(mu_);
  return wire::kMpiCopyTagBase + static_cast<int>(copy_tags_++ % static_cast<uint32_t>(wire::kMpiCopyTags));
}

void Transport::count_copy(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  counts_.copies += 1;
  counts_.copy_bytes += bytes;
}

}  // namespace loom::mpi
