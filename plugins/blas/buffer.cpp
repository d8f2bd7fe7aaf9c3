#include "buffer.h"

#include <cstring>
#include <new>
#include <string>

#include "common/glue.h"
#include "common/type_traits.h"

namespace loom::blas {

namespace {

// Bytes from a tensor's data to the end of its last element; dense size when
// contiguous.
size_t tensor_span(const loom_tensor_t* t) {
  const common::TypeTraits& tr = common::type_traits(t->type);
  size_t span = tr.type_size;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    const int64_t n = d == 0 ? t->ne[0] / tr.block_size : t->ne[d];
    if (n <= 0) return 0;
    span += static_cast<size_t>(n - 1) * t->nb[d];
  }
  return span;
}

bool is_dense(const loom_tensor_t* t) {
  const common::TypeTraits& tr = common::type_traits(t->type);
  size_t expect = tr.type_size;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (t->nb[d] != expect) return false;
    expect *= static_cast<size_t>(d == 0 ? t->ne[0] / tr.block_size : t->ne[d]);
  }
  return true;
}

}  // namespace

BufferType::BufferType(loom_device_t* device, const loom_buffer_type_iface_t* iface) {
  handle_.struct_size = sizeof(handle_);
  handle_.iface = iface;
  handle_.device = device;
  handle_.context = this;
}

loom_status_t* BufferType::alloc(size_t size, const loom_buffer_iface_t* iface,
                                 loom_buffer_t** out_buffer) {
  if (out_buffer == nullptr) {
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT,
                               "[blas.buffer_alloc] out_buffer is null");
  }
  *out_buffer = nullptr;
  const loom_host_services_t* hs = common::host_services();
  // Size 0 still gets a small block so base() is a valid address.
  void* mem = hs->aligned_alloc(size == 0 ? kAlignment : size, kAlignment);
  if (mem == nullptr) {
    return common::make_status(
        LOOM_STATUS_RESOURCE_EXHAUSTED,
        "[blas.buffer_alloc] cannot allocate " + std::to_string(size) + " bytes of host memory");
  }
  Buffer* b = new (std::nothrow) Buffer(&handle_, iface, mem, size, true);
  if (b == nullptr) {
    hs->aligned_free(mem);
    return common::make_status(LOOM_STATUS_RESOURCE_EXHAUSTED,
                               "[blas.buffer_alloc] out of host memory");
  }
  *out_buffer = &b->handle_;
  return nullptr;
}

Buffer::Buffer(loom_buffer_type_t* buffer_type, const loom_buffer_iface_t* iface, void* base,
               size_t size, bool owned)
    : base_(base), owned_(owned) {
  handle_.struct_size = sizeof(handle_);
  handle_.iface = iface;
  handle_.buffer_type = buffer_type;
  handle_.size = size;
  handle_.context = this;
}

loom_status_t* Buffer::wrap(loom_buffer_type_t* buffer_type, const loom_buffer_iface_t* iface,
                            void* ptr, size_t size, loom_buffer_t** out_buffer) {
  if (out_buffer == nullptr) {
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT,
                               "[blas.buffer_from_host_ptr] out_buffer is null");
  }
  *out_buffer = nullptr;
  if (ptr == nullptr && size > 0) {
    return common::make_status(
        LOOM_STATUS_INVALID_ARGUMENT,
        "[blas.buffer_from_host_ptr] ptr is null with size " + std::to_string(size));
  }
  Buffer* b = new Buffer(buffer_type, iface, ptr, size, false);
  *out_buffer = &b->handle_;
  return nullptr;
}

void Buffer::destroy() {
  if (owned_ && base_ != nullptr) common::host_services()->aligned_free(base_);
  delete this;
}

loom_status_t* Buffer::check_range(const char* what, const loom_tensor_t* tensor, size_t offset,
                                   size_t size) const {
  if (tensor == nullptr || (tensor->data == nullptr && size > 0)) {
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT,
                               std::string("[blas.") + what + "] tensor or its data is null");
  }
  const auto lo = reinterpret_cast<uintptr_t>(base_);
  const auto p = reinterpret_cast<uintptr_t>(tensor->data);
  const size_t len = handle_.size;
  if (size > 0 &&
      (p < lo || p - lo > len || offset > len - (p - lo) || size > len - (p - lo) - offset)) {
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT,
                               std::string("[blas.") + what + "] tensor '" + tensor->name +
                                   "': " + std::to_string(size) + " bytes at offset " +
                                   std::to_string(offset) + " fall outside the buffer of " +
                                   std::to_string(len) + " bytes");
  }
  return nullptr;
}

loom_status_t* Buffer::set_tensor(loom_tensor_t* tensor, const void* data, size_t offset,
                                  size_t size) {
  if (loom_status_t* st = check_range("set_tensor", tensor, offset, size)) return st;
  if (size > 0) std::memcpy(static_cast<char*>(tensor->data) + offset, data, size);
  return nullptr;
}

loom_status_t* Buffer::get_tensor(const loom_tensor_t* tensor, void* data, size_t offset,
                                  size_t size) {
  if (loom_status_t* st = check_range("get_tensor", tensor, offset, size)) return st;
  if (size > 0) std::memcpy(data, static_cast<const char*>(tensor->data) + offset, size);
  return nullptr;
}

loom_status_t* Buffer::clear(uint8_t value) {
  if (handle_.size > 0) std::memset(base_, value, handle_.size);
  return nullptr;
}

loom_status_t* Buffer::copy_tensor(const loom_tensor_t* src, loom_tensor_t* dst) {
  const bool host_src = src != nullptr && src->buffer != nullptr &&
                        src->buffer->buffer_type != nullptr &&
                        src->buffer->buffer_type->iface->is_host(src->buffer->buffer_type);
  bool same =
      host_src && dst != nullptr && src->type == dst->type && common::type_is_valid(src->type);
  for (int d = 0; same && d < LOOM_MAX_DIMS; ++d) same = src->ne[d] == dst->ne[d];
  if (!same || !is_dense(src) || !is_dense(dst) || src->data == nullptr) {
    return common::make_status(LOOM_STATUS_UNIMPLEMENTED,
                               "[blas.copy_tensor] only dense copies between host buffers");
  }
  const size_t n = tensor_span(src);
  if (loom_status_t* st = check_range("copy_tensor", dst, 0, n)) return st;
  if (n > 0) std::memmove(dst->data, src->data, n);
  return nullptr;
}

}  // namespace loom::blas
