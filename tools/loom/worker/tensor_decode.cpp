#include "worker/tensor_decode.hpp"

#include <cstring>

#include "common/op_check.h"
#include "common/op_info.h"
#include "common/op_table.h"
#include "loom/registry/plugin_calls.hpp"

namespace loom::cli::worker {
namespace {

namespace wire = common::mpi;

std::string where(const char* what, size_t i, const wire::WireTensor& w) {
  return std::string("[worker.") + what + "] tensor " + std::to_string(i) + " '" + w.name + "': ";
}

// Fields that need no other tensor: type, extents, op id.
Status check_fields(const char* what, size_t i, const wire::WireTensor& w, Tensor* t) {
  t->struct_size = sizeof(loom_tensor_t);
  wire::apply_fields(w, t);
  if (w.op < 0 || w.op >= LOOM_OP_COUNT) return invalid_argument(where(what, i, w) + "op id " + std::to_string(w.op) + " is not an op");
  if (!common::tensor_ok(t)) return invalid_argument(where(what, i, w) + "type " + std::to_string(w.type) + " or extents are not valid");
  return Status::Ok();
}

// t's bytes inside the buffer w names; sets data and buffer.
Status place_in(const char* what, size_t i, const wire::WireTensor& w, const BufferLookup& place, Tensor* t) {
  const PlacedBuffer b = place(w.buffer);
  if (b.raw == nullptr) return invalid_argument(where(what, i, w) + "buffer " + std::to_string(w.buffer) + " is not a buffer of this device");
  if (w.offset > b.raw->size) {
    return invalid_argument(where(what, i, w) + "offset " + std::to_string(w.offset) + " is past the buffer's " +
                            std::to_string(b.raw->size) + " bytes");
  }
  t->data = static_cast<char*>(b.base) + w.offset;
  t->buffer = b.raw;
  StatusOr<size_t> span = registry::tensor_span_bytes(t);
  if (!span.ok()) return invalid_argument(where(what, i, w) + span.status().message());
  if (*span > b.raw->size - w.offset) {
    return invalid_argument(where(what, i, w) + std::to_string(*span) + " bytes at offset " + std::to_string(w.offset) +
                            " do not fit the buffer's " + std::to_string(b.raw->size));
  }
  return Status::Ok();
}

// Sources and view base: earlier tensors only; the op's rule when it computes.
Status link(const char* what, size_t i, const wire::WireTensor& w, std::vector<Tensor>* ts) {
  Tensor* t = &(*ts)[i];
  for (int s = 0; s < LOOM_MAX_SRC; ++s) {
    if (w.src[s] == -1) continue;
    if (w.src[s] < 0 || static_cast<size_t>(w.src[s]) >= i) {
      return invalid_argument(where(what, i, w) + "source " + std::to_string(s) + " is tensor " + std::to_string(w.src[s]) +
                              ", not one sent before it");
    }
    t->src[s] = &(*ts)[static_cast<size_t>(w.src[s])];
  }
  if (w.view_src != -1) {
    if (w.view_src < 0 || static_cast<size_t>(w.view_src) >= i) {
      return invalid_argument(where(what, i, w) + "view base is tensor " + std::to_string(w.view_src) + ", not one sent before it");
    }
    t->view_src = &(*ts)[static_cast<size_t>(w.view_src)];
    t->view_offset = static_cast<size_t>(w.view_offset);
  }
  if (t->op == LOOM_OP_NONE) return Status::Ok();
  if (common::op_facts(t->op).view) {
    if (t->view_src == nullptr) return invalid_argument(where(what, i, w) + common::op_name(t->op) + " view without a view base");
    return Status::Ok();
  }
  for (int s = 0; s < common::op_source_count(t->op); ++s) {
    if (t->src[s] == nullptr) return invalid_argument(where(what, i, w) + common::op_name(t->op) + " lacks source " + std::to_string(s));
  }
  if (const char* why = common::check_node(t)) {
    return invalid_argument(where(what, i, w) + common::op_name(t->op) + " is not well-formed (" + why + ")");
  }
  return Status::Ok();
}

}  // namespace

Status decode_tensors(wire::Reader& r, uint32_t count, const BufferLookup* place, const char* what, std::vector<Tensor>* out) {
  // The least bytes one tensor takes on the wire bounds count before anything is allocated.
  constexpr size_t kMinTensorBytes = 8 + 32 + 32 + 64 + 4 + 16 + 16 + 4 + 8 + 4;
  if (count > wire::kWireMaxTensors || count > r.remaining() / kMinTensorBytes) {
    return invalid_argument(std::string("[worker.") + what + "] " + std::to_string(count) + " tensors do not fit the " +
                            std::to_string(r.remaining()) + "-byte message");
  }
  out->assign(count, Tensor{});
  for (size_t i = 0; i < count; ++i) {
    wire::WireTensor w;
    if (!wire::read_tensor(r, &w)) return invalid_argument(std::string("[worker.") + what + "] message ends inside tensor " + std::to_string(i));
    Tensor* t = &(*out)[i];
    LOOM_RETURN_IF_ERROR(check_fields(what, i, w, t));
    if (place != nullptr) {
      LOOM_RETURN_IF_ERROR(place_in(what, i, w, *place, t));
    } else if (w.buffer != 0) {
      return invalid_argument(where(what, i, w) + "names buffer " + std::to_string(w.buffer) + " in a query that has none");
    }
    LOOM_RETURN_IF_ERROR(link(what, i, w, out));
  }
  return Status::Ok();
}

Status decode_placed_tensor(wire::Reader& r, const BufferLookup& place, const char* what, Tensor* t) {
  wire::WireTensor w;
  if (!wire::read_tensor(r, &w)) return invalid_argument(std::string("[worker.") + what + "] message ends inside the tensor");
  return place_tensor(w, place, what, t);
}

Status place_tensor(const wire::WireTensor& w, const BufferLookup& place, const char* what, Tensor* t) {
  LOOM_RETURN_IF_ERROR(check_fields(what, 0, w, t));
  return place_in(what, 0, w, place, t);
}

}  // namespace loom::cli::worker
