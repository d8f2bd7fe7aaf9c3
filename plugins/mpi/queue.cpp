#include "queue.h"

#include <cstring>
#include <string>

#include "buffer.h"
#include "common/glue.h"
#include "device.h"

namespace loom::mpi {
namespace {

using common::make_status;
namespace wire = common::mpi;

// The tensor placed in a buffer of `dev` (its wire fields, buffer id and
// offset), or why not.
loom_status_t* place(RemoteDevice* dev, const loom_tensor_t* t, const char* op, RemoteBuffer** rb, wire::WireTensor* w) {
  uint64_t offset = 0;
  *rb = t ? remote_buffer_of(t, dev, &offset) : nullptr;
  if (*rb == nullptr) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, std::string("[mpi.") + op + "] tensor '" + (t ? t->name : "?") +
                                                         "' is not in a buffer of " + dev->info().name);
  }
  *w = wire::wire_fields(*t);
  w->buffer = (*rb)->id;
  w->offset = offset;
  return nullptr;
}

}  // namespace

void StreamQueue::clear() {
  items_.data().resize(sizeof(wire::WireHeader));
  count_ = 0;
  bytes_ = 0;
  reads_.clear();
}

loom_status_t* StreamQueue::write(const loom_tensor_t* t, const void* data, size_t offset, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  RemoteBuffer* rb = nullptr;
  wire::WireTensor w;
  if (loom_status_t* st = place(device_, t, "set_tensor_async", &rb, &w)) return st;
  if (size > kMaxQueued) {
    if (loom_status_t* st = flush_locked()) return st;
    return remote_set(rb, w, data, offset, size);
  }
  if (bytes_ + size > kMaxQueued || count_ == wire::kWireMaxAccesses) {
    if (loom_status_t* st = flush_locked()) return st;
  }
  wire::write_access(items_, wire::Access::kWrite, w, offset, size, data);
  ++count_;
  bytes_ += size;
  return nullptr;
}

loom_status_t* StreamQueue::read(const loom_tensor_t* t, void* data, size_t offset, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  RemoteBuffer* rb = nullptr;
  wire::WireTensor w;
  if (loom_status_t* st = place(device_, t, "get_tensor_async", &rb, &w)) return st;
  if (size > kMaxQueued) {
    if (loom_status_t* st = flush_locked()) return st;
    return remote_get(rb, w, data, offset, size);
  }
  if (bytes_ + size > kMaxQueued || count_ == wire::kWireMaxAccesses) {
    if (loom_status_t* st = flush_locked()) return st;
  }
  wire::write_access(items_, wire::Access::kRead, w, offset, size, nullptr);
  ++count_;
  bytes_ += size;
  reads_.push_back({data, size});
  return nullptr;
}

loom_status_t* StreamQueue::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  return flush_locked();
}

bool StreamQueue::has_reads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !reads_.empty();
}

loom_status_t* StreamQueue::post_writes() {
  std::lock_guard<std::mutex> lock(mu_);
  if (count_ == 0) return nullptr;
  if (!reads_.empty()) return flush_locked();
  wire::Writer m(wire::Kind::kBatch, device_->transport().loom_version());
  m.u32(count_);
  m.bytes(items_.data().data() + sizeof(wire::WireHeader), items_.data().size() - sizeof(wire::WireHeader));
  clear();
  const RemoteInfo& i = device_->info();
  return device_->transport().post_request(i.rank, i.name, m);
}

loom_status_t* StreamQueue::flush_locked() {
  // Nothing queued: the replies of posted copies are still this rank's work.
  if (count_ == 0) return device_->transport().collect(device_->info().rank);
  wire::Writer m(wire::Kind::kBatch, device_->transport().loom_version());
  m.u32(count_);
  m.bytes(items_.data().data() + sizeof(wire::WireHeader), items_.data().size() - sizeof(wire::WireHeader));
  std::vector<Read> reads;
  reads.swap(reads_);
  clear();
  std::vector<uint8_t> reply;
  const RemoteInfo& i = device_->info();
  if (loom_status_t* st = device_->transport().request(i.rank, i.name, m, &reply)) return st;
  size_t want = 0;
  for (const Read& r : reads) want += r.size;
  if (reply.size() != want) {
    return make_status(LOOM_STATUS_INTERNAL, "[mpi.batch] " + i.name + " sent " + std::to_string(reply.size()) +
                                                 " bytes for reads of " + std::to_string(want));
  }
  size_t at = 0;
  for (const Read& r : reads) {
    if (r.size) std::memcpy(r.data, reply.data() + at, r.size);
    at += r.size;
  }
  return nullptr;
}

void StreamQueue::move_writes_into(wire::Writer& run) {
  std::lock_guard<std::mutex> lock(mu_);
  run.u32(count_);
  run.bytes(items_.data().data() + sizeof(wire::WireHeader), items_.data().size() - sizeof(wire::WireHeader));
  clear();
}

}  // namespace loom::mpi
