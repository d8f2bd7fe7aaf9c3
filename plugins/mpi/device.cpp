#include "device.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "common/glue.h"
#include "file_load.h"
#include "stream.h"

namespace loom::mpi {
namespace {

using common::guarded;
using common::make_status;
namespace wire = common::mpi;

loom_status_t* device_get_props(loom_device_t* d, loom_device_props_t* out) {
  return guarded("mpi.get_props", [&]() -> loom_status_t* {
    RemoteDevice* dev = RemoteDevice::from(d);
    const RemoteInfo& i = dev->info();
    loom_device_props_t props{};
    props.struct_size = sizeof props;
    props.name = i.name.c_str();
    props.description = i.description.c_str();
    props.type = i.type;
    dev->memory(&props.memory_total, &props.memory_free);
    std::memcpy(props.uuid, i.uuid, sizeof props.uuid);
    props.has_uuid = true;
    // Queued copies held until a run or a flush point, runs posted (stream.h):
    // work may still run when compute returns. Rank 0's splits are not cut
    // to overlap it (each wait part-way would be a round trip), and copies
    // between two ranks are ordered on the workers (copy.cpp), so the host
    // waits for neither side. No events, no host buffers: the wire is the
    // only way in. An emulated device stays one (used only when named).
    props.caps = LOOM_DEVICE_CAP_ASYNC | LOOM_DEVICE_CAP_NO_CUT | LOOM_DEVICE_CAP_ORDERED_COPY |
                 (i.caps & LOOM_DEVICE_CAP_EMULATED);
    common::write_device_props(props, out);
    return nullptr;
  });
}

loom_buffer_type_t* device_buffer_type(loom_device_t* d) { return RemoteDevice::from(d)->buffer_type().handle(); }

bool device_supports_op(loom_device_t* d, const loom_tensor_t* node) {
  try {
    return RemoteDevice::from(d)->supports_op(node);
  } catch (...) {
    return false;
  }
}

bool device_supports_buffer_type(loom_device_t* d, const loom_buffer_type_t* bt) {
  return bt == RemoteDevice::from(d)->buffer_type().handle();
}

loom_status_t* device_stream_create(loom_device_t* d, loom_stream_t** out) {
  return guarded("mpi.stream_create", [&]() -> loom_status_t* {
    if (out == nullptr) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[mpi.stream_create] out_stream is null");
    *out = RemoteStream::create(RemoteDevice::from(d));
    return nullptr;
  });
}

double cost_op_time_us(loom_device_t* d, const loom_tensor_t* node) {
  try {
    return RemoteDevice::from(d)->op_time_us(node);
  } catch (...) {
    return -1.0;
  }
}

const loom_ext_cost_t kCostExt = {sizeof(loom_ext_cost_t), cost_op_time_us};

loom_status_t* threads_set(loom_device_t* d, int32_t n) {
  return guarded("mpi.set_threads", [&] { return RemoteDevice::from(d)->set_threads(n); });
}

int32_t threads_get(loom_device_t* d) {
  try {
    return RemoteDevice::from(d)->threads();
  } catch (...) {
    return -1;
  }
}

const loom_ext_threads_t kThreadsExt = {sizeof(loom_ext_threads_t), threads_set, threads_get};

const void* device_get_extension(loom_device_t* d, const char* id, uint32_t version) {
  if (id == nullptr) return nullptr;
  if (std::strcmp(id, LOOM_EXT_FILE_LOAD) == 0 && version == LOOM_EXT_FILE_LOAD_VERSION) return file_load_extension();
  // The remote device's own estimate (asked with supports_op), so the
  // scheduler does not move work to a remote device on a guess.
  if (std::strcmp(id, LOOM_EXT_COST) == 0 && version == LOOM_EXT_COST_VERSION) return &kCostExt;
  // The worker's device's own thread count (`loom run -t N` reaches it),
  // offered when that device has loom.threads.
  if (std::strcmp(id, LOOM_EXT_THREADS) == 0 && version == LOOM_EXT_THREADS_VERSION &&
      RemoteDevice::from(d)->info().threads >= 1) {
    return &kThreadsExt;
  }
  return nullptr;
}

const loom_device_iface_t kDeviceIface = {
    sizeof(loom_device_iface_t),
    device_get_props,
    device_buffer_type,
    nullptr,  // host_buffer_type: the host stages through plain host memory
    device_supports_op,
    device_supports_buffer_type,
    device_stream_create,
    nullptr,  // event_create: streams are synchronous
    device_get_extension,
    nullptr,  // buffer_from_host_ptr: host memory cannot be lent across ranks
};

}  // namespace

RemoteDevice::RemoteDevice(Transport* transport, RemoteInfo info)
    : transport_(transport), info_(std::move(info)), raw_{sizeof(loom_device_t), &kDeviceIface, this},
      buffer_type_(this), threads_(info_.threads), memory_total_(info_.memory_total), memory_free_(info_.memory_free) {}

bool RemoteDevice::supports_op(const loom_tensor_t* node) { return ask(node).yes; }

double RemoteDevice::op_time_us(const loom_tensor_t* node) { return ask(node).us; }

RemoteDevice::Answer RemoteDevice::ask(const loom_tensor_t* node) {
  if (node == nullptr) return Answer{};
  // The query: the sources (index 0..n-1), then the node naming them.
  wire::Writer q(wire::Kind::kSupports, transport_->loom_version());
  q.u32(info_.index);
  std::vector<wire::WireTensor> ts;
  wire::WireTensor n = wire::wire_fields(*node);
  for (int s = 0; s < LOOM_MAX_SRC; ++s) {
    if (node->src[s] == nullptr) continue;
    n.src[s] = static_cast<int32_t>(ts.size());
    // An operand: its type, shape and strides matter, not how it was made.
    wire::WireTensor src = wire::wire_fields(*node->src[s]);
    src.op = LOOM_OP_NONE;
    std::fill(std::begin(src.op_params), std::end(src.op_params), 0);
    ts.push_back(std::move(src));
  }
  n.name.clear();  // names do not change the answer; leaving them out widens the cache
  for (auto& t : ts) t.name.clear();
  ts.push_back(n);
  q.u32(static_cast<uint32_t>(ts.size()));
  for (const auto& t : ts) wire::write_tensor(q, t);
  const auto& bytes = q.data();
  const uint64_t key = wire::wire_hash(bytes.data() + sizeof(wire::WireHeader), bytes.size() - sizeof(wire::WireHeader));
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = supports_.find(key);
    if (it != supports_.end()) return it->second;
  }
  std::vector<uint8_t> reply;
  loom_status_t* st = transport_->request(info_.rank, info_.name, q, &reply);
  if (st != nullptr) {
    common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "mpi", "supports_op asked " + info_.name + " and failed");
    common::host_services()->status_free(st);
    return Answer{};
  }
  wire::Reader r(reply.data(), reply.size());
  Answer a;
  a.yes = r.u32() == 1;
  uint64_t bits = r.u64();
  std::memcpy(&a.us, &bits, 8);
  if (r.failed()) a = Answer{};
  if (!(a.us >= 0.0 && a.us < 1e300)) a.us = -1.0;  // NaN or garbage: no estimate
  if (!a.yes && common::host_services()->log_enabled(LOOM_LOG_LEVEL_DEBUG, "mpi")) {
    common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "mpi", info_.name + " does not run node '" + node->name + "'");
  }
  std::lock_guard<std::mutex> lock(mu_);
  supports_[key] = a;
  return a;
}

loom_status_t* RemoteDevice::set_threads(int32_t n) {
  if (n < 1) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[mpi.set_threads] " + info_.name + ": thread count " +
                                                         std::to_string(n) + " < 1");
  }
  wire::Writer m(wire::Kind::kThreads, transport_->loom_version());
  m.u32(info_.index);
  m.i32(n);
  std::vector<uint8_t> reply;
  if (loom_status_t* st = transport_->request(info_.rank, info_.name, m, &reply)) return st;
  wire::Reader r(reply.data(), reply.size());
  const int32_t now = r.i32();
  if (r.failed() || r.remaining() != 0 || now < 1) {
    return make_status(LOOM_STATUS_INTERNAL, "[mpi.set_threads] " + info_.name + " sent a malformed thread count");
  }
  std::lock_guard<std::mutex> lock(mu_);
  threads_ = now;
  return nullptr;
}

int32_t RemoteDevice::threads() {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_;
}

void RemoteDevice::memory(uint64_t* total, uint64_t* free) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (memory_fresh_) {
      memory_fresh_ = false;
      *total = memory_total_;
      *free = memory_free_;
      return;
    }
  }
  wire::Writer m(wire::Kind::kMemory, transport_->loom_version());
  m.u32(info_.index);
  std::vector<uint8_t> reply;
  if (loom_status_t* st = transport_->request(info_.rank, info_.name, m, &reply)) {
    common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "mpi", info_.name + ": memory not asked again (no answer); the last known kept");
    common::host_services()->status_free(st);
  } else {
    wire::Reader r(reply.data(), reply.size());
    const uint64_t t = r.u64(), f = r.u64();
    if (!r.failed() && r.remaining() == 0 && f <= t) {
      std::lock_guard<std::mutex> lock(mu_);
      memory_total_ = t;
      memory_free_ = f;
    } else {
      common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "mpi", info_.name + " sent a malformed memory answer");
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  *total = memory_total_;
  *free = memory_free_;
}

void RemoteDevice::add_stream(RemoteStream* s) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.push_back(s);
}

void RemoteDevice::remove_stream(RemoteStream* s) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.erase(std::remove(streams_.begin(), streams_.end(), s), streams_.end());
}

loom_status_t* RemoteDevice::post_queued_writes() {
  std::vector<RemoteStream*> streams;
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams = streams_;
  }
  for (RemoteStream* s : streams) {
    if (loom_status_t* st = s->queue().post_writes()) return st;
  }
  return nullptr;
}

}  // namespace loom::mpi
