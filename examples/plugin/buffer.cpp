#include "buffer.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "common/glue.h"
#include "common/type_traits.h"

namespace example {
namespace {

using loom::common::guarded;
using loom::common::make_status;

struct Memory {
  void* base = nullptr;
};

char* base_of(loom_buffer_t* b) { return static_cast<char*>(static_cast<Memory*>(b->context)->base); }

// [offset, offset + size) of tensor t must lie inside buffer b.
loom_status_t* check_range(const char* op, loom_buffer_t* b, const loom_tensor_t* t, size_t offset, size_t size) {
  const char* base = base_of(b);
  const char* data = static_cast<const char*>(t->data);
  if (data == nullptr || data < base || data > base + b->size) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       std::string("[example.") + op + "] tensor '" + t->name + "' is not in this buffer");
  }
  const size_t start = static_cast<size_t>(data - base);
  if (offset > b->size - start || size > b->size - start - offset) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       std::string("[example.") + op + "] bytes [" + std::to_string(start + offset) + ", " +
                           std::to_string(start + offset + size) + ") of tensor '" + t->name +
                           "' are outside the buffer of " + std::to_string(b->size) + " bytes");
  }
  return nullptr;
}

// Bytes of a dense tensor (rows back to back), 0 when it has gaps or is a
// strided view.
size_t dense_bytes(const loom_tensor_t* t) {
  const size_t row = loom::common::row_size(t->type, t->ne[0]);
  if (t->nb[1] != row || t->nb[2] != row * static_cast<size_t>(t->ne[1]) ||
      t->nb[3] != t->nb[2] * static_cast<size_t>(t->ne[2])) {
    return 0;
  }
  return t->nb[3] * static_cast<size_t>(t->ne[3]);
}

void buffer_free(loom_buffer_t* b) {
  auto* m = static_cast<Memory*>(b->context);
  std::free(m->base);
  delete m;
  delete b;
}

void* buffer_base(loom_buffer_t* b) { return base_of(b); }

loom_status_t* buffer_set_tensor(loom_buffer_t* b, loom_tensor_t* t, const void* data, size_t offset, size_t size) {
  return guarded("example.set_tensor", [&]() -> loom_status_t* {
    if (loom_status_t* st = check_range("set_tensor", b, t, offset, size)) return st;
    if (size > 0) std::memcpy(static_cast<char*>(t->data) + offset, data, size);
    return nullptr;
  });
}

loom_status_t* buffer_get_tensor(loom_buffer_t* b, const loom_tensor_t* t, void* data, size_t offset, size_t size) {
  return guarded("example.get_tensor", [&]() -> loom_status_t* {
    if (loom_status_t* st = check_range("get_tensor", b, t, offset, size)) return st;
    if (size > 0) std::memcpy(data, static_cast<const char*>(t->data) + offset, size);
    return nullptr;
  });
}

loom_status_t* buffer_clear(loom_buffer_t* b, uint8_t value) {
  if (b->size > 0) std::memset(base_of(b), value, b->size);
  return nullptr;
}

// Copies between two buffers of this type (device to device); anything else
// is UNIMPLEMENTED and the host stages it through host memory.
loom_status_t* buffer_copy_tensor(loom_buffer_t* b, const loom_tensor_t* src, loom_tensor_t* dst) {
  return guarded("example.copy_tensor", [&]() -> loom_status_t* {
    if (src->buffer == nullptr || src->buffer->buffer_type != b->buffer_type) {
      return make_status(LOOM_STATUS_UNIMPLEMENTED, "[example.copy_tensor] source is not example memory");
    }
    const size_t n = dense_bytes(src);
    if (n == 0 || n != dense_bytes(dst)) {
      return make_status(LOOM_STATUS_UNIMPLEMENTED, "[example.copy_tensor] only dense tensors of one size");
    }
    if (loom_status_t* st = check_range("copy_tensor", b, dst, 0, n)) return st;
    if (loom_status_t* st = check_range("copy_tensor", src->buffer, src, 0, n)) return st;
    std::memmove(dst->data, src->data, n);
    return nullptr;
  });
}

const loom_buffer_iface_t kBufferIface = {
    sizeof(loom_buffer_iface_t), buffer_free, buffer_base, buffer_set_tensor, buffer_get_tensor, buffer_clear,
    nullptr,  // init_tensor: nothing to do per tensor
    buffer_copy_tensor,
};

const char* type_name(loom_buffer_type_t*) { return "example"; }

loom_status_t* type_alloc(loom_buffer_type_t* type, size_t size, loom_buffer_t** out) {
  return guarded("example.alloc", [&]() -> loom_status_t* {
    // Round up to the alignment (aligned_alloc needs a multiple); 0 is allowed.
    const size_t padded = size == 0 ? kAlignment : ((size + kAlignment - 1) / kAlignment) * kAlignment;
    void* p = padded < size ? nullptr : std::aligned_alloc(kAlignment, padded);
    if (p == nullptr) {
      return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED,
                         "[example.alloc] cannot allocate " + std::to_string(size) + " bytes");
    }
    auto* m = new Memory{p};
    *out = new loom_buffer_t{sizeof(loom_buffer_t), &kBufferIface, type, size, m};
    return nullptr;
  });
}

size_t type_alignment(loom_buffer_type_t*) { return kAlignment; }
bool type_is_host(loom_buffer_type_t*) { return false; }

const loom_buffer_type_iface_t kTypeIface = {
    sizeof(loom_buffer_type_iface_t), type_name, type_alloc, type_alignment,
    nullptr,  // max_size: SIZE_MAX
    nullptr,  // alloc_size: a tensor's dense size
    type_is_host,
};

}  // namespace

BufferType::BufferType(loom_device_t* device) : raw_{sizeof(loom_buffer_type_t), &kTypeIface, device, this} {}

bool BufferType::owns(const loom_buffer_type_t* type, const loom_tensor_t* t) {
  return t->buffer != nullptr && t->buffer->buffer_type == type;
}

}  // namespace example
