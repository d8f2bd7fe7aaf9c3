// Registry::select and select_from_env: device name lists and policies.
#include <algorithm>
#include <cstdlib>

#include "loom/log.hpp"
#include "loom/registry.hpp"

namespace loom::registry {
namespace {

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return std::string();
  size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

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

StatusOr<std::vector<Device*>> Registry::select(std::string_view spec_in) const {
  const std::string spec = trim(spec_in);
  const std::vector<Device*>& all = device_ptrs_;
  if (spec.empty() || spec == "auto" || spec == "gpu-first" || spec == "cpu-only") {
    // Emulated devices (a GPU API running on the CPU) only when named.
    std::vector<Device*> eligible;
    for (Device* d : all) {
      if (!(d->info().caps & LOOM_DEVICE_CAP_EMULATED)) eligible.push_back(d);
    }
    std::vector<Device*> out;
    if (spec == "cpu-only") {
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
      return not_found("[registry.select] policy " + (spec.empty() ? std::string("auto") : spec) +
                       ": no devices found (run `loom devices` to see why)");
    }
    // The policies end with the CPU: when its plugin failed, say so rather
    // than run without it.
    if (out.back()->info().type != LOOM_DEVICE_TYPE_CPU) {
      for (const Candidate& c : candidates()) {
        if (c.plugin == "cpu" && c.fate == Fate::kFailed && !c.reason.empty()) {
          return not_found("[registry.select] policy " + (spec.empty() ? std::string("auto") : spec) +
                           ": no CPU device (devices: " + names_of(out) + "); plugin cpu failed: " + c.reason);
        }
      }
    }
    if (out.front()->info().type != LOOM_DEVICE_TYPE_GPU) {
      LOOM_LOG_INFO("registry", "no GPU device; falling back to " + names_of(out));
    }
    return out;
  }

  // An explicit list: every name must exist; order kept, repeats dropped.
  std::vector<Device*> out;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string name = trim(std::string_view(spec).substr(pos, comma - pos));
    pos = comma + 1;
    if (name.empty()) continue;
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
      return not_found("[registry.select] device '" + name + "' not found; devices: " + names_of(all) +
                       " (policies: auto, gpu-first, cpu-only)" + why);
    }
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  if (out.empty()) return not_found("[registry.select] no device named in '" + spec + "'");
  return out;
}

StatusOr<std::vector<Device*>> Registry::select_from_env() const {
  const char* env = std::getenv("LOOM_DEVICES");
  std::string spec = env ? env : "";
  auto r = select(spec.empty() ? "auto" : spec);
  if (!r.ok() && env) {
    const std::string tag = "[registry.select] ";
    std::string m = r.status().message();
    if (m.rfind(tag, 0) == 0) m = m.substr(tag.size());
    return Status(r.status().code(), tag + "LOOM_DEVICES=" + spec + ": " + m);
  }
  return r;
}

}  // namespace loom::registry
