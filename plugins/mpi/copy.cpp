#include "copy.h"

#include <algorithm>
#include <string>

#include "common/glue.h"
#include "common/tensor_layout.h"
#include "common/type_traits.h"
#include "device.h"

namespace loom::mpi {
namespace {

using common::make_status;
namespace wire = common::mpi;

loom_status_t* unimplemented(const std::string& why) {
  return make_status(LOOM_STATUS_UNIMPLEMENTED, "[mpi.copy_tensor] " + why + ": the host stages the copy");
}

bool same_layout(const loom_tensor_t* a, const loom_tensor_t* b) {
  if (a->type != b->type || !common::type_is_valid(a->type)) return false;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (a->ne[d] != b->ne[d]) return false;
  }
  return common::tensor_is_dense(a) && common::tensor_is_dense(b);
}

// Bytes [offset, offset + size) of src into dst, both sides posted.
loom_status_t* post_chunk(RemoteBuffer* srb, const wire::WireTensor& ws, RemoteBuffer* drb, const wire::WireTensor& wd,
                          uint64_t offset, uint64_t size) {
  Transport& tr = drb->device->transport();
  const RemoteInfo& si = srb->device->info();
  const RemoteInfo& di = drb->device->info();
  wire::WireCopy c;
  c.tensor = wd;
  c.offset = offset;
  c.size = size;
  if (si.rank == di.rank) {
    c.op = static_cast<uint32_t>(wire::CopyOp::kLocal);
    c.src = ws;
    return tr.post(di.rank, di.name, c);
  }
  // Each side waits for the other at most half of rank 0's deadline, so its
  // reply (naming the rank it waited for) arrives before rank 0 gives up.
  c.wait_ms = static_cast<uint32_t>(std::clamp(tr.timeout_s() * 500.0, 1.0, double{wire::kWireMaxCopyWaitMs}));
  c.tag = static_cast<uint32_t>(tr.next_copy_tag());
  c.op = static_cast<uint32_t>(wire::CopyOp::kRecv);
  c.peer = si.rank;
  wire::WireCopy send = c;
  send.op = static_cast<uint32_t>(wire::CopyOp::kSend);
  send.peer = di.rank;
  send.tensor = ws;
  if (loom_status_t* st = tr.post(si.rank, si.name, send)) return st;
  if (loom_status_t* st = tr.post(di.rank, di.name, c)) return st;
  tr.count_copy(size);
  return nullptr;
}

}  // namespace

loom_status_t* remote_copy(RemoteBuffer* drb, const loom_tensor_t* src, loom_tensor_t* dst) {
  uint64_t soff = 0, doff = 0;
  RemoteBuffer* srb = src != nullptr ? remote_buffer_of(src, nullptr, &soff) : nullptr;
  if (srb == nullptr) return unimplemented("the source is not in a remote buffer");
  if (remote_buffer_of(dst, drb->device, &doff) != drb) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, std::string("[mpi.copy_tensor] tensor '") + dst->name +
                                                         "' is not in this buffer of " + drb->device->info().name);
  }
  if (!same_layout(src, dst)) return unimplemented("'" + std::string(src->name) + "' and its copy are not dense and alike");
  const uint64_t n = common::tensor_span(src);
  if (soff + n > srb->raw.size || doff + n > drb->raw.size) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[mpi.copy_tensor] " + std::to_string(n) + " bytes of '" +
                                                         src->name + "' do not fit its buffer or the destination's");
  }
  // Ordered after the writes the two devices' streams hold queued
  // (CAP_ORDERED_COPY): they go first, posted; the runs are posted already.
  if (loom_status_t* st = srb->device->post_queued_writes()) return st;
  if (drb->device != srb->device) {
    if (loom_status_t* st = drb->device->post_queued_writes()) return st;
  }
  const wire::WireTensor ws = placed(src, srb);
  const wire::WireTensor wd = placed(dst, drb);
  for (uint64_t done = 0; done < n;) {
    const uint64_t len = std::min<uint64_t>(wire::kWireMaxCopyBytes, n - done);
    if (loom_status_t* st = post_chunk(srb, ws, drb, wd, done, len)) return st;
    done += len;
  }
  return nullptr;
}

}  // namespace loom::mpi
