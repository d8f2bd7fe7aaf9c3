#include "placement_options.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace loom::cli {
namespace {

std::string device_list(const std::vector<registry::Device*>& devices) {
  std::string s;
  for (const registry::Device* d : devices) s += (s.empty() ? "" : ",") + d->name();
  return s;
}

}  // namespace

bool is_placement_flag(const std::string& flag) {
  return flag == "--split-mode" || flag == "-sm" || flag == "--tensor-split" || flag == "-ts" ||
         flag == "--override-tensor" || flag == "-ot";
}

std::string take_placement_flag(const std::string& flag, const std::string& value, PlacementOptions* o) {
  if (flag == "--split-mode" || flag == "-sm") {
    if (value != "none" && value != "layer") return flag + " '" + value + "': expected none or layer";
    o->split_mode = value;
  } else if (flag == "--tensor-split" || flag == "-ts") {
    o->tensor_split.clear();
    size_t start = 0;
    for (;;) {
      const size_t comma = value.find(',', start);
      const std::string part = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      char* end = nullptr;
      const double v = std::strtod(part.c_str(), &end);
      if (part.empty() || end != part.c_str() + part.size() || !std::isfinite(v) || v < 0.0) {
        return flag + " '" + value + "': expected proportions >= 0 separated by commas, e.g. 3,1";
      }
      o->tensor_split.push_back(v);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    double sum = 0.0;
    for (double v : o->tensor_split) sum += v;
    if (sum <= 0.0) return flag + " '" + value + "': the proportions are all 0";
  } else if (flag == "--override-tensor" || flag == "-ot") {
    const size_t eq = value.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) {
      return flag + " '" + value + "': expected REGEX=DEVICE, e.g. 'blk\\..*\\.ffn_.*=cpu'";
    }
    o->overrides.emplace_back(value.substr(0, eq), value.substr(eq + 1));
  }
  return "";
}

std::string apply_placement(const PlacementOptions& o, const std::vector<registry::Device*>& devices,
                            llm::LoadOptions* lo) {
  if (o.split_mode == "none" && !o.tensor_split.empty()) {
    return "--tensor-split needs --split-mode layer (or no --split-mode), not none";
  }
  if (o.split_mode == "layer" || !o.tensor_split.empty()) {
    if (o.tensor_split.empty()) {
      lo->tensor_split.assign(devices.size(), 1.0);
    } else if (o.tensor_split.size() != devices.size()) {
      return "--tensor-split has " + std::to_string(o.tensor_split.size()) + " proportions for " +
             std::to_string(devices.size()) + " devices (" + device_list(devices) + "); give one per device";
    } else {
      lo->tensor_split = o.tensor_split;
    }
  }
  for (const auto& [pattern, name] : o.overrides) {
    registry::Device* dev = nullptr;
    for (registry::Device* d : devices) {
      if (d->name() == name) dev = d;
    }
    if (!dev) {
      return "--override-tensor '" + pattern + "=" + name + "': device '" + name + "' is not in the device list (" +
             device_list(devices) + "; --device picks them)";
    }
    lo->overrides.push_back({pattern, dev});
  }
  return "";
}

std::string fit_placement(const std::string& path, const llm::SessionOptions& so, int64_t n_gpu_layers,
                          llm::LoadOptions* lo, llm::FitPlan* plan) {
  llm::FitRequest r;
  r.devices = lo->devices;
  r.n_gpu_layers = lo->tensor_split.empty() ? n_gpu_layers : 0;
  r.tensor_split = lo->tensor_split;
  r.overrides = lo->overrides;
  r.n_ctx = so.n_ctx;
  r.n_batch = so.n_batch;
  r.kv_type = so.kv_type;
  r.kv_pad = so.kv_pad;
  auto p = llm::fit_model(path, r);
  if (!p.ok()) return p.status().message();
  *plan = std::move(p).value();
  if (lo->tensor_split.empty()) {
    lo->tensor_split = plan->tensor_split;
    lo->n_gpu_layers = plan->n_gpu_layers;
  } else {
    lo->n_gpu_layers = 0;  // the split decides
  }
  return "";
}

int fit_report(const std::string& path, const llm::SessionOptions& so, int64_t n_gpu_layers, bool fit_only,
               llm::LoadOptions* lo) {
  llm::FitPlan plan;
  if (std::string e = fit_placement(path, so, n_gpu_layers, lo, &plan); !e.empty()) {
    std::fprintf(stderr, "loom plan: %s\n", e.c_str());
    return 1;
  }
  std::fputs(plan.report().c_str(), fit_only ? stdout : stderr);
  return fit_only ? 0 : -1;
}

}  // namespace loom::cli
