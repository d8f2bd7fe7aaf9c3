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
      lost_(static_cast<size_t>(size)) {}

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

std::string Transport::exchange(int peer, const std::vector<uint8_t>& out, std::vector<uint8_t>* in) {
  if (out.size() > static_cast<size_t>(INT32_MAX)) return "message of " + std::to_string(out.size()) + " bytes exceeds MPI's int count";
  MPI_Request send;
  int rc = MPI_Isend(out.data(), static_cast<int>(out.size()), MPI_BYTE, peer, wire::kMpiTag, MPI_COMM_WORLD, &send);
  if (rc != MPI_SUCCESS) return "send failed: " + mpi_error(rc);
  std::string err = wait(&send, "send", peer);
  if (!err.empty()) return err;
  // The reply's size first (probe with a deadline), then the reply itself.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  MPI_Status st;
  for (int spins = 0;; ++spins) {
    int flag = 0;
    rc = MPI_Iprobe(peer, wire::kMpiTag, MPI_COMM_WORLD, &flag, &st);
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
  rc = MPI_Recv(in->data(), count, MPI_BYTE, peer, wire::kMpiTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) return "receive failed: " + mpi_error(rc);
  return "";
}

loom_status_t* Transport::request(int peer, const std::string& what, wire::Writer& msg,
                                  std::vector<uint8_t>* payload) {
  std::lock_guard<std::mutex> lock(mu_);
  if (peer <= 0 || peer >= size_) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[mpi.request] rank " + std::to_string(peer) + " is not a worker");
  }
  std::string& lost = lost_[static_cast<size_t>(peer)];
  if (!lost.empty()) return make_status(LOOM_STATUS_UNAVAILABLE, lost);
  const auto* hdr = reinterpret_cast<const wire::WireHeader*>(msg.data().data());
  const uint32_t kind = hdr->kind;
  if (kind < 16) {
    counts_.messages[kind] += 1;
    counts_.bytes[kind] += msg.data().size();
  }
  std::vector<uint8_t> in;
  std::string err = exchange(peer, msg.data(), &in);
  if (err.empty() && in.size() < sizeof(wire::WireHeader)) err = "rank " + std::to_string(peer) + " sent a short reply";
  wire::WireHeader h{};
  if (err.empty()) {
    std::memcpy(&h, in.data(), sizeof h);
    err = wire::check_header(h, loom_version_, peer);
  }
  if (kind < 16) counts_.reply_bytes[kind] += in.size();
  if (!err.empty()) {
    lost = "device " + what + " lost (rank " + std::to_string(peer) + ": " + err + ")";
    return make_status(LOOM_STATUS_UNAVAILABLE, lost);
  }
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
  if (payload) payload->assign(in.begin() + sizeof h, in.end());
  return nullptr;
}

}  // namespace loom::mpi
