#include "worker/worker_server.hpp"

#include <chrono>
#include <cstring>

#include "common/mpi_wire.h"
#include "loom/registry/plugin_calls.hpp"
#include "loom/runtime/log.hpp"
#include "worker/tensor_decode.hpp"

namespace loom::cli::worker {
namespace {

namespace wire = common::mpi;

// The 16 bytes of a 32-hex-digit uuid ("" gives zeros).
void uuid_bytes(const std::string& hex, uint8_t out[16]) {
  std::memset(out, 0, 16);
  if (hex.size() != 32) return;
  for (size_t i = 0; i < 16; ++i) out[i] = static_cast<uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
}

Status malformed(const char* what, const std::string& why) {
  return invalid_argument(std::string("[worker.") + what + "] " + why);
}

// The whole message was read and nothing is left over.
Status finished(const wire::Reader& r, const char* what) {
  if (r.failed()) return malformed(what, "message ends early");
  if (r.remaining() != 0) return malformed(what, std::to_string(r.remaining()) + " bytes left over after the request");
  return Status::Ok();
}

}  // namespace

WorkerServer::WorkerServer(std::vector<registry::Device*> devices, std::string loom_version, int rank, std::string host)
    : devices_(std::move(devices)), loom_version_(std::move(loom_version)), rank_(rank), host_(std::move(host)) {}

WorkerServer::~WorkerServer() {
  graphs_.clear();
  streams_.clear();
  buffers_.clear();
}

bool WorkerServer::handle(const uint8_t* msg, size_t n, std::vector<uint8_t>* reply) {
  Status st;
  uint32_t kind = 0;
  std::vector<uint8_t> payload;
  if (n < sizeof(wire::WireHeader)) {
    st = malformed("request", std::to_string(n) + " bytes are shorter than the 32-byte header");
  } else {
    wire::WireHeader h;
    std::memcpy(&h, msg, sizeof h);
    kind = h.kind;
    const std::string bad = wire::check_header(h, loom_version_, 0);
    if (!bad.empty()) {
      st = incompatible(bad);
    } else {
      try {
        st = dispatch(kind, msg + sizeof h, n - sizeof h, &payload);
      } catch (const std::exception& e) {
        st = internal_error(std::string("[worker.") + wire::kind_name(kind) + "] " + e.what());
      }
    }
  }
  if (st.ok()) {
    wire::Writer w(wire::Kind::kReplyOk, loom_version_);
    w.bytes(payload.data(), payload.size());
    *reply = std::move(w.data());
  } else {
    // Rank 0 decides what the error means; here it is only a debug line (LOOM_LOG=worker:debug).
    LOOM_LOG_DEBUG("worker", "rank " + std::to_string(rank_) + " answers " + wire::kind_name(kind) + " with an error: " +
                                 st.message());
    wire::Writer w(wire::Kind::kReplyError, loom_version_);
    w.u32(static_cast<uint32_t>(st.code()));
    w.str(st.message());
    *reply = std::move(w.data());
  }
  return !(st.ok() && kind == static_cast<uint32_t>(wire::Kind::kShutdown));
}

Status WorkerServer::dispatch(uint32_t kind, const uint8_t* p, size_t n, std::vector<uint8_t>* reply) {
  switch (static_cast<wire::Kind>(kind)) {
    case wire::Kind::kHello: return hello(reply);
    case wire::Kind::kAlloc: return alloc(p, n, reply);
    case wire::Kind::kFree: return free_buffer(p, n);
    case wire::Kind::kClear: return clear(p, n);
    case wire::Kind::kSet: return set_tensor(p, n);
    case wire::Kind::kGet: return get_tensor(p, n, reply);
    case wire::Kind::kSupports: return supports(p, n, reply);
    case wire::Kind::kGraph: return graph(p, n);
    case wire::Kind::kRun: return run(p, n, reply);
    case wire::Kind::kLoadFile: return load_file(p, n);
    case wire::Kind::kBatch: return batch(p, n, reply);
    case wire::Kind::kThreads: return threads(p, n, reply);
    case wire::Kind::kCopies: return copies(p, n);
    case wire::Kind::kMemory: return memory(p, n, reply);
    case wire::Kind::kShutdown: return Status::Ok();
    default: return malformed("request", "unknown request kind " + std::to_string(kind));
  }
}

StatusOr<registry::Device*> WorkerServer::device(uint32_t index) const {
  if (index >= devices_.size()) {
    return invalid_argument("[worker] device index " + std::to_string(index) + " is not one of this rank's " +
                            std::to_string(devices_.size()));
  }
  return devices_[index];
}

StatusOr<WorkerServer::Allocation*> WorkerServer::allocation(uint64_t id) {
  auto it = buffers_.find(id);
  if (it == buffers_.end()) return invalid_argument("[worker] buffer " + std::to_string(id) + " does not exist");
  return &it->second;
}

Stream* WorkerServer::stream(uint32_t device) {
  auto it = streams_.find(device);
  if (it != streams_.end()) return &it->second;
  StatusOr<Stream> s = devices_[device]->create_stream();
  if (!s.ok()) return nullptr;
  return &streams_.emplace(device, std::move(*s)).first->second;
}

Status WorkerServer::hello(std::vector<uint8_t>* reply) {
  wire::Writer w(wire::Kind::kReplyOk, loom_version_);
  w.str(host_);
  w.u32(static_cast<uint32_t>(devices_.size()));
  for (registry::Device* d : devices_) {
    const registry::DeviceInfo& i = d->info();
    registry::Device::Memory mem{i.memory_total, i.memory_free};
    if (StatusOr<registry::Device::Memory> now = d->memory(); now.ok()) mem = *now;
    StatusOr<size_t> align = registry::buffer_type_alignment(d->buffer_type());
    w.str(i.name);
    w.str(i.description);
    w.i32(static_cast<int32_t>(i.type));
    w.u64(mem.total);
    w.u64(mem.free);
    w.u32(i.caps);
    w.u64(align.ok() ? *align : 64);
    uint8_t uuid[16];
    uuid_bytes(i.uuid, uuid);
    w.bytes(uuid, 16);
    w.i32(d->threads());  // -1: no loom.threads
  }
  reply->assign(w.data().begin() + sizeof(wire::WireHeader), w.data().end());
  return Status::Ok();
}

Status WorkerServer::alloc(const uint8_t* p, size_t n, std::vector<uint8_t>* reply) {
  wire::Reader r(p, n);
  const uint32_t dev = r.u32();
  const uint64_t size = r.u64();
  LOOM_RETURN_IF_ERROR(finished(r, "alloc"));
  LOOM_ASSIGN_OR_RETURN(registry::Device * d, device(dev));
  // A size past the device's whole memory is refused here, before any
  // allocator sees it (some abort on such sizes instead of failing).
  uint64_t total = d->info().memory_total;
  if (StatusOr<registry::Device::Memory> now = d->memory(); now.ok() && now->total > 0) total = now->total;
  if (total > 0 && size > total) {
    return resource_exhausted("[worker.alloc] " + std::to_string(size) + " bytes on " + d->name() +
                              " exceed its memory (" + std::to_string(total) + " bytes in all)");
  }
  LOOM_ASSIGN_OR_RETURN(Buffer b, d->alloc_buffer(static_cast<size_t>(size)));
  const uint64_t id = next_id_++;
  buffers_[id] = Allocation{dev, std::move(b)};
  reply->resize(8);
  std::memcpy(reply->data(), &id, 8);
  return Status::Ok();
}

Status WorkerServer::free_buffer(const uint8_t* p, size_t n) {
  wire::Reader r(p, n);
  const uint64_t id = r.u64();
  LOOM_RETURN_IF_ERROR(finished(r, "free"));
  LOOM_ASSIGN_OR_RETURN(Allocation * a, allocation(id));
  (void)a;
  // Cached graphs may point into it: drop them all (rank 0 resends on a miss).
  graphs_.clear();
  buffers_.erase(id);
  return Status::Ok();
}

Status WorkerServer::clear(const uint8_t* p, size_t n) {
  wire::Reader r(p, n);
  const uint64_t id = r.u64();
  const uint32_t value = r.u32();
  LOOM_RETURN_IF_ERROR(finished(r, "clear"));
  if (value > 255) return malformed("clear", "fill value " + std::to_string(value) + " is not a byte");
  LOOM_ASSIGN_OR_RETURN(Allocation * a, allocation(id));
  return a->buffer.clear(static_cast<uint8_t>(value));
}

BufferLookup WorkerServer::buffer_lookup(int64_t device) {
  return [this, device](uint64_t id) {
    auto it = buffers_.find(id);
    if (it == buffers_.end() || (device >= 0 && it->second.device != static_cast<uint32_t>(device))) return PlacedBuffer{};
    return PlacedBuffer{it->second.buffer.raw(), it->second.buffer.base()};
  };
}

Status WorkerServer::set_tensor(const uint8_t* p, size_t n) {
  wire::Reader r(p, n);
  Tensor t{};
  const BufferLookup look = buffer_lookup();
  LOOM_RETURN_IF_ERROR(decode_placed_tensor(r, look, "set", &t));
  const uint64_t offset = r.u64();
  const uint64_t size = r.u64();
  const uint8_t* bytes = r.bytes(static_cast<size_t>(size));
  LOOM_RETURN_IF_ERROR(finished(r, "set"));
  LOOM_RETURN_IF_ERROR(registry::check_tensor_range("worker.set", t.buffer, &t, offset, size));
  return registry::buffer_set_tensor(t.buffer, &t, bytes, offset, size);
}

Status WorkerServer::get_tensor(const uint8_t* p, size_t n, std::vector<uint8_t>* reply) {
  wire::Reader r(p, n);
  Tensor t{};
  const BufferLookup look = buffer_lookup();
  LOOM_RETURN_IF_ERROR(decode_placed_tensor(r, look, "get", &t));
  const uint64_t offset = r.u64();
  const uint64_t size = r.u64();
  LOOM_RETURN_IF_ERROR(finished(r, "get"));
  LOOM_RETURN_IF_ERROR(registry::check_tensor_range("worker.get", t.buffer, &t, offset, size));
  reply->resize(static_cast<size_t>(size));
  return registry::buffer_get_tensor(t.buffer, &t, reply->data(), offset, size);
}

Status WorkerServer::supports(const uint8_t* p, size_t n, std::vector<uint8_t>* reply) {
  wire::Reader r(p, n);
  const uint32_t dev = r.u32();
  const uint32_t count = r.u32();
  LOOM_ASSIGN_OR_RETURN(registry::Device * d, device(dev));
  if (count == 0) return malformed("supports", "no node");
  std::vector<Tensor> ts;
  LOOM_RETURN_IF_ERROR(decode_tensors(r, count, nullptr, "supports", &ts));
  LOOM_RETURN_IF_ERROR(finished(r, "supports"));
  const uint32_t yes = d->supports_op(&ts.back()) ? 1 : 0;
  // The device's own estimate (loom.cost; < 0: none), so rank 0's scheduler
  // ranks a remote device as the device itself would, not by a guess.
  const double us = yes ? d->op_time_us(&ts.back()) : -1.0;
  reply->resize(12);
  std::memcpy(reply->data(), &yes, 4);
  std::memcpy(reply->data() + 4, &us, 8);
  return Status::Ok();
}

Status WorkerServer::graph(const uint8_t* p, size_t n) {
  wire::Reader r(p, n);
  const uint32_t dev = r.u32();
  const uint64_t key = r.u64();
  const uint32_t count = r.u32();
  LOOM_ASSIGN_OR_RETURN(registry::Device * d, device(dev));
  (void)d;
  auto g = std::make_unique<CachedGraph>();
  g->device = dev;
  const BufferLookup look = buffer_lookup(dev);
  LOOM_RETURN_IF_ERROR(decode_tensors(r, count, &look, "graph", &g->tensors));
  const uint32_t n_nodes = r.u32();
  if (r.failed() || n_nodes == 0 || n_nodes > count) {
    return malformed("graph", std::to_string(n_nodes) + " nodes for " + std::to_string(count) + " tensors");
  }
  for (uint32_t i = 0; i < n_nodes; ++i) {
    const int32_t idx = r.i32();
    if (r.failed()) break;
    if (idx < 0 || static_cast<uint32_t>(idx) >= count) {
      return malformed("graph", "node " + std::to_string(i) + " is tensor " + std::to_string(idx) + " of " + std::to_string(count));
    }
    g->nodes.push_back(&g->tensors[static_cast<size_t>(idx)]);
  }
  LOOM_RETURN_IF_ERROR(finished(r, "graph"));
  if (graphs_.size() >= kMaxGraphs) graphs_.clear();
  graphs_[key] = std::move(g);
  return Status::Ok();
}

Status WorkerServer::run(const uint8_t* p, size_t n, std::vector<uint8_t>* reply) {
  wire::Reader r(p, n);
  const uint32_t dev = r.u32();
  const uint64_t key = r.u64();
  // The writes the stream queued before this run (its step inputs): all
  // checked before any is done, done before the graph runs.
  std::vector<QueuedAccess> writes;
  LOOM_RETURN_IF_ERROR(decode_accesses(r, "run", false, &writes));
  LOOM_RETURN_IF_ERROR(finished(r, "run"));
  LOOM_ASSIGN_OR_RETURN(registry::Device * d, device(dev));
  auto it = graphs_.find(key);
  if (it != graphs_.end() && it->second->device != dev) {
    return malformed("run", "graph " + std::to_string(key) + " was sent for another device");
  }
  LOOM_RETURN_IF_ERROR(apply_accesses("run", writes, nullptr));
  uint32_t ran = 0;
  if (it != graphs_.end()) {
    Stream* s = stream(dev);
    if (s == nullptr) return internal_error("[worker.run] cannot make a stream on " + d->name());
    const loom_graph_t g{sizeof(loom_graph_t), static_cast<int32_t>(it->second->nodes.size()), it->second->nodes.data(), key};
    const auto t0 = std::chrono::steady_clock::now();
    LOOM_RETURN_IF_ERROR(s->compute(g));
    LOOM_RETURN_IF_ERROR(s->synchronize());
    ran = 1;
    // When each run went, on the host's monotonic clock (the same for every
    // rank on one host): the pipelined-prefill test reads these lines.
    if (log_enabled(LogLevel::kDebug, "worker")) {
      auto us = [](std::chrono::steady_clock::time_point t) {
        return std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count());
      };
      LOOM_LOG_DEBUG("worker", "rank " + std::to_string(rank_) + " ran graph " + std::to_string(key) + " on " +
                                   d->name() + " from " + us(t0) + " to " + us(std::chrono::steady_clock::now()) +
                                   " us (monotonic clock)");
    }
  }
  reply->resize(4);
  std::memcpy(reply->data(), &ran, 4);
  return Status::Ok();
}

}  // namespace loom::cli::worker
