// The placement flags of the model commands (run, plan, bench, chat):
//   --split-mode none|layer (-sm)   layer: the layers shared out over the
//                                   --device list (equal shares unless
//                                   --tensor-split says otherwise)
//   --tensor-split a,b,... (-ts)    one proportion per listed device, in
//                                   order (implies --split-mode layer)
//   --override-tensor REGEX=DEVICE (-ot, repeatable)  weights whose whole
//                                   name matches REGEX live on DEVICE
// They fill llm::LoadOptions (tensor_split, overrides); see
// llm/llama_model.hpp for the rules.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "llm/fit.hpp"
#include "llm/llama_model.hpp"
#include "llm/llama_session.hpp"
#include "loom/registry.hpp"

namespace loom::cli {

struct PlacementOptions {
  std::string split_mode;            // "", "none" or "layer"
  std::vector<double> tensor_split;  // --tensor-split
  std::vector<std::pair<std::string, std::string>> overrides;  // (REGEX, DEVICE), in order
};

// Whether `flag` is a placement flag (all take a value).
bool is_placement_flag(const std::string& flag);
// Record flag's value; "" or the error for a bad-arguments exit.
std::string take_placement_flag(const std::string& flag, const std::string& value, PlacementOptions* o);
// Fill lo's tensor_split and overrides for `devices` (the command's device
// list); "" or the error, which names the flag and the devices.
std::string apply_placement(const PlacementOptions& o, const std::vector<registry::Device*>& devices,
                            llm::LoadOptions* lo);

// Size the model at `path` on lo->devices before loading (llm/fit.hpp) and
// complete lo: with no -ngl (n_gpu_layers < 0) and no -ts/-sm layer the
// layers go where they fit in each device's free memory; an explicit
// request is checked. *plan gets the decision (its report() is what
// `run -v`, `run --fit` and `plan` print). "" or the error (with the
// bytes needed and free per device when it does not fit).
std::string fit_placement(const std::string& path, const llm::SessionOptions& so, int64_t n_gpu_layers,
                          llm::LoadOptions* lo, llm::FitPlan* plan);

// fit_placement for `loom plan`: the report on stdout and 0 when fit_only,
// else on stderr and -1 (go on); 1 after printing the error.
int fit_report(const std::string& path, const llm::SessionOptions& so, int64_t n_gpu_layers, bool fit_only,
               llm::LoadOptions* lo);

}  // namespace loom::cli
