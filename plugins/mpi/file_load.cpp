#include "file_load.h"

#include <string>

#include "buffer.h"
#include "common/glue.h"
#include "device.h"

namespace loom::mpi {
namespace {

using common::guarded;
using common::make_status;
namespace wire = common::mpi;

// Paths longer than this are refused on both sides (PATH_MAX on Linux).
constexpr size_t kMaxPath = 4096;

loom_status_t* set_tensor_from_file(loom_device_t* d, loom_buffer_t* buffer, loom_tensor_t* t, const char* path,
                                    uint64_t file_offset, uint64_t size, uint64_t checksum64) {
  return guarded("mpi.set_tensor_from_file", [&]() -> loom_status_t* {
    RemoteDevice* dev = RemoteDevice::from(d);
    uint64_t offset = 0;
    RemoteBuffer* rb = t ? remote_buffer_of(t, dev, &offset) : nullptr;
    if (rb == nullptr || &rb->raw != buffer) {
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[mpi.set_tensor_from_file] tensor '" +
                                                           std::string(t ? t->name : "?") + "' is not in a buffer of " +
                                                           dev->info().name);
    }
    const std::string p = path ? path : "";
    if (p.empty() || p.size() > kMaxPath) {
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[mpi.set_tensor_from_file] a path of " +
                                                           std::to_string(p.size()) + " bytes");
    }
    wire::WireTensor w = wire::wire_fields(*t);
    w.buffer = rb->id;
    w.offset = offset;
    wire::Writer m(wire::Kind::kLoadFile, dev->transport().loom_version());
    wire::write_tensor(m, w);
    m.str(p);
    m.u64(file_offset);
    m.u64(size);
    m.u64(checksum64);
    return dev->transport().request(dev->info().rank, dev->info().name, m, nullptr);
  });
}

const loom_ext_file_load_t kFileLoad = {sizeof(loom_ext_file_load_t), set_tensor_from_file};

}  // namespace

const loom_ext_file_load_t* file_load_extension() { return &kFileLoad; }

}  // namespace loom::mpi
