#include "llm/placement/placement.hpp"

#include <algorithm>
#include <cmath>
#include <regex>

#include "loom/registry/plugin_calls.hpp"
#include "loom/runtime/log.hpp"

namespace loom::llm {
namespace {

bool reads_host(const registry::Device& d) { return registry::buffer_type_is_host(d.buffer_type()); }

std::string names_of(const std::vector<registry::Device*>& devices) {
  std::string s;
  for (const registry::Device* d : devices) s += (s.empty() ? "" : ",") + d->name();
  return s;
}

// The layer -> device map of a tensor split (the rule in placement.hpp).
Status split_layers(const std::string& who, const std::vector<registry::Device*>& devices,
                    const std::vector<double>& split, int64_t n_layer, std::vector<size_t>* layer) {
  if (split.size() != devices.size()) {
    return invalid_argument(who + "tensor split has " + std::to_string(split.size()) + " proportions for " +
                            std::to_string(devices.size()) + " devices (" + names_of(devices) +
                            "); give one per device");
  }
  double sum = 0.0;
  for (double v : split) {
    if (!std::isfinite(v) || v < 0.0) {
      return invalid_argument(who + "tensor split proportion " + std::to_string(v) + " is not a finite number >= 0");
    }
    sum += v;
  }
  if (sum <= 0.0) return invalid_argument(who + "tensor split proportions are all 0");
  double cum = 0.0;
  int64_t begin = 0;
  for (size_t k = 0; k < split.size(); ++k) {
    cum += split[k];
    const auto end = k + 1 == split.size()
                         ? n_layer
                         : static_cast<int64_t>(std::llround(static_cast<double>(n_layer) * cum / sum));
    for (int64_t il = begin; il < end; ++il) (*layer)[static_cast<size_t>(il)] = k;
    begin = std::max(begin, end);
  }
  return Status();
}

}  // namespace

bool output_tensor(const std::string& name, bool tied) {
  return (name == "output.weight" && !tied) || name == "output.bias" || name == "output_norm.weight" ||
         name == "output_norm.bias";
}

int64_t layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return -1;
  int64_t v = 0;
  for (size_t i = 4; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

size_t host_device(const std::vector<registry::Device*>& devices) {
  for (size_t k = 0; k < devices.size(); ++k) {
    if (devices[k]->info().type == LOOM_DEVICE_TYPE_CPU) return k;
  }
  return devices.empty() ? 0 : devices.size() - 1;
}

bool can_offload(const registry::Device& d) {
  const bool gpu = d.info().type == LOOM_DEVICE_TYPE_GPU || d.info().type == LOOM_DEVICE_TYPE_IGPU;
  return gpu || !reads_host(d);
}

StatusOr<Placement> place_tensors(const std::string& who, const PlacementRequest& r, int64_t n_layer,
                                  const std::vector<GgufTensorInfo>& tensors) {
  const std::vector<registry::Device*>& devs = r.devices;
  if (devs.empty()) return invalid_argument(who + "no device given");
  for (registry::Device* d : devs) {
    if (!d) return invalid_argument(who + "null device in the device list");
  }
  n_layer = std::max<int64_t>(n_layer, 0);
  Placement p;
  p.host = host_device(devs);
  p.layer.assign(static_cast<size_t>(n_layer), p.host);
  p.output = p.host;
  if (!r.tensor_split.empty()) {
    LOOM_RETURN_IF_ERROR(split_layers(who, devs, r.tensor_split, n_layer, &p.layer));
    if (n_layer > 0) p.output = p.layer.back();
  } else {
    // The offload device: the first non-CPU device, when it can take layers.
    for (size_t k = 0; k < devs.size(); ++k) {
      if (devs[k]->info().type == LOOM_DEVICE_TYPE_CPU) continue;
      if (can_offload(*devs[k]) && k != p.host) {
        for (int64_t il = 0; il < std::min(r.n_gpu_layers, n_layer); ++il) p.layer[static_cast<size_t>(il)] = k;
      }
      break;
    }
  }
  std::vector<std::pair<std::regex, size_t>> overrides;
  for (const TensorOverride& ov : r.overrides) {
    const auto it = std::find(devs.begin(), devs.end(), ov.device);
    if (it == devs.end()) {
      return invalid_argument(who + "tensor override '" + ov.pattern + "' names " +
                              (ov.device ? "device '" + ov.device->name() + "'" : std::string("no device")) +
                              ", which is not in the device list");
    }
    try {
      overrides.emplace_back(std::regex(ov.pattern, std::regex::ECMAScript), static_cast<size_t>(it - devs.begin()));
    } catch (const std::regex_error& e) {
      return invalid_argument(who + "tensor override pattern '" + ov.pattern + "' is not a regular expression: " +
                              e.what());
    }
  }
  const bool tied = std::none_of(tensors.begin(), tensors.end(),
                                 [](const GgufTensorInfo& t) { return t.name == "output.weight"; });
  p.bytes.assign(devs.size(), 0);
  p.layers.assign(devs.size(), 0);
  for (size_t k : p.layer) ++p.layers[k];
  uint64_t rope = 0;
  std::vector<bool> matched(overrides.size(), false);
  for (const GgufTensorInfo& t : tensors) {
    if (t.name == "rope_freqs.weight") rope = t.nbytes;
    size_t k = p.host;
    bool pinned = false;
    for (size_t o = 0; o < overrides.size(); ++o) {
      if (std::regex_search(t.name, overrides[o].first)) {
        k = overrides[o].second;
        pinned = true;
        matched[o] = true;
        break;
      }
    }
    if (!pinned) {
      const int64_t il = layer_of(t.name);
      if (il >= 0 && il < n_layer) {
        k = p.layer[static_cast<size_t>(il)];
      } else if (output_tensor(t.name, tied)) {
        k = p.output;
      }
    }
    p.tensor.push_back(k);
    p.overridden.push_back(pinned);
    p.bytes[k] += t.nbytes;
  }
  // A pattern that moves nothing is most likely a typo, or a flag meant for
  // another model (an expert pattern on a dense one): said, not an error.
  for (size_t o = 0; o < overrides.size(); ++o) {
    if (!matched[o]) {
      LOOM_LOG_WARN("llm", who + "tensor override '" + r.overrides[o].pattern +
                               "' matches no tensor of this model (it was ignored)");
    }
  }
  // Each offloaded layer's RoPE reads a copy of rope_freqs on its device.
  for (size_t k = 0; k < devs.size(); ++k) {
    if (k != p.host && p.layers[k] > 0) p.bytes[k] += rope;
  }
  return p;
}

StatusOr<TensorOverride> tensor_override(const std::string& pattern, const std::string& device_name,
                                         const std::vector<registry::Device*>& devices) {
  for (registry::Device* d : devices) {
    if (d->name() == device_name) return TensorOverride{pattern, d};
  }
  return invalid_argument("tensor override '" + pattern + "=" + device_name + "': device '" + device_name +
                          "' is not in the device list (" + names_of(devices) + ")");
}

}  // namespace loom::llm
