// The example plugin's entry: the one exported symbol (loom_plugin_query)
// and the plugin table. The only file with extern "C".
#include <memory>

#include "common/glue.h"
#include "common/plugin_entry.h"
#include "device.h"
#include "loom/plugin.h"

namespace example {
namespace {

// What init returns as the plugin context; owns the device.
struct PluginContext {
  Device device;
};

loom_status_t* plugin_init(void** out_context) {
  // A real backend probes its hardware here and answers
  // make_status(LOOM_STATUS_UNAVAILABLE, "why") when it is absent.
  return loom::common::guarded("example.init", [&]() -> loom_status_t* {
    *out_context = new PluginContext();
    loom::common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "example", "example0 ready");
    return nullptr;
  });
}

void plugin_shutdown(void* context) { delete static_cast<PluginContext*>(context); }

size_t plugin_device_count(void*) { return 1; }

loom_device_t* plugin_device_get(void* context, size_t index) {
  return index == 0 ? static_cast<PluginContext*>(context)->device.raw() : nullptr;
}

const loom_plugin_t kPlugin = {
    sizeof(loom_plugin_t),
    LOOM_ABI_VERSION,  // the header this file was built against
    "example",         // must equal the <name> of libloom-example.so
    "",                // a single build: no variant
    "1.0.0",
    nullptr,  // score: runs anywhere
    plugin_init,
    plugin_shutdown,
    plugin_device_count,
    plugin_device_get,
    nullptr,  // get_extension: none
};

}  // namespace
}  // namespace example

LOOM_PLUGIN_DEFINE(&example::kPlugin)
