// The worker's side of a remote stream's queue: the writes and reads rank 0
// held back (set_tensor_async / get_tensor_async) arrive together, in a
// batch or ahead of a run. Every item is checked exactly as a single set or
// get is (the tensor's fields, its buffer, the range) before any item is
// done, so a malformed batch changes nothing and is answered with an error
// naming the item. And loom.threads, forwarded to this rank's device, and a
// device's memory now.
#include <cstring>
#include <string>
#include <vector>

#include "common/mpi_wire.h"
#include "loom/registry/plugin_calls.hpp"
#include "loom/runtime/log.hpp"
#include "worker/worker_server.hpp"

namespace loom::cli::worker {
namespace {

namespace wire = common::mpi;

// The least bytes one item takes on the wire (op, a tensor without a name,
// offset, size): bounds the count before anything is allocated.
constexpr size_t kMinAccessBytes = 4 + (8 + 32 + 32 + 64 + 4 + 16 + 16 + 4 + 8 + 4) + 16;

std::string item(const char* what, size_t i, size_t n) {
  return std::string("[worker.") + what + "] item " + std::to_string(i) + " of " + std::to_string(n) + ": ";
}

}  // namespace

Status WorkerServer::decode_accesses(wire::Reader& r, const char* what, bool reads_allowed,
                                     std::vector<QueuedAccess>* out) {
  const uint32_t count = r.u32();
  if (r.failed()) return invalid_argument(std::string("[worker.") + what + "] message ends before the item count");
  if (count > wire::kWireMaxAccesses || count > r.remaining() / kMinAccessBytes) {
    return invalid_argument(std::string("[worker.") + what + "] " + std::to_string(count) + " items do not fit the " +
                            std::to_string(r.remaining()) + "-byte message (at most " +
                            std::to_string(wire::kWireMaxAccesses) + ")");
  }
  out->clear();
  out->reserve(count);
  const BufferLookup look = buffer_lookup();
  uint64_t read_bytes = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = r.remaining();
    wire::WireAccess a;
    if (!wire::read_access(r, &a)) {
      return invalid_argument(item(what, i, count) + "malformed or cut short (" + std::to_string(at) + " bytes were left)");
    }
    const bool write = a.op == static_cast<uint32_t>(wire::Access::kWrite);
    if (!write && !reads_allowed) return invalid_argument(item(what, i, count) + "a read, where only writes may come");
    QueuedAccess q;
    q.op = a.op;
    q.offset = a.offset;
    q.size = a.size;
    q.bytes = a.bytes;
    // The same checks as a single set/get: fields, buffer, then the range.
    Status st = place_tensor(a.tensor, look, what, &q.tensor);
    const std::string op = std::string("worker.") + what;
    if (st.ok()) st = registry::check_tensor_range(op.c_str(), q.tensor.buffer, &q.tensor, a.offset, a.size);
    if (!st.ok()) return Status(st.code(), item(what, i, count) + st.message());
    if (!write) {
      read_bytes += a.size;  // each size is within a buffer: no overflow before the bound trips
      if (read_bytes > wire::kWireMaxReadBytes) {
        return invalid_argument(item(what, i, count) + "the reads ask for more than " +
                                std::to_string(wire::kWireMaxReadBytes) + " bytes in all");
      }
    }
    out->push_back(std::move(q));
  }
  return Status::Ok();
}

Status WorkerServer::apply_accesses(const char* what, const std::vector<QueuedAccess>& items, std::vector<uint8_t>* reply) {
  for (size_t i = 0; i < items.size(); ++i) {
    const QueuedAccess& q = items[i];
    Tensor t = q.tensor;
    Status st;
    if (q.op == static_cast<uint32_t>(wire::Access::kWrite)) {
      st = registry::buffer_set_tensor(t.buffer, &t, q.bytes, q.offset, q.size);
    } else {
      const size_t at = reply->size();
      reply->resize(at + static_cast<size_t>(q.size));
      st = registry::buffer_get_tensor(t.buffer, &t, reply->data() + at, q.offset, q.size);
    }
    if (!st.ok()) return Status(st.code(), item(what, i, items.size()) + st.message());
  }
  return Status::Ok();
}

Status WorkerServer::batch(const uint8_t* p, size_t n, std::vector<uint8_t>* reply) {
  wire::Reader r(p, n);
  std::vector<QueuedAccess> items;
  LOOM_RETURN_IF_ERROR(decode_accesses(r, "batch", true, &items));
  if (r.remaining() != 0) {
    return invalid_argument("[worker.batch] " + std::to_string(r.remaining()) + " bytes left over after the request");
  }
  if (items.empty()) return invalid_argument("[worker.batch] no items");
  return apply_accesses("batch", items, reply);
}

Status WorkerServer::threads(const uint8_t* p, size_t n, std::vector<uint8_t>* reply) {
  wire::Reader r(p, n);
  const uint32_t dev = r.u32();
  const int32_t want = r.i32();
  if (r.failed() || r.remaining() != 0) return invalid_argument("[worker.threads] the request is not device, count");
  LOOM_ASSIGN_OR_RETURN(registry::Device * d, device(dev));
  if (want < 0) return invalid_argument("[worker.threads] thread count " + std::to_string(want) + " < 0");
  if (want > 0) {
    LOOM_RETURN_IF_ERROR(d->set_threads(want));
    LOOM_LOG_INFO("worker", "rank " + std::to_string(rank_) + ": " + d->name() + " runs " + std::to_string(want) +
                                " thread(s) (loom.threads from rank 0)");
  }
  const int32_t now = d->threads();
  if (now < 1) return unimplemented("[worker.threads] " + d->name() + " has no loom.threads extension");
  reply->resize(4);
  std::memcpy(reply->data(), &now, 4);
  return Status::Ok();
}

Status WorkerServer::memory(const uint8_t* p, size_t n, std::vector<uint8_t>* reply) {
  wire::Reader r(p, n);
  const uint32_t dev = r.u32();
  if (r.failed() || r.remaining() != 0) return invalid_argument("[worker.memory] the request is not one device index");
  LOOM_ASSIGN_OR_RETURN(registry::Device * d, device(dev));
  LOOM_ASSIGN_OR_RETURN(registry::Device::Memory mem, d->memory());
  const uint64_t fields[2] = {mem.total, mem.free};
  reply->resize(sizeof fields);
  std::memcpy(reply->data(), fields, sizeof fields);
  return Status::Ok();
}

}  // namespace loom::cli::worker
