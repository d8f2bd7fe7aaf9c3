// The CPU plugin's exported entry and its plugin table; the device, stream
// and buffer tables are the shared host-device ones (common/host_plugin.h,
// common/host_buffer.h) over this plugin's Device and Stream.
#include <cstring>

#include "common/cpu_features.h"
#include "common/glue.h"
#include "common/plugin_entry.h"
#include "common/host_plugin.h"
#include "device.h"
#include "loom/plugin.h"
#include "ops/ops.h"
#include "stream.h"
#include "weight_layout.h"

#ifndef LOOM_CPU_VERSION
#define LOOM_CPU_VERSION "0.0.0"
#endif

namespace loom::cpu {
namespace {

// What the shared host-device tables (common/host_plugin.h) forward to.
struct Traits {
  static constexpr const char* kName = "cpu";
  using Device = cpu::Device;
  using Stream = cpu::Stream;
  static bool supports_op(const loom_tensor_t* node) { return cpu::supports_op(node); }
  static double op_time_us(Device& d, const loom_tensor_t* node) { return cpu::op_time_us(node, d.threads()); }
  static const void* extension(Device&, const char* id, uint32_t version) {
    if (std::strcmp(id, LOOM_EXT_WEIGHT_LAYOUT) == 0 && version == LOOM_EXT_WEIGHT_LAYOUT_VERSION) return &kWeightExt;
    return nullptr;
  }
  // loom.weight_layout: Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / Q4_K /
  // Q5_K / Q6_K matrices go to cpu_weights (weight_layout.h); large float
  // matrices to the plain host type, whose big buffers have huge pages (a
  // copy instead of the file's 4 KiB mapping).
  static loom_buffer_type_t* weight_buffer_type(loom_device_t* d, const loom_tensor_t* t) {
    try {
      if (!weight_layout_enabled()) return nullptr;
      if (weight_layout_unsupported(t) == nullptr) return Device::from(d)->weight_buffer_type().handle();
      if (float_weight_copied(t)) return Device::from(d)->buffer_type().handle();
      return nullptr;
    } catch (...) {
      return nullptr;
    }
  }
  static inline const loom_ext_weight_layout_t kWeightExt = {sizeof(loom_ext_weight_layout_t), weight_buffer_type};
};
using Tables = common::HostPlugin<Traits>;

// Variant score (baseline code only, plugin rule 7): CPUID and the OS's
// register state (XGETBV) say whether this build's instructions can run;
// the best build that can wins (common/cpu_features.h).
#if defined(LOOM_CPU_VARIANT_AVX512)
constexpr const char* kVariant = "avx512";
int32_t score() { return common::cpu_features().runs_avx512() ? 30 : 0; }
#elif defined(LOOM_CPU_VARIANT_AVX2)
constexpr const char* kVariant = "avx2";
int32_t score() { return common::cpu_features().runs_avx2() ? 20 : 0; }
#else
constexpr const char* kVariant = "";
int32_t score() { return 10; }
#endif

const loom_plugin_t kPlugin = {
    sizeof(loom_plugin_t), LOOM_ABI_VERSION, "cpu", kVariant, LOOM_CPU_VERSION,
    score, Tables::init, Tables::shutdown, Tables::device_count, Tables::device_get,
    /*get_extension=*/nullptr,
};

}  // namespace
}  // namespace loom::cpu

LOOM_PLUGIN_DEFINE(&loom::cpu::kPlugin)
