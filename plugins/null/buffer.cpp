#include "buffer.h"

#include <cstring>
#include <new>

#include "common/glue.h"

namespace loom::null {
namespace {

using loom::common::guarded;
using loom::common::make_status;

// A host-memory buffer: the ABI struct plus the allocation behind it.
struct HostBuffer {
  loom_buffer_t raw;
  void* data;
};

HostBuffer* host_buffer(loom_buffer_t* b) { return static_cast<HostBuffer*>(b->context); }

// Whether [data + offset, + size) of the tensor lies inside the buffer.
loom_status_t* check_range(const char* op, loom_buffer_t* b, const loom_tensor_t* t, size_t offset,
                           size_t size) {
  if (!t || !t->data) return make_status(LOOM_STATUS_INVALID_ARGUMENT, std::string("[") + op + "] tensor has no data");
  char* base = static_cast<char*>(host_buffer(b)->data);
  char* start = static_cast<char*>(t->data);
  if (start < base || offset > b->size || size > b->size - offset ||
      static_cast<size_t>(start - base) > b->size - offset - size) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       std::string("[") + op + "] tensor '" + t->name + "': range at offset " +
                           std::to_string(offset) + " size " + std::to_string(size) +
                           " is outside the buffer of " + std::to_string(b->size) + " bytes");
  }
  return nullptr;
}

void buffer_free(loom_buffer_t* b) {
  try {
    HostBuffer* hb = host_buffer(b);
    loom::common::host_services()->aligned_free(hb->data);
    delete hb;
  } catch (...) {
    // Nothing in here throws; the catch keeps the ABI boundary exception-free.
  }
}

void* buffer_base(loom_buffer_t* b) { return host_buffer(b)->data; }

loom_status_t* buffer_set_tensor(loom_buffer_t* b, loom_tensor_t* t, const void* data, size_t offset,
                                 size_t size) {
  return guarded("null.set_tensor", [&]() -> loom_status_t* {
    if (loom_status_t* st = check_range("null.set_tensor", b, t, offset, size)) return st;
    if (size) std::memcpy(static_cast<char*>(t->data) + offset, data, size);
    return nullptr;
  });
}

loom_status_t* buffer_get_tensor(loom_buffer_t* b, const loom_tensor_t* t, void* data, size_t offset,
                                 size_t size) {
  return guarded("null.get_tensor", [&]() -> loom_status_t* {
    if (loom_status_t* st = check_range("null.get_tensor", b, t, offset, size)) return st;
    if (size) std::memcpy(data, static_cast<const char*>(t->data) + offset, size);
    return nullptr;
  });
}

loom_status_t* buffer_clear(loom_buffer_t* b, uint8_t value) {
  return guarded("null.clear", [&]() -> loom_status_t* {
    if (b->size) std::memset(host_buffer(b)->data, value, b->size);
    return nullptr;
  });
}

const loom_buffer_iface_t kBufferIface = {
    sizeof(loom_buffer_iface_t),
    buffer_free,
    buffer_base,
    buffer_set_tensor,
    buffer_get_tensor,
    buffer_clear,
    nullptr,  // init_tensor: nothing to set up per tensor
    nullptr,  // copy_tensor: the host stages copies through host memory
};

const char* type_name(loom_buffer_type_t* t) { return BufferType::from(t)->name().c_str(); }

loom_status_t* type_alloc(loom_buffer_type_t* t, size_t size, loom_buffer_t** out_buffer) {
  return guarded("null.alloc", [&]() -> loom_status_t* {
    BufferType* type = BufferType::from(t);
    const loom_host_services_t* host = loom::common::host_services();
    // Size 0 still gets memory so base() is never NULL.
    void* data = host->aligned_alloc(size ? size : 1, type->alignment());
    if (!data) {
      return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED,
                         "[null.alloc] " + type->name() + ": out of host memory for " + std::to_string(size) + " bytes");
    }
    HostBuffer* hb = new (std::nothrow) HostBuffer{};
    if (!hb) {
      host->aligned_free(data);
      return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED, "[null.alloc] out of host memory");
    }
    hb->data = data;
    hb->raw = loom_buffer_t{sizeof(loom_buffer_t), &kBufferIface, t, size, hb};
    *out_buffer = &hb->raw;
    return nullptr;
  });
}

size_t type_alignment(loom_buffer_type_t* t) { return BufferType::from(t)->alignment(); }

bool type_is_host(loom_buffer_type_t*) { return true; }

const loom_buffer_type_iface_t kBufferTypeIface = {
    sizeof(loom_buffer_type_iface_t),
    type_name,
    type_alloc,
    type_alignment,
    nullptr,  // max_size: no limit beyond host memory
    nullptr,  // alloc_size: dense size
    type_is_host,
};

}  // namespace

BufferType::BufferType(loom_device_t* device, std::string name, size_t alignment)
    : name_(std::move(name)), alignment_(alignment) {
  raw_ = loom_buffer_type_t{sizeof(loom_buffer_type_t), &kBufferTypeIface, device, this};
}

}  // namespace loom::null
