// The CUDA plugin's entry: the one extern "C" symbol and the plugin table.
// init opens the NVIDIA driver at run time (driver.cpp) before touching the
// statically linked CUDA runtime, so a machine without a driver or GPU gets
// UNAVAILABLE with the reason ("no CUDA driver (libcuda.so.1 not found: ...)",
// "no CUDA devices", "driver supports CUDA X, plugin needs Y"). Then one
// device "cuda<i>" per GPU; LOOM_CUDA_DEVICES=0,2 picks devices by index.
// cuBLAS is opened at run time too; without it MUL_MAT runs on the GEMV
// kernels and the reason is logged.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/glue.h"
#include "common/plugin_entry.h"
#include "cublas.h"
#include "device.h"
#include "driver.h"
#include "loom/plugin.h"

#ifndef LOOM_CUDA_VERSION
#define LOOM_CUDA_VERSION "0.0.0"
#endif

namespace loom::cuda {
namespace {

using common::guarded;
using common::make_status;

struct PluginContext {
  Cublas cublas;
  std::vector<std::unique_ptr<Device>> devices;
};

// LOOM_CUDA_DEVICES as a set of indices; false (and *why) when malformed.
bool selected_indices(std::set<int>* out, bool* all, std::string* why) {
  const char* env = std::getenv("LOOM_CUDA_DEVICES");
  *all = env == nullptr || *env == '\0';
  if (*all) return true;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    int64_t v = 0;
    if (!common::parse_int(item.c_str(), 0, 1023, &v)) {
      *why = std::string("LOOM_CUDA_DEVICES='") + env + "': '" + item + "' is not a device index";
      return false;
    }
    out->insert(static_cast<int>(v));
  }
  return true;
}

// Direct copies between GPUs that can reach each other (NVLink / PCIe
// peer); copies between the others are staged by the driver.
void enable_peer_access(const std::vector<std::unique_ptr<Device>>& devices) {
  for (const auto& a : devices) {
    for (const auto& b : devices) {
      if (a == b) continue;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, a->ordinal(), b->ordinal()) != cudaSuccess || !can) {
        cudaGetLastError();
        continue;
      }
      a->make_current();
      const cudaError_t e = cudaDeviceEnablePeerAccess(b->ordinal(), 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
        common::plugin_log(LOOM_LOG_LEVEL_INFO, "cuda", a->name() + " -> " + b->name() +
                                                             ": no peer access (" + cudaGetErrorString(e) + ")");
      }
      cudaGetLastError();
    }
  }
}

loom_status_t* plugin_init(void** out_context) {
  return guarded("cuda.init", [&]() -> loom_status_t* {
    if (out_context == nullptr) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cuda.init] out_context is null");
    const DriverProbe probe = probe_driver();
    if (!probe.ok) return make_status(LOOM_STATUS_UNAVAILABLE, probe.reason);
    std::set<int> pick;
    bool all = true;
    std::string why;
    if (!selected_indices(&pick, &all, &why)) return make_status(LOOM_STATUS_UNAVAILABLE, why);
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return make_status(LOOM_STATUS_UNAVAILABLE, std::string("no CUDA devices (cudaGetDeviceCount: ") +
                                                      cudaGetErrorString(e) + ", driver " +
                                                      cuda_version_string(probe.driver_version) + ")");
    }
    auto ctx = std::make_unique<PluginContext>();
    const std::string blas_err = ctx->cublas.open();
    if (!blas_err.empty()) {
      common::plugin_log(LOOM_LOG_LEVEL_INFO, "cuda", "no cuBLAS (" + blas_err + "): MUL_MAT runs on the GEMV kernels");
    }
    std::string skipped;
    for (int i = 0; i < n; ++i) {
      if (!all && pick.count(i) == 0) continue;
      std::string reason;
      std::unique_ptr<Device> d = Device::create(i, &ctx->cublas, &reason);
      if (!d) {
        skipped += (skipped.empty() ? "" : "; ") + reason;
        common::plugin_log(LOOM_LOG_LEVEL_INFO, "cuda", "skipped: " + reason);
        continue;
      }
      ctx->devices.push_back(std::move(d));
    }
    if (ctx->devices.empty()) {
      std::string msg = "no usable CUDA device (" + std::to_string(n) + " found";
      if (!all) msg += ", LOOM_CUDA_DEVICES=" + std::string(std::getenv("LOOM_CUDA_DEVICES"));
      msg += ")";
      if (!skipped.empty()) msg += ": " + skipped;
      return make_status(LOOM_STATUS_UNAVAILABLE, msg);
    }
    enable_peer_access(ctx->devices);
    *out_context = ctx.release();
    return nullptr;
  });
}

void plugin_shutdown(void* context) {
  try {
    delete static_cast<PluginContext*>(context);
  } catch (...) {
  }
}

size_t plugin_device_count(void* context) { return static_cast<PluginContext*>(context)->devices.size(); }

loom_device_t* plugin_device_get(void* context, size_t index) {
  auto* ctx = static_cast<PluginContext*>(context);
  return index < ctx->devices.size() ? ctx->devices[index]->handle() : nullptr;
}

const loom_plugin_t kPlugin = {
    sizeof(loom_plugin_t),
    LOOM_ABI_VERSION,
    "cuda",
    "",
    LOOM_CUDA_VERSION,
    nullptr,  // score: runs anywhere (the driver is probed in init)
    plugin_init,
    plugin_shutdown,
    plugin_device_count,
    plugin_device_get,
    nullptr,
};

}  // namespace
}  // namespace loom::cuda

LOOM_PLUGIN_DEFINE(&loom::cuda::kPlugin)
