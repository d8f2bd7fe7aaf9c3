// Registry::select and select_from_env: device name lists and policies
// (parsed by DeviceSpec, registry/device_spec.cpp).
#include <algorithm>
#include <cstdlib>

#include "loom/registry/device_spec.hpp"
#include "loom/runtime/log.hpp"
#include "loom/registry/registry.hpp"

namespace loom::registry {
namespace {

// Policy order: GPUs, integrated GPUs, accelerators, then the CPU.
int type_rank(loom_device_type_t t) {
  switch (t) {
    case LOOM_DEVICE_TYPE_GPU: return 0;
    case LOOM_DEVICE_TYPE_IGPU: return 1;
    case LOOM_DEVICE_TYPE_ACCEL: return 2;
    case LOOM_DEVICE_TYPE_CPU: return 3;
  }
  return 4;
}

std::string names_of(const std::vector<Device*>& devices) {
  if (devices.empty()) return "(none)";
  std::string s;
  for (const Device* d : devices) s += (s.empty() ? "" : ", ") + d->name();
  return s;
}

}  // namespace

StatusOr<std::vector<Device*>> Registry::select(std::string_view spec) const {
  return select(DeviceSpec::parse(spec));
}

StatusOr<std::vector<Device*>> Registry::select(const DeviceSpec& spec) const {
  auto sel = spec.is_policy() ? select_policy(spec.policy) : select_names(spec);
  if (sel.ok() || spec.origin.empty()) return sel;
  return Status(sel.status().code(), spec.origin + ": " + sel.status().message() + " (see 'loom devices')");
}

StatusOr<std::vector<Device*>> Registry::select_policy(const std::string& policy) const {
  const std::vector<Device*>& all = device_ptrs_;
  // Emulated devices (a GPU API running on the CPU) only when named.
  std::vector<Device*> eligible;
  for (Device* d : all) {
    if (!(d->info().caps & LOOM_DEVICE_CAP_EMULATED)) eligible.push_back(d);
  }
  std::vector<Device*> out;
  if (policy == "cpu-only") {
    for (Device* d : eligible) {
      if (d->info().type == LOOM_DEVICE_TYPE_CPU) out.push_back(d);
    }
    if (out.empty()) {
      return not_found("[registry.select] policy cpu-only: no CPU device; devices: " + names_of(all));
    }
    return out;
  }
  out = eligible;
  std::stable_sort(out.begin(), out.end(), [](const Device* a, const Device* b) {
    return type_rank(a->info().type) < type_rank(b->info().type);
  });
  if (out.empty()) {
    return not_found("[registry.select] policy " + policy + ": no devices found (run `loom devices` to see why)");
  }
  // The policies end with the CPU: when its plugin failed, say so rather
  // than run without it.
  if (out.back()->info().type != LOOM_DEVICE_TYPE_CPU) {
    for (const Candidate& c : candidates()) {
      if (c.plugin == "cpu" && c.fate == Fate::kFailed && !c.reason.empty()) {
        return not_found("[registry.select] policy " + policy + ": no CPU device (devices: " + names_of(out) +
                         "); plugin cpu failed: " + c.reason);
      }
    }
  }
  if (out.front()->info().type != LOOM_DEVICE_TYPE_GPU) {
    LOOM_LOG_INFO("registry", "no GPU device; falling back to " + names_of(out));
  }
  return out;
}

StatusOr<std::vector<Device*>> Registry::select_names(const DeviceSpec& spec) const {
  // An explicit list: every name must exist; order kept (repeats were dropped by the parser).
  std::vector<Device*> out;
  for (const std::string& name : spec.names) {
    Device* d = device(name);
    if (!d) {
      // A plugin of that name that did not load says why (e.g. a forced variant).
      std::string why;
      for (const Candidate& c : candidates()) {
        if (c.fate != Fate::kReady && !c.reason.empty() && name.rfind(c.plugin, 0) == 0) {
          why = "; plugin " + c.plugin + " " + fate_name(c.fate) + ": " + c.reason;
          if (c.fate == Fate::kFailed) break;  // the most telling; else look on for one
        }
      }
      return not_found("[registry.select] device '" + name + "' not found; devices: " + names_of(device_ptrs_) +
                       " (policies: auto, gpu-first, cpu-only)" + why);
    }
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  if (out.empty()) return not_found("[registry.select] no device named in '" + spec.text + "'");
  return out;
}

StatusOr<std::vector<Device*>> Registry::select_from_env() const {
  const char* env = std::getenv("LOOM_DEVICES");
  if (env == nullptr) return select(DeviceSpec::parse("auto"));
  return select(DeviceSpec::resolve("", ""));
}

}  // namespace loom::registry
