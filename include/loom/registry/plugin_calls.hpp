// The one door for host calls on plugin buffers and buffer types reached by
// raw handle (a tensor's `buffer`, a device's buffer type). Every function
// here runs the plugin entry inside the registry's guard (an escaping C++
// exception becomes an INTERNAL status naming the call), checks struct_size
// before an entry a 1.0 table may lack, and converts the plugin's status.
// Code outside registry/ never calls through `iface` itself
// (docs/plugin-abi.md, host rule 4). Thread-safety is the plugin's: buffer
// types are thread-safe, a buffer is used by one thread at a time.
#pragma once

#include <cstddef>
#include <string>

#include "loom/plugin.h"
#include "loom/runtime/status.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::registry {

// Alignment of tensors in buffers of `buft` (a power of two, checked).
StatusOr<size_t> buffer_type_alignment(loom_buffer_type_t* buft);
// Bytes tensor `t` needs in a buffer of `buft`: alloc_size, or t's dense
// size when the entry is NULL.
StatusOr<size_t> buffer_type_alloc_size(loom_buffer_type_t* buft, const Tensor* t);
// The type's name for messages ("?" when the call fails).
std::string buffer_type_name(loom_buffer_type_t* buft);
// Whether the host reads and writes this memory at tensor addresses (false
// when the call fails).
bool buffer_type_is_host(loom_buffer_type_t* buft);

// The bytes tensor `t` spans from its data pointer (ggml's nbytes: the
// first row's blocks plus (ne[i] - 1) * nb[i] for the other dims; 0 when an
// extent is 0). INVALID_ARGUMENT for an unknown type, a negative extent or
// a span past SIZE_MAX.
StatusOr<size_t> tensor_span_bytes(const loom_tensor_t* t);
// The host's range check before any plugin call that moves tensor bytes
// (docs/plugin-abi.md, host rule 19): [offset, offset + size) inside t's
// span without overflow, and t's span inside buffer `b` (when b is given and
// has a base address). INVALID_ARGUMENT "[op] tensor 'x': ..." otherwise.
Status check_tensor_range(const char* op, loom_buffer_t* b, const loom_tensor_t* t, size_t offset, size_t size);

// Base address of `b` (nullptr when the call fails; logged).
void* buffer_base(loom_buffer_t* b);
// The buffer's init_tensor for a tensor just placed in it; OK when the
// entry is absent.
Status buffer_init_tensor(loom_buffer_t* b, loom_tensor_t* t);
// Host bytes into / out of tensor `t` of buffer `b` at byte `offset`.
Status buffer_set_tensor(loom_buffer_t* b, loom_tensor_t* t, const void* data, size_t offset,
                         size_t size);
Status buffer_get_tensor(loom_buffer_t* b, const loom_tensor_t* t, void* data, size_t offset,
                         size_t size);
// dst (in `b`) = src through the plugin's copy_tensor; UNIMPLEMENTED when the
// entry is absent or the plugin cannot copy from src's memory.
Status buffer_copy_tensor(loom_buffer_t* b, const loom_tensor_t* src, loom_tensor_t* dst);
// Whether b's plugin has a copy_tensor entry at all (it may still answer
// UNIMPLEMENTED for a given source).
bool buffer_offers_copy(const loom_buffer_t* b);

}  // namespace loom::registry
