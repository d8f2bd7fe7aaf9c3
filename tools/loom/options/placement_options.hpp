// The placement flags of the model commands (run, plan, bench, chat):
//   --split-mode none|layer (-sm)   layer: the layers shared out over the
//                                   --device list (equal shares unless
//                                   --tensor-split says otherwise)
//   --tensor-split a,b,... (-ts)    one proportion per listed device, in
//                                   order (implies --split-mode layer)
//   --override-tensor REGEX=DEVICE (-ot, repeatable)  weights whose whole
//                                   name matches REGEX live on DEVICE
// They fill llm::LoadOptions (tensor_split, overrides): this file only
// parses them; the rules and their checks are llm/placement/placement.hpp's.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "loom/registry/registry.hpp"
#include "options/option_parse.hpp"

namespace loom::cli {

struct PlacementOptions {
  std::string split_mode;            // "", "none" or "layer"
  std::vector<double> tensor_split;  // --tensor-split
  std::vector<std::pair<std::string, std::string>> overrides;  // (REGEX, DEVICE), in order
};

// Record flag's value; "" or the error for a bad-arguments exit (the check
// of the option table's kSplit and kOverride values).
std::string take_placement_flag(const std::string& flag, const std::string& value, PlacementOptions* o);
// The placement flags of parsed options, in the order given.
PlacementOptions placement_of(const ParsedOptions& parsed);
// Fill lo's tensor_split and overrides for `devices` (the command's device
// list): -sm layer without -ts gives equal shares, override devices are
// looked up by name (llm::tensor_override). "" or the error.
std::string apply_placement(const PlacementOptions& o, const std::vector<registry::Device*>& devices,
                            llm::LoadOptions* lo);

}  // namespace loom::cli
