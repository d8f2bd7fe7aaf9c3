// Tensors from the wire, checked before anything reads them: known type and
// op, whole blocks, sources and view bases only among the tensors before
// (so the graph is acyclic and every pointer is inside the array), every
// compute node well-formed by the op table's rule (plugins/common
// op_check.h), and with `place`, every tensor's bytes inside the buffer it
// names. Errors are INVALID_ARGUMENT "[worker.<what>] tensor 3 'x': ...".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/mpi_wire.h"
#include "loom/runtime/status.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::cli::worker {

// A buffer a tensor may name: its handle and base address; nullptr handle
// when the id is unknown (or belongs to another device).
struct PlacedBuffer {
  loom_buffer_t* raw = nullptr;
  void* base = nullptr;
};
using BufferLookup = std::function<PlacedBuffer(uint64_t id)>;

// Read `count` tensors into *out (resized to count; element addresses stay
// fixed after). place == nullptr: no buffers (a supports query; buffer ids
// must be 0). what: the request, for messages.
Status decode_tensors(common::mpi::Reader& r, uint32_t count, const BufferLookup* place, const char* what,
                      std::vector<Tensor>* out);

// One tensor's fields alone (set/get): type and shape well-formed, in the
// buffer it names. *t gets data and buffer.
Status decode_placed_tensor(common::mpi::Reader& r, const BufferLookup& place, const char* what, Tensor* t);
// The same checks for a tensor already read (an item of a batch).
Status place_tensor(const common::mpi::WireTensor& w, const BufferLookup& place, const char* what, Tensor* t);

}  // namespace loom::cli::worker
