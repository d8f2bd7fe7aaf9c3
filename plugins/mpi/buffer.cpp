#include "buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "common/glue.h"
#include "copy.h"
#include "device.h"

namespace loom::mpi {
namespace {

using common::guarded;
using common::make_status;
namespace wire = common::mpi;

// set/get move at most this many bytes per message, so a large weight never
// meets MPI's int count limit and the deadline covers a bounded transfer.
constexpr size_t kChunk = size_t{64} << 20;

RemoteBuffer* ctx(loom_buffer_t* b) { return static_cast<RemoteBuffer*>(b->context); }

loom_status_t* check_in(RemoteBuffer* rb, const loom_tensor_t* t, const char* op) {
  const char* d = static_cast<const char*>(t ? t->data : nullptr);
  const char* b = static_cast<const char*>(rb->base);
  if (t == nullptr || d < b || d > b + rb->reserved) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, std::string("[mpi.") + op + "] tensor '" + (t ? t->name : "?") +
                                                         "' does not point into buffer of " + rb->device->info().name);
  }
  return nullptr;
}

void send_free(RemoteDevice* dev, uint64_t id) {
  wire::Writer m(wire::Kind::kFree, dev->transport().loom_version());
  m.u64(id);
  // A lost rank's memory is gone with it: nothing to report to a caller that frees.
  if (loom_status_t* st = dev->transport().request(dev->info().rank, dev->info().name, m, nullptr)) {
    common::host_services()->status_free(st);
  }
}

void buffer_free(loom_buffer_t* b) {
  RemoteBuffer* rb = ctx(b);
  send_free(rb->device, rb->id);
  if (rb->reserved) munmap(rb->base, rb->reserved);
  delete rb;
}

void* buffer_base(loom_buffer_t* b) { return ctx(b)->base; }

loom_status_t* buffer_set_tensor(loom_buffer_t* b, loom_tensor_t* t, const void* data, size_t offset, size_t size) {
  return guarded("mpi.set_tensor", [&]() -> loom_status_t* {
    RemoteBuffer* rb = ctx(b);
    if (loom_status_t* st = check_in(rb, t, "set_tensor")) return st;
    return remote_set(rb, placed(t, rb), data, offset, size);
  });
}

loom_status_t* buffer_get_tensor(loom_buffer_t* b, const loom_tensor_t* t, void* data, size_t offset, size_t size) {
  return guarded("mpi.get_tensor", [&]() -> loom_status_t* {
    RemoteBuffer* rb = ctx(b);
    if (loom_status_t* st = check_in(rb, t, "get_tensor")) return st;
    return remote_get(rb, placed(t, rb), data, offset, size);
  });
}

loom_status_t* buffer_clear(loom_buffer_t* b, uint8_t value) {
  return guarded("mpi.clear", [&]() -> loom_status_t* {
    RemoteBuffer* rb = ctx(b);
    wire::Writer m(wire::Kind::kClear, rb->device->transport().loom_version());
    m.u64(rb->id);
    m.u32(value);
    return rb->device->transport().request(rb->device->info().rank, rb->device->info().name, m, nullptr);
  });
}

// From another remote buffer: rank to rank (or on the worker when both
// are on one rank), copy.cpp; from anything else UNIMPLEMENTED (staged).
loom_status_t* buffer_copy_tensor(loom_buffer_t* b, const loom_tensor_t* src, loom_tensor_t* dst) {
  return guarded("mpi.copy_tensor", [&]() -> loom_status_t* {
    RemoteBuffer* rb = ctx(b);
    if (loom_status_t* st = check_in(rb, dst, "copy_tensor")) return st;
    return remote_copy(rb, src, dst);
  });
}

const loom_buffer_iface_t kBufferIface = {
    sizeof(loom_buffer_iface_t), buffer_free, buffer_base, buffer_set_tensor, buffer_get_tensor, buffer_clear,
    nullptr,  // init_tensor: nothing to do until bytes arrive
    buffer_copy_tensor,
};

const char* type_name(loom_buffer_type_t* bt) { return RemoteBufferType::from(bt)->device()->info().name.c_str(); }

loom_status_t* type_alloc(loom_buffer_type_t* bt, size_t size, loom_buffer_t** out) {
  return guarded("mpi.alloc", [&]() -> loom_status_t* {
    RemoteDevice* dev = RemoteBufferType::from(bt)->device();
    wire::Writer m(wire::Kind::kAlloc, dev->transport().loom_version());
    m.u32(dev->info().index);
    m.u64(size);
    std::vector<uint8_t> reply;
    if (loom_status_t* st = dev->transport().request(dev->info().rank, dev->info().name, m, &reply)) return st;
    wire::Reader r(reply.data(), reply.size());
    auto rb = std::make_unique<RemoteBuffer>();
    rb->device = dev;
    rb->id = r.u64();
    if (r.failed()) return make_status(LOOM_STATUS_INTERNAL, "[mpi.alloc] short reply from " + dev->info().name);
    // Address space only: a unique, never-touched range for tensor pointers.
    rb->reserved = std::max<size_t>(size, 1);
    rb->base = mmap(nullptr, rb->reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (rb->base == MAP_FAILED) {
      send_free(dev, rb->id);
      return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED,
                         "[mpi.alloc] cannot reserve " + std::to_string(size) + " bytes of address space for " + dev->info().name);
    }
    rb->raw = loom_buffer_t{sizeof(loom_buffer_t), &kBufferIface, bt, size, rb.get()};
    *out = &rb.release()->raw;
    return nullptr;
  });
}

size_t type_alignment(loom_buffer_type_t* bt) { return RemoteBufferType::from(bt)->device()->info().alignment; }

bool type_is_host(loom_buffer_type_t*) { return false; }

const loom_buffer_type_iface_t kBufferTypeIface = {
    sizeof(loom_buffer_type_iface_t), type_name, type_alloc, type_alignment,
    nullptr,  // max_size: the remote device's own limit answers at alloc
    nullptr,  // alloc_size: dense sizes (no remote weight layouts yet)
    type_is_host,
};

}  // namespace

RemoteBufferType::RemoteBufferType(RemoteDevice* device)
    : device_(device), handle_{sizeof(loom_buffer_type_t), &kBufferTypeIface, device->raw(), this} {}

loom_status_t* remote_set(RemoteBuffer* rb, const wire::WireTensor& w, const void* data, size_t offset, size_t size) {
  for (size_t done = 0; done < size;) {
    const size_t n = std::min(kChunk, size - done);
    wire::Writer m(wire::Kind::kSet, rb->device->transport().loom_version());
    wire::write_tensor(m, w);
    m.u64(offset + done);
    m.u64(n);
    m.bytes(static_cast<const char*>(data) + done, n);
    if (loom_status_t* st = rb->device->transport().request(rb->device->info().rank, rb->device->info().name, m, nullptr)) {
      return st;
    }
    done += n;
  }
  return nullptr;
}

loom_status_t* remote_get(RemoteBuffer* rb, const wire::WireTensor& w, void* data, size_t offset, size_t size) {
  std::vector<uint8_t> reply;
  for (size_t done = 0; done < size;) {
    const size_t n = std::min(kChunk, size - done);
    wire::Writer m(wire::Kind::kGet, rb->device->transport().loom_version());
    wire::write_tensor(m, w);
    m.u64(offset + done);
    m.u64(n);
    if (loom_status_t* st = rb->device->transport().request(rb->device->info().rank, rb->device->info().name, m, &reply)) {
      return st;
    }
    if (reply.size() != n) {
      return make_status(LOOM_STATUS_INTERNAL, "[mpi.get_tensor] " + rb->device->info().name + " sent " +
                                                   std::to_string(reply.size()) + " bytes, asked " + std::to_string(n));
    }
    std::copy(reply.begin(), reply.end(), static_cast<uint8_t*>(data) + done);
    done += n;
  }
  return nullptr;
}

wire::WireTensor placed(const loom_tensor_t* t, RemoteBuffer* rb) {
  wire::WireTensor w = wire::wire_fields(*t);
  w.buffer = rb->id;
  w.offset = static_cast<uint64_t>(static_cast<const char*>(t->data) - static_cast<const char*>(rb->base));
  return w;
}

RemoteBuffer* remote_buffer_of(const loom_tensor_t* t, const RemoteDevice* device, uint64_t* offset) {
  const loom_tensor_t* owner = t;
  while (owner->buffer == nullptr && owner->view_src != nullptr) owner = owner->view_src;
  loom_buffer_t* b = owner->buffer;
  if (b == nullptr || b->iface != &kBufferIface) return nullptr;
  RemoteBuffer* rb = static_cast<RemoteBuffer*>(b->context);
  if (device != nullptr && rb->device != device) return nullptr;
  const char* d = static_cast<const char*>(t->data);
  const char* base = static_cast<const char*>(rb->base);
  if (d == nullptr || d < base || d > base + rb->reserved) return nullptr;
  *offset = static_cast<uint64_t>(d - base);
  return rb;
}

}  // namespace loom::mpi
