// A device spec as a user writes it — `--device cuda0,cpu`, LOOM_DEVICES,
// the C API's spec string — parsed in one place: a list of device names or
// a policy (auto, gpu-first, cpu-only). Registry::select takes it; the
// names also tell Registry::load which plugins are needed
// (Options::wanted_devices).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loom::registry {

struct DeviceSpec {
  // "auto", "gpu-first" or "cpu-only"; "" when the spec is a list.
  std::string policy;
  // A list's device names in order: trimmed, empty items and repeats
  // dropped. Empty for a policy (and for a list of only commas).
  std::vector<std::string> names;
  // The names the list gave more than once (each once, in order): dropped
  // from `names` but worth a word to the user (`-ts 1,1,1` with
  // `--device cpu,blas,cpu` is for two devices, not three).
  std::vector<std::string> repeated;
  // The spec as written (trimmed), for messages.
  std::string text;
  // Where it came from, for messages: "--device cuda0", "LOOM_DEVICES=x",
  // "the default device policy auto"; "" when parsed from bare text.
  std::string origin;

  bool is_policy() const { return !policy.empty(); }

  // "" (or blanks) is the policy auto; a policy name is that policy;
  // anything else a comma-separated list of names.
  static DeviceSpec parse(std::string_view text);
  // `given` when not empty (origin: given_label + " " + given), else
  // $LOOM_DEVICES when set and not empty, else the policy auto.
  static DeviceSpec resolve(std::string_view given, std::string_view given_label);
};

}  // namespace loom::registry
