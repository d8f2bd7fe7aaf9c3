// The null plugin's entry: the one extern "C" symbol and the plugin table.
// init exposes LOOM_NULL_DEVICES=N test devices "null0".."null<N-1>", else
// answers UNAVAILABLE (which is how a real backend reports absent hardware).
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/glue.h"
#include "common/plugin_entry.h"
#include "device.h"
#include "loom/plugin.h"

namespace loom::null {
namespace {

using loom::common::guarded;
using loom::common::make_status;

constexpr long kMaxDevices = 64;
constexpr const char* kUuidTag = "loomnull";

// What init returns as the plugin context; owns the devices.
struct PluginContext {
  std::vector<std::unique_ptr<Device>> devices;
};

loom_status_t* plugin_init(void** out_context) {
  return guarded("null.init", [&]() -> loom_status_t* {
    const char* env = std::getenv("LOOM_NULL_DEVICES");
    const std::string hint = "no null devices (set LOOM_NULL_DEVICES=N to expose N test devices)";
    if (!env || !*env) return make_status(LOOM_STATUS_UNAVAILABLE, hint);
    char* end = nullptr;
    errno = 0;
    long n = std::strtol(env, &end, 10);
    if (errno != 0 || *end != '\0' || n <= 0) {
      return make_status(LOOM_STATUS_UNAVAILABLE,
                         std::string("LOOM_NULL_DEVICES='") + env + "' is not a positive integer: " + hint);
    }
    if (n > kMaxDevices) n = kMaxDevices;
    auto ctx = std::make_unique<PluginContext>();
    for (long i = 0; i < n; ++i) {
      ctx->devices.push_back(std::make_unique<Device>(make_device_config("null", static_cast<size_t>(i), kUuidTag)));
    }
    loom::common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "null", std::to_string(n) + " null device(s)");
    *out_context = ctx.release();
    return nullptr;
  });
}

void plugin_shutdown(void* context) {
  try {
    delete static_cast<PluginContext*>(context);
  } catch (...) {
    // Destructors here do not throw; nothing may cross the boundary anyway.
  }
}

size_t plugin_device_count(void* context) { return static_cast<PluginContext*>(context)->devices.size(); }

loom_device_t* plugin_device_get(void* context, size_t index) {
  auto* ctx = static_cast<PluginContext*>(context);
  return index < ctx->devices.size() ? ctx->devices[index]->raw() : nullptr;
}

const loom_plugin_t kPlugin = {
    sizeof(loom_plugin_t),
    LOOM_ABI_VERSION,
    "null",  // must equal the <plugin> of libloom-null.so
    "",      // a single build: no variant
    "0.1.0",
    nullptr,  // score: runs anywhere (1)
    plugin_init,
    plugin_shutdown,
    plugin_device_count,
    plugin_device_get,
    nullptr,  // get_extension: no plugin-level extensions
};

}  // namespace
}  // namespace loom::null

LOOM_PLUGIN_DEFINE(&loom::null::kPlugin)
