// The BLAS plugin's exported entry and its plugin table; the device, stream
// and buffer tables are the shared host-device ones (common/host_plugin.h,
// common/host_buffer.h) over this plugin's Device and Stream.
#include "common/glue.h"
#include "common/plugin_entry.h"
#include "common/host_plugin.h"
#include "device.h"
#include "loom/plugin.h"
#include "ops/ops.h"
#include "stream.h"

#ifndef LOOM_BLAS_VERSION
#define LOOM_BLAS_VERSION "0.0.0"
#endif

namespace loom::blas {
namespace {

// What the shared host-device tables (common/host_plugin.h) forward to.
struct Traits {
  static constexpr const char* kName = "blas";
  using Device = blas::Device;
  using Stream = blas::Stream;
  static bool supports_op(const loom_tensor_t* node) { return blas::supports_op(node); }
  static double op_time_us(Device& d, const loom_tensor_t* node) { return blas::op_time_us(node, d.threads()); }
  static const void* extension(Device&, const char*, uint32_t) { return nullptr; }
};
using Tables = common::HostPlugin<Traits>;

const loom_plugin_t kPlugin = {
    sizeof(loom_plugin_t),     LOOM_ABI_VERSION, "blas",          "",
    LOOM_BLAS_VERSION,
    /*score=*/nullptr,         Tables::init,     Tables::shutdown, Tables::device_count,
    Tables::device_get,
    /*get_extension=*/nullptr,
};

}  // namespace
}  // namespace loom::blas

LOOM_PLUGIN_DEFINE(&loom::blas::kPlugin)
