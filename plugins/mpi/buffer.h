// Remote memory: a buffer type per remote device and its buffers. A buffer
// is an allocation in the worker's process (a registry buffer of the remote
// device), named on the wire by the id the worker gave it. Rank 0 reserves
// an inaccessible address range of the same size (mmap PROT_NONE) as the
// buffer's base, so tensor data pointers are unique and their offset from
// the base is the offset in the remote allocation; the memory is never
// touched here (is_host is false). Buffers are not thread-safe (the host
// serialises calls per buffer); the buffer type is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/mpi_wire.h"
#include "loom/plugin.h"

namespace loom::mpi {

class RemoteDevice;

class RemoteBufferType {
 public:
  explicit RemoteBufferType(RemoteDevice* device);
  RemoteBufferType(const RemoteBufferType&) = delete;
  RemoteBufferType& operator=(const RemoteBufferType&) = delete;

  loom_buffer_type_t* handle() { return &handle_; }
  RemoteDevice* device() const { return device_; }
  static RemoteBufferType* from(loom_buffer_type_t* bt) { return static_cast<RemoteBufferType*>(bt->context); }

 private:
  RemoteDevice* device_;
  loom_buffer_type_t handle_;
};

// What a loom_buffer_t of this plugin carries as its context.
struct RemoteBuffer {
  RemoteDevice* device = nullptr;
  uint64_t id = 0;       // the worker's id
  void* base = nullptr;  // reserved, inaccessible
  size_t reserved = 0;   // bytes reserved at base
  loom_buffer_t raw{};
};

// The remote buffer behind `t` (t->buffer, else its view base's), when it is
// a buffer of `device` (nullptr: of any remote device); nullptr otherwise.
// *offset: t->data - base.
RemoteBuffer* remote_buffer_of(const loom_tensor_t* t, const RemoteDevice* device, uint64_t* offset);

// The tensor's fields and its offset in rb's remote allocation.
common::mpi::WireTensor placed(const loom_tensor_t* t, RemoteBuffer* rb);

// Bytes [offset, offset + size) of the tensor w (placed in rb) written or
// read now, in messages of at most 64 MiB each (set / get). nullptr = OK.
loom_status_t* remote_set(RemoteBuffer* rb, const common::mpi::WireTensor& w, const void* data, size_t offset, size_t size);
loom_status_t* remote_get(RemoteBuffer* rb, const common::mpi::WireTensor& w, void* data, size_t offset, size_t size);

}  // namespace loom::mpi
