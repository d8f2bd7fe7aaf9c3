// The worker's side of rank to rank copies (a copies request): each item
// sends a tensor's bytes to another worker, receives them into a tensor, or
// copies between two buffers of this rank. Every item is checked before
// anything moves (the op, the other rank, the tag, the wait, the tensor in
// the buffer it names, the range, the size); when one is refused the whole
// request is, and every item whose rank and tag are good still settles the
// other side (an empty message to a receiver, which then fails at once; or
// the sender's message taken and dropped), so no worker waits for bytes
// that will not come and no stray message is left on a tag. The sends and
// receives between two local items are started together and then waited
// for (PeerLink::exchange).
#include <string>
#include <utility>
#include <vector>

#include "common/mpi_wire.h"
#include "loom/registry/plugin_calls.hpp"
#include "worker/worker_server.hpp"

namespace loom::cli::worker {
namespace {

namespace wire = common::mpi;

// The least bytes one item takes on the wire (op, peer, tag, wait, a tensor
// without a name, offset, size): bounds the count before anything is allocated.
constexpr size_t kMinCopyBytes = 16 + (8 + 32 + 32 + 64 + 4 + 16 + 16 + 4 + 8 + 4) + 16;

std::string item(size_t i, size_t n) {
  return "[worker.copies] item " + std::to_string(i) + " of " + std::to_string(n) + ": ";
}

// The bytes [offset, offset + size) of a placed tensor: size bounded, in range.
Status check_range(const Tensor& t, uint64_t offset, uint64_t size) {
  if (size == 0 || size > wire::kWireMaxCopyBytes) {
    return invalid_argument("copy of " + std::to_string(size) + " bytes (1 to " + std::to_string(wire::kWireMaxCopyBytes) +
                            " per item)");
  }
  return registry::check_tensor_range("worker.copies", t.buffer, &t, offset, size);
}

}  // namespace

struct WorkerServer::CopyItem {
  wire::WireCopy wire;
  bool settle = false;  // a send or receive whose rank, tag and wait are good
  Tensor tensor{}, src{};
  bool send() const { return wire.op == static_cast<uint32_t>(wire::CopyOp::kSend); }
  bool local() const { return wire.op == static_cast<uint32_t>(wire::CopyOp::kLocal); }
  double wait_s() const { return wire.wait_ms / 1000.0; }
};

Status WorkerServer::check_copy(CopyItem* c) {
  const wire::WireCopy& w = c->wire;
  const BufferLookup look = buffer_lookup();
  if (c->local()) {
    if (w.peer != 0 || w.tag != 0 || w.wait_ms != 0) return invalid_argument("a local copy names a rank, tag or wait");
    LOOM_RETURN_IF_ERROR(place_tensor(w.tensor, look, "copies", &c->tensor));
    LOOM_RETURN_IF_ERROR(place_tensor(w.src, look, "copies", &c->src));
    LOOM_RETURN_IF_ERROR(check_range(c->src, w.offset, w.size));
    return check_range(c->tensor, w.offset, w.size);
  }
  if (link_ == nullptr) {
    return unavailable("rank " + std::to_string(rank_) + " has no link to the other ranks (not under MPI)");
  }
  const int world = link_->world_size();
  if (w.peer < 1 || w.peer >= world || w.peer == rank_) {
    return invalid_argument("rank " + std::to_string(w.peer) + " is not another worker (ranks 1.." +
                            std::to_string(world - 1) + ", this is rank " + std::to_string(rank_) + ")");
  }
  if (w.tag < static_cast<uint32_t>(wire::kMpiCopyTagBase) ||
      w.tag >= static_cast<uint32_t>(wire::kMpiCopyTagBase + wire::kMpiCopyTags)) {
    return invalid_argument("tag " + std::to_string(w.tag) + " is not a copy tag");
  }
  if (w.wait_ms == 0 || w.wait_ms > wire::kWireMaxCopyWaitMs) return invalid_argument("wait of " + std::to_string(w.wait_ms) + " ms");
  c->settle = true;
  LOOM_RETURN_IF_ERROR(place_tensor(w.tensor, look, "copies", &c->tensor));
  return check_range(c->tensor, w.offset, w.size);
}

void WorkerServer::settle(const std::vector<CopyItem>& items) {
  std::vector<Transfer> told;
  for (const CopyItem& c : items) {
    if (!c.settle) continue;
    if (c.send()) {
      told.push_back(Transfer{true, c.wire.peer, static_cast<int>(c.wire.tag), c.wait_s(), {}, 0, Status()});
    } else {
      link_->discard(c.wire.peer, static_cast<int>(c.wire.tag), c.wait_s());
    }
  }
  if (!told.empty()) link_->exchange(&told);
}

Status WorkerServer::copies(const uint8_t* p, size_t n) {
  wire::Reader r(p, n);
  const uint32_t count = r.u32();
  if (r.failed() || count == 0 || count > wire::kWireMaxCopies || count > r.remaining() / kMinCopyBytes) {
    return invalid_argument("[worker.copies] " + std::to_string(count) + " items in a " + std::to_string(n) +
                            "-byte request (1 to " + std::to_string(wire::kWireMaxCopies) + ")");
  }
  std::vector<CopyItem> items;
  Status bad;
  for (uint32_t i = 0; i < count; ++i) {
    CopyItem c;
    if (!wire::read_copy(r, &c.wire)) {
      if (bad.ok()) bad = invalid_argument(item(i, count) + "malformed or cut short");
      break;  // nothing after it can be read
    }
    Status st = check_copy(&c);
    if (!st.ok() && bad.ok()) bad = Status(st.code(), item(i, count) + st.message());
    items.push_back(std::move(c));
  }
  if (bad.ok() && r.remaining() != 0) {
    bad = invalid_argument("[worker.copies] " + std::to_string(r.remaining()) + " bytes left over after the request");
  }
  if (!bad.ok()) {
    settle(items);
    return bad;
  }
  return run_copies(&items);
}

Status WorkerServer::run_copies(std::vector<CopyItem>* items) {
  Status first;
  std::vector<Transfer> ts;
  std::vector<size_t> owner;  // ts[k] belongs to item owner[k]
  auto flush = [&]() {
    if (ts.empty()) return;
    link_->exchange(&ts);
    for (size_t k = 0; k < ts.size(); ++k) {
      const Transfer& t = ts[k];
      CopyItem& c = (*items)[owner[k]];
      Status st = t.status;
      if (st.ok() && !t.send && t.got != c.wire.size) {
        st = aborted("rank " + std::to_string(t.peer) + " sent " + std::to_string(t.got) + " of " +
                     std::to_string(c.wire.size) + " bytes for tensor '" + c.wire.tensor.name +
                     "' (its side of the copy failed: its reply says why)");
      }
      if (st.ok() && !t.send) st = registry::buffer_set_tensor(c.tensor.buffer, &c.tensor, t.bytes.data(), c.wire.offset, c.wire.size);
      if (!st.ok() && first.ok()) first = Status(st.code(), item(owner[k], items->size()) + st.message());
    }
    ts.clear();
    owner.clear();
  };
  for (size_t i = 0; i < items->size(); ++i) {
    CopyItem& c = (*items)[i];
    std::vector<uint8_t> bytes(static_cast<size_t>(c.wire.size));
    if (c.local()) {
      flush();  // a local copy sees the transfers before it done
      Status st = registry::buffer_get_tensor(c.src.buffer, &c.src, bytes.data(), c.wire.offset, c.wire.size);
      if (st.ok()) st = registry::buffer_set_tensor(c.tensor.buffer, &c.tensor, bytes.data(), c.wire.offset, c.wire.size);
      if (!st.ok() && first.ok()) first = Status(st.code(), item(i, items->size()) + st.message());
      continue;
    }
    if (c.send()) {
      Status st = registry::buffer_get_tensor(c.tensor.buffer, &c.tensor, bytes.data(), c.wire.offset, c.wire.size);
      if (!st.ok()) {
        bytes.clear();  // the receiver is told this side failed
        if (first.ok()) first = Status(st.code(), item(i, items->size()) + st.message());
      }
    }
    ts.push_back(Transfer{c.send(), c.wire.peer, static_cast<int>(c.wire.tag), c.wait_s(), std::move(bytes), 0, Status()});
    owner.push_back(i);
  }
  flush();
  return first;
}

}  // namespace loom::cli::worker
