// The Vulkan plugin's entry: the one extern "C" symbol and the plugin table.
// init opens the Vulkan loader at run time (never linked), lists physical
// devices and opens each one with a compute queue as "vulkan<i>" (i: the
// physical device's index). LOOM_VULKAN_DEVICES=0,2 picks devices by index.
// No loader or no usable device: UNAVAILABLE with the reason.
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/glue.h"
#include "common/plugin_entry.h"
#include "device.h"
#include "icd_report.h"
#include "loader.h"
#include "loom/plugin.h"

#ifndef LOOM_VULKAN_VERSION
#define LOOM_VULKAN_VERSION "0.0.0"
#endif

namespace loom::vulkan {
namespace {

using common::guarded;
using common::make_status;

// What init returns as the plugin context. Devices are destroyed before the
// loader (which owns the instance and the library).
struct PluginContext {
  Loader loader;
  std::vector<std::unique_ptr<Device>> devices;
  ~PluginContext() { devices.clear(); }
};

// LOOM_VULKAN_DEVICES as a set of indices; false (and *why) when malformed.
bool selected_indices(std::set<size_t>* out, bool* all, std::string* why) {
  const char* env = std::getenv("LOOM_VULKAN_DEVICES");
  *all = env == nullptr || *env == '\0';
  if (*all) return true;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (*end != '\0' || v < 0) {
      *why = std::string("LOOM_VULKAN_DEVICES='") + env + "': '" + item + "' is not a device index";
      return false;
    }
    out->insert(static_cast<size_t>(v));
  }
  return true;
}

loom_status_t* plugin_init(void** out_context) {
  return guarded("vulkan.init", [&]() -> loom_status_t* {
    if (out_context == nullptr)
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[vulkan.init] out_context is null");
    auto ctx = std::make_unique<PluginContext>();
    const std::string err = ctx->loader.open();
    if (!err.empty()) return make_status(LOOM_STATUS_UNAVAILABLE, err);
    std::set<size_t> pick;
    bool all = true;
    std::string why;
    if (!selected_indices(&pick, &all, &why)) return make_status(LOOM_STATUS_UNAVAILABLE, why);
    uint32_t n = 0;
    VkResult r = ctx->loader.vkEnumeratePhysicalDevices(ctx->loader.instance(), &n, nullptr);
    std::vector<VkPhysicalDevice> phys(n);
    if (r == VK_SUCCESS && n > 0)
      r = ctx->loader.vkEnumeratePhysicalDevices(ctx->loader.instance(), &n, phys.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
      return make_status(LOOM_STATUS_UNAVAILABLE,
                         std::string("vkEnumeratePhysicalDevices failed: ") + result_name(r));
    }
    std::string skipped;
    for (size_t i = 0; i < phys.size(); ++i) {
      if (!all && pick.count(i) == 0) continue;
      std::string reason;
      std::unique_ptr<Device> d = Device::create(ctx->loader, phys[i], i, &reason);
      if (!d) {
        skipped += (skipped.empty() ? "" : "; ") + reason;
        common::plugin_log(LOOM_LOG_LEVEL_INFO, "vulkan", "skipped: " + reason);
        continue;
      }
      ctx->devices.push_back(std::move(d));
    }
    if (ctx->devices.empty()) {
      std::string msg = "no Vulkan device with a compute queue";
      if (phys.empty()) msg += " (the loader lists no physical device; " + icd_report() + ")";
      if (!all)
        msg += " among LOOM_VULKAN_DEVICES=" + std::string(std::getenv("LOOM_VULKAN_DEVICES"));
      if (!skipped.empty()) msg += ": " + skipped;
      return make_status(LOOM_STATUS_UNAVAILABLE, msg);
    }
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

size_t plugin_device_count(void* context) {
  return static_cast<PluginContext*>(context)->devices.size();
}

loom_device_t* plugin_device_get(void* context, size_t index) {
  auto* ctx = static_cast<PluginContext*>(context);
  return index < ctx->devices.size() ? ctx->devices[index]->handle() : nullptr;
}

const loom_plugin_t kPlugin = {
    sizeof(loom_plugin_t),
    LOOM_ABI_VERSION,
    "vulkan",
    "",
    LOOM_VULKAN_VERSION,
    nullptr,  // score: runs anywhere (the loader is probed in init)
    plugin_init,
    plugin_shutdown,
    plugin_device_count,
    plugin_device_get,
    nullptr,
};

}  // namespace
}  // namespace loom::vulkan

LOOM_PLUGIN_DEFINE(&loom::vulkan::kPlugin)
