#include "options/placement_options.hpp"

#include <cmath>
#include <cstdlib>

namespace loom::cli {

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

PlacementOptions placement_of(const ParsedOptions& parsed) {
  PlacementOptions o;
  for (const auto& [name, value] : parsed.in_order()) {
    if (name == "--split-mode" || name == "--tensor-split" || name == "--override-tensor") {
      (void)take_placement_flag(name, value, &o);  // checked when parsed
    }
  }
  return o;
}

std::string apply_placement(const PlacementOptions& o, const std::vector<registry::Device*>& devices,
                            llm::LoadOptions* lo) {
  if (o.split_mode == "none" && !o.tensor_split.empty()) {
    return "--tensor-split needs --split-mode layer (or no --split-mode), not none";
  }
  if (!o.tensor_split.empty()) {
    lo->tensor_split = o.tensor_split;
  } else if (o.split_mode == "layer") {
    lo->tensor_split.assign(devices.size(), 1.0);
  }
  for (const auto& [pattern, name] : o.overrides) {
    StatusOr<llm::TensorOverride> ov = llm::tensor_override(pattern, name, devices);
    if (!ov.ok()) return ov.status().message();
    lo->overrides.push_back(*ov);
  }
  return "";
}

}  // namespace loom::cli
