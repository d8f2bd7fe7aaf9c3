#include "loom/registry/device_spec.hpp"

#include <algorithm>
#include <cstdlib>

namespace loom::registry {
namespace {

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return std::string();
  const size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

DeviceSpec DeviceSpec::parse(std::string_view text_in) {
  DeviceSpec spec;
  spec.text = trim(text_in);
  if (spec.text.empty() || spec.text == "auto" || spec.text == "gpu-first" || spec.text == "cpu-only") {
    spec.policy = spec.text.empty() ? "auto" : spec.text;
    return spec;
  }
  size_t pos = 0;
  while (pos <= spec.text.size()) {
    size_t comma = spec.text.find(',', pos);
    if (comma == std::string::npos) comma = spec.text.size();
    std::string name = trim(std::string_view(spec.text).substr(pos, comma - pos));
    pos = comma + 1;
    if (name.empty()) continue;
    if (std::find(spec.names.begin(), spec.names.end(), name) == spec.names.end()) {
      spec.names.push_back(std::move(name));
    } else if (std::find(spec.repeated.begin(), spec.repeated.end(), name) == spec.repeated.end()) {
      spec.repeated.push_back(std::move(name));
    }
  }
  return spec;
}

DeviceSpec DeviceSpec::resolve(std::string_view given, std::string_view given_label) {
  if (!trim(given).empty()) {
    DeviceSpec spec = parse(given);
    spec.origin = std::string(given_label) + " " + std::string(given);
    return spec;
  }
  if (const char* env = std::getenv("LOOM_DEVICES"); env != nullptr && !trim(env).empty()) {
    DeviceSpec spec = parse(env);
    spec.origin = std::string("LOOM_DEVICES=") + env;
    return spec;
  }
  DeviceSpec spec = parse("auto");
  spec.origin = "the default device policy auto";
  return spec;
}

}  // namespace loom::registry
