#include "stream.h"

#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "buffer.h"
#include "common/glue.h"
#include "common/op_info.h"
#include "device.h"

namespace loom::mpi {

struct StreamAccess {
  static RemoteStream* from(loom_stream_t* s) { return static_cast<RemoteStream*>(s->context); }
};

namespace {

using common::guarded;
using common::make_status;
namespace wire = common::mpi;

// Every tensor a graph touches, sources and view bases before their users.
// A tensor that is not one of the graph's nodes is an input of this split
// (a weight, a cache, a copy made by the host): it goes as a leaf (op NONE,
// no sources), keeping only a view's base, since its sources may live on
// other devices and are not computed here.
class GraphEncoder {
 public:
  GraphEncoder(const RemoteDevice* device, const loom_graph_t* graph) : device_(device) {
    for (int32_t i = 0; i < graph->n_nodes; ++i) nodes_.insert(graph->nodes[i]);
  }

  // "" or why the graph cannot run remotely.
  std::string add(const loom_tensor_t* t, int32_t* out_index) {
    auto it = index_.find(t);
    if (it != index_.end()) {
      *out_index = it->second;
      return "";
    }
    wire::WireTensor w = wire::wire_fields(*t);
    const bool computed = nodes_.count(t) != 0;
    if (!computed && !common::is_view_op(t->op)) {
      w.op = LOOM_OP_NONE;
      std::fill(std::begin(w.op_params), std::end(w.op_params), 0);
    }
    for (int s = 0; computed && s < LOOM_MAX_SRC; ++s) {
      if (t->src[s] == nullptr) continue;
      if (std::string e = add(t->src[s], &w.src[s]); !e.empty()) return e;
    }
    if (t->view_src != nullptr) {
      if (std::string e = add(t->view_src, &w.view_src); !e.empty()) return e;
      w.view_offset = t->view_offset;
    }
    RemoteBuffer* rb = remote_buffer_of(t, device_, &w.offset);
    if (rb == nullptr) {
      return "tensor '" + std::string(t->name) + "' is not in a buffer of " + device_->info().name;
    }
    w.buffer = rb->id;
    *out_index = static_cast<int32_t>(tensors_.size());
    index_[t] = *out_index;
    tensors_.push_back(std::move(w));
    return "";
  }

  // tensors then node indices, without the header.
  void write(wire::Writer& m, const std::vector<int32_t>& nodes) const {
    m.u32(static_cast<uint32_t>(tensors_.size()));
    for (const auto& t : tensors_) wire::write_tensor(m, t);
    m.u32(static_cast<uint32_t>(nodes.size()));
    for (int32_t n : nodes) m.i32(n);
  }

 private:
  const RemoteDevice* device_;
  std::unordered_set<const loom_tensor_t*> nodes_;
  std::unordered_map<const loom_tensor_t*, int32_t> index_;
  std::vector<wire::WireTensor> tensors_;
};

// Under the transport's graph lock.
loom_status_t* send_graph(RemoteDevice* dev, uint64_t key, const std::vector<uint8_t>& bytes, size_t from) {
  wire::Writer m(wire::Kind::kGraph, dev->transport().loom_version());
  m.u32(dev->info().index);
  m.u64(key);
  m.bytes(bytes.data() + from, bytes.size() - from);
  if (loom_status_t* st = dev->transport().request(dev->info().rank, dev->info().name, m, nullptr)) return st;
  dev->transport().graph_sent(dev->info().rank, key);
  return nullptr;
}

void stream_destroy(loom_stream_t* s) {
  RemoteStream* rs = StreamAccess::from(s);
  // Writes still queued are work the host asked for: send them (an error
  // has no caller left to go to).
  if (loom_status_t* st = rs->queue().flush()) common::host_services()->status_free(st);
  rs->device()->remove_stream(rs);
  delete rs;
}

loom_status_t* stream_compute(loom_stream_t* s, const loom_graph_t* g) {
  return guarded("mpi.compute", [&] { return StreamAccess::from(s)->compute(g); });
}

// A flush point: the queued copies go now, as one batch.
loom_status_t* stream_synchronize(loom_stream_t* s) {
  return guarded("mpi.synchronize", [&] { return StreamAccess::from(s)->queue().flush(); });
}

loom_status_t* stream_set_async(loom_stream_t* s, loom_tensor_t* t, const void* data, size_t offset, size_t size) {
  return guarded("mpi.set_tensor_async", [&] { return StreamAccess::from(s)->queue().write(t, data, offset, size); });
}

loom_status_t* stream_get_async(loom_stream_t* s, const loom_tensor_t* t, void* data, size_t offset, size_t size) {
  return guarded("mpi.get_tensor_async", [&] { return StreamAccess::from(s)->queue().read(t, data, offset, size); });
}

const loom_stream_iface_t kStreamIface = {
    sizeof(loom_stream_iface_t), stream_destroy, stream_compute, stream_synchronize, stream_set_async, stream_get_async,
    nullptr, nullptr,  // events: none (the host synchronizes the stream, a flush point)
};

}  // namespace

RemoteStream::RemoteStream(RemoteDevice* device) : device_(device), queue_(device), raw_{sizeof(loom_stream_t), &kStreamIface, device->raw(), this} {}

loom_stream_t* RemoteStream::create(RemoteDevice* device) {
  auto* s = new RemoteStream(device);
  device->add_stream(s);
  return &s->raw_;
}

// Post a run of the graph cached under key, carrying the queued writes:
// compute returns without waiting for the worker; its reply (the graph ran,
// or the error) is collected at the stream's next flush point or the next
// request to its rank. Under the transport's graph lock.
loom_status_t* RemoteStream::post_run(uint64_t key) {
  wire::Writer m(wire::Kind::kRun, device_->transport().loom_version());
  m.u32(device_->info().index);
  m.u64(key);
  queue_.move_writes_into(m);
  return device_->transport().post_request(device_->info().rank, device_->info().name, m);
}

loom_status_t* RemoteStream::compute(const loom_graph_t* graph) {
  if (graph == nullptr || graph->n_nodes <= 0) return nullptr;
  GraphEncoder enc(device_, graph);
  std::vector<int32_t> nodes;
  for (int32_t i = 0; i < graph->n_nodes; ++i) {
    int32_t idx = -1;
    if (std::string e = enc.add(graph->nodes[i], &idx); !e.empty()) {
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[mpi.compute] " + e);
    }
    nodes.push_back(idx);
  }
  wire::Writer body(wire::Kind::kGraph, device_->transport().loom_version());
  enc.write(body, nodes);
  const auto& bytes = body.data();
  const size_t hdr = sizeof(wire::WireHeader);
  const uint64_t key = wire::wire_hash(bytes.data() + hdr, bytes.size() - hdr, graph->fingerprint ^ 1469598103934665603ull);
  // Reads queued before the run must see the memory as it was: they go first.
  if (queue_.has_reads()) {
    if (loom_status_t* st = queue_.flush()) return st;
  }
  Transport& t = device_->transport();
  auto hold = t.graph_lock();
  if (!t.graph_cached(device_->info().rank, key)) {
    if (loom_status_t* st = send_graph(device_, key, bytes, hdr)) return st;
  }
  return post_run(key);
}

}  // namespace loom::mpi
