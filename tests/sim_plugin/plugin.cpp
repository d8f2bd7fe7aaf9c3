// The simulated plugin's entry: the one extern "C" symbol and the plugin
// table. LOOM_SIM_DEVICES=N (default 2) devices "sim0".."sim<N-1>";
// LOOM_SIM_OPS_<i>=ADD,MUL_MAT,... limits device i to those ops (default:
// every op it has a kernel for); LOOM_SIM_MEMORY_<i>=BYTES caps device i's
// memory (allocations beyond fail as out of memory); LOOM_SIM_FLOPS_<i>=F
// gives device i a loom.cost hint of F flops per microsecond;
// LOOM_SIM_EMULATED_<i>=1 marks device i LOOM_DEVICE_CAP_EMULATED; LOOM_SIM_HOST_<i>=1 makes device i's memory
// host-readable (a BLAS-like accelerator); LOOM_SIM_ASYNC=1 gives every
// device asynchronous streams (a worker thread each), events and queued
// copies; LOOM_SIM_JITTER_US=N delays each queued work item by 0..N us;
// LOOM_SIM_DELAY_US_<i>=N sleeps N us per node; LOOM_SIM_GBPS_<i>=G makes
// each node take at least its bytes (node_bytes) / G GB/s.
// All are read at init.
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/glue.h"
#include "common/plugin_entry.h"
#include "loom/plugin.h"
#include "sim.h"

namespace loom::sim {
namespace {

using loom::common::guarded;
using loom::common::make_status;

constexpr long kMaxDevices = 16;

struct PluginContext {
  std::vector<std::unique_ptr<Device>> devices;
};

// The op list of device i from LOOM_SIM_OPS_<i>, or an error message.
std::string parse_ops(size_t i, std::vector<bool>* ops) {
  ops->assign(LOOM_OP_COUNT, true);
  const std::string var = "LOOM_SIM_OPS_" + std::to_string(i);
  const char* env = std::getenv(var.c_str());
  if (!env) return "";
  ops->assign(LOOM_OP_COUNT, false);
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    bool found = false;
    for (int32_t op = 0; op < LOOM_OP_COUNT; ++op) {
      if (item == op_name(op)) {
        (*ops)[static_cast<size_t>(op)] = true;
        found = true;
      }
    }
    if (!found) return var + ": unknown op '" + item + "'";
  }
  return "";
}

loom_status_t* plugin_init(void** out_context) {
  return guarded("sim.init", [&]() -> loom_status_t* {
    long n = 2;
    if (const char* env = std::getenv("LOOM_SIM_DEVICES"); env && *env) {
      char* end = nullptr;
      errno = 0;
      n = std::strtol(env, &end, 10);
      if (errno != 0 || *end != '\0' || n <= 0 || n > kMaxDevices) {
        return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                           std::string("[sim.init] LOOM_SIM_DEVICES='") + env +
                               "' is not an integer in [1, " + std::to_string(kMaxDevices) + "]");
      }
    }
    const char* async_env = std::getenv("LOOM_SIM_ASYNC");
    const bool async = async_env && std::string(async_env) == "1";
    const char* copy_env = std::getenv("LOOM_SIM_COPY");
    const bool copy = copy_env && std::string(copy_env) == "1";
    unsigned jitter_us = 0;
    if (const char* j = std::getenv("LOOM_SIM_JITTER_US"); j && *j) {
      char* end = nullptr;
      errno = 0;
      const unsigned long v = std::strtoul(j, &end, 10);
      if (errno != 0 || *end != '\0' || v > 1000000) {
        return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                           std::string("[sim.init] LOOM_SIM_JITTER_US='") + j +
                               "' is not an integer in [0, 1000000]");
      }
      jitter_us = static_cast<unsigned>(v);
    }
    unsigned spin_us = 0;
    if (const char* j = std::getenv("LOOM_SIM_SPIN_US"); j && *j) {
      char* end = nullptr;
      errno = 0;
      const unsigned long v = std::strtoul(j, &end, 10);
      if (errno != 0 || *end != '\0' || v > 100000) {
        return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                           std::string("[sim.init] LOOM_SIM_SPIN_US='") + j + "' is not an integer in [0, 100000]");
      }
      spin_us = static_cast<unsigned>(v);
    }
    auto ctx = std::make_unique<PluginContext>();
    for (long i = 0; i < n; ++i) {
      DeviceConfig c;
      c.name = "sim" + std::to_string(i);
      c.description =
          "loom simulated device " + std::to_string(i) + " (not host-readable, F32 only)";
      const std::string host_var = "LOOM_SIM_HOST_" + std::to_string(i);
      const char* host = std::getenv(host_var.c_str());
      c.host = host && std::string(host) == "1";
      if (c.host)
        c.description = "loom simulated device " + std::to_string(i) + " (host memory, F32 only)";
      const std::string mem_var = "LOOM_SIM_MEMORY_" + std::to_string(i);
      if (const char* mem = std::getenv(mem_var.c_str()); mem && *mem) {
        char* end = nullptr;
        errno = 0;
        const unsigned long long v = std::strtoull(mem, &end, 10);
        if (errno != 0 || *end != '\0' || v == 0) {
          return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                             "[sim.init] " + mem_var + "='" + mem + "' is not a byte count > 0");
        }
        c.memory = static_cast<size_t>(v);
      }
      const std::string emu_var = "LOOM_SIM_EMULATED_" + std::to_string(i);
      const char* emu = std::getenv(emu_var.c_str());
      c.emulated = emu && std::string(emu) == "1";
      const std::string flops_var = "LOOM_SIM_FLOPS_" + std::to_string(i);
      if (const char* f = std::getenv(flops_var.c_str()); f && *f) {
        char* end = nullptr;
        errno = 0;
        c.flops_per_us = std::strtod(f, &end);
        if (errno != 0 || *end != '\0' || !(c.flops_per_us > 0)) {
          return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                             "[sim.init] " + flops_var + "='" + f + "' is not a positive number");
        }
      }
      const std::string delay_var = "LOOM_SIM_DELAY_US_" + std::to_string(i);
      if (const char* dl = std::getenv(delay_var.c_str()); dl && *dl) {
        char* end = nullptr;
        errno = 0;
        const unsigned long v = std::strtoul(dl, &end, 10);
        if (errno != 0 || *end != '\0' || v > 1000000) {
          return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                             "[sim.init] " + delay_var + "='" + dl + "' is not an integer in [0, 1000000]");
        }
        c.delay_us = static_cast<unsigned>(v);
      }
      const std::string gbps_var = "LOOM_SIM_GBPS_" + std::to_string(i);
      if (const char* g = std::getenv(gbps_var.c_str()); g && *g) {
        char* end = nullptr;
        errno = 0;
        c.gbps = std::strtod(g, &end);
        if (errno != 0 || *end != '\0' || !(c.gbps > 0) || c.gbps > 1e6) {
          return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                             "[sim.init] " + gbps_var + "='" + g + "' is not a number in (0, 1e6] (GB/s)");
        }
      }
      c.async = async;
      c.copy = copy;
      c.jitter_us = jitter_us;
      c.spin_us = spin_us;
      std::string err = parse_ops(static_cast<size_t>(i), &c.ops);
      if (!err.empty()) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[sim.init] " + err);
      ctx->devices.push_back(std::make_unique<Device>(std::move(c), static_cast<size_t>(i)));
    }
    *out_context = ctx.release();
    return nullptr;
  });
}

void plugin_shutdown(void* context) {
  delete static_cast<PluginContext*>(context);
  profile_report();
}

size_t plugin_device_count(void* context) {
  return static_cast<PluginContext*>(context)->devices.size();
}

loom_device_t* plugin_device_get(void* context, size_t index) {
  auto* ctx = static_cast<PluginContext*>(context);
  return index < ctx->devices.size() ? ctx->devices[index]->raw() : nullptr;
}

const loom_plugin_t kPlugin = {
    sizeof(loom_plugin_t),
    LOOM_ABI_VERSION,
    "sim",
    "",
    "0.1.0",
    nullptr,
    plugin_init,
    plugin_shutdown,
    plugin_device_count,
    plugin_device_get,
    nullptr,
};

}  // namespace
}  // namespace loom::sim

LOOM_PLUGIN_DEFINE(&loom::sim::kPlugin)
