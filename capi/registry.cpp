// The C API's registry: plugin records, devices, selection.
#include <filesystem>

#include "capi/handles.hpp"

namespace loom::capi {
namespace {

int32_t plugin_state(registry::Fate f) {
  switch (f) {
    case registry::Fate::kReady: return LOOM_PLUGIN_STATE_READY;
    case registry::Fate::kUnavailable: return LOOM_PLUGIN_STATE_UNAVAILABLE;
    case registry::Fate::kFailed: return LOOM_PLUGIN_STATE_FAILED;
    case registry::Fate::kSkipped: return LOOM_PLUGIN_STATE_SKIPPED;
  }
  return LOOM_PLUGIN_STATE_FAILED;
}

loom_plugin_record_t plugin_record(const registry::Candidate& c) {
  loom_plugin_record_t r{};
  r.struct_size = sizeof r;
  r.name = c.plugin.c_str();
  r.variant = c.variant.c_str();
  r.path = c.path.c_str();
  r.origin = c.origin.c_str();
  r.state = plugin_state(c.fate);
  r.reason = c.reason.c_str();
  r.version = c.plugin_version.c_str();
  r.abi_version = c.abi_version;
  r.n_devices = c.device_count;
  return r;
}

StatusOr<registry::Options> registry_options(const loom_registry_options_t* o) {
  registry::Options ro;
  if (o == nullptr) return ro;
  if (o->struct_size < LOOM_STRUCT_END(loom_registry_options_t, n_plugin_paths)) {
    return invalid_argument("[loom_registry_open] options->struct_size " + std::to_string(o->struct_size) +
                            " is too small (call loom_registry_options_init)");
  }
  if (o->n_plugin_paths > 0 && o->plugin_paths == nullptr) {
    return invalid_argument("[loom_registry_open] options->plugin_paths is NULL with n_plugin_paths " +
                            std::to_string(o->n_plugin_paths));
  }
  for (size_t i = 0; i < o->n_plugin_paths; ++i) {
    const char* p = o->plugin_paths[i];
    if (p == nullptr || *p == '\0') {
      return invalid_argument("[loom_registry_open] options->plugin_paths[" + std::to_string(i) + "] is empty");
    }
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(p, ec);
    ro.paths.push_back(ec ? std::string(p) : abs.string());
  }
  if (LOOM_CAPI_HAS_FIELD(o, loom_registry_options_t, devices) && o->devices != nullptr) {
    ro.wanted_devices = registry::DeviceSpec::parse(o->devices).names;
  }
  return ro;
}

}  // namespace
}  // namespace loom::capi

using namespace loom;
using namespace loom::capi;

extern "C" {

void loom_registry_options_init(loom_registry_options_t* options) {
  if (options == nullptr) return;
  *options = loom_registry_options_t{};
  options->struct_size = sizeof *options;
}

loom_status_t* loom_registry_open(const loom_registry_options_t* options, loom_registry_t** out_registry) {
  return guard("loom_registry_open", [&]() -> loom_status_t* {
    if (out_registry == nullptr) return bad_argument("loom_registry_open", "out_registry is NULL");
    auto ro = registry_options(options);
    if (!ro.ok()) return to_c(ro.status());
    auto h = std::make_unique<loom_registry>();
    h->reg = registry::Registry::load(*ro);
    for (const registry::Candidate& c : h->reg->candidates()) h->plugins.push_back(plugin_record(c));
    for (const registry::Device* d : h->reg->devices()) h->devices.push_back(device_record(*d));
    *out_registry = h.release();
    return nullptr;
  });
}

void loom_registry_close(loom_registry_t* registry) {
  guard_value(0, [&] {
    delete registry;
    return 0;
  });
}

size_t loom_registry_plugin_count(const loom_registry_t* registry) {
  return registry ? registry->plugins.size() : 0;
}

const loom_plugin_record_t* loom_registry_plugin(const loom_registry_t* registry, size_t index) {
  if (registry == nullptr || index >= registry->plugins.size()) return nullptr;
  return &registry->plugins[index];
}

size_t loom_registry_device_count(const loom_registry_t* registry) {
  return registry ? registry->devices.size() : 0;
}

const loom_device_info_t* loom_registry_device(const loom_registry_t* registry, size_t index) {
  if (registry == nullptr || index >= registry->devices.size()) return nullptr;
  return &registry->devices[index];
}

size_t loom_registry_warning_count(const loom_registry_t* registry) {
  return registry ? registry->reg->warnings().size() : 0;
}

const char* loom_registry_warning(const loom_registry_t* registry, size_t index) {
  if (registry == nullptr || index >= registry->reg->warnings().size()) return nullptr;
  return registry->reg->warnings()[index].c_str();
}

loom_status_t* loom_devices_select(const loom_registry_t* registry, const char* spec, loom_devices_t** out_devices) {
  return guard("loom_devices_select", [&]() -> loom_status_t* {
    if (registry == nullptr) return bad_argument("loom_devices_select", "registry is NULL");
    if (out_devices == nullptr) return bad_argument("loom_devices_select", "out_devices is NULL");
    auto sel = registry->reg->select(registry::DeviceSpec::resolve(spec ? spec : "", "device spec"));
    if (!sel.ok()) return to_c(sel.status().with_context("loom_devices_select"));
    auto h = std::make_unique<loom_devices>();
    h->reg = registry->reg;
    h->list = std::move(sel).value();
    for (const registry::Device* d : h->list) h->infos.push_back(device_record(*d));
    *out_devices = h.release();
    return nullptr;
  });
}

void loom_devices_free(loom_devices_t* devices) {
  guard_value(0, [&] {
    delete devices;
    return 0;
  });
}

size_t loom_devices_count(const loom_devices_t* devices) { return devices ? devices->list.size() : 0; }

const loom_device_info_t* loom_devices_get(const loom_devices_t* devices, size_t index) {
  if (devices == nullptr || index >= devices->infos.size()) return nullptr;
  return &devices->infos[index];
}

}  // extern "C"
