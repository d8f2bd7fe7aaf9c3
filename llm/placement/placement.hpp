// Where each weight of a llama-family model lives on an ordered device
// list: the one statement of LoadOptions' placement rules (llama_model.hpp).
// LlamaModel::load places its weights by it and fit_model (fit.hpp) sizes
// them by it, so the fit report and the load cannot disagree.
//
// Pure: from the tensor infos of the file, its layer count and the request,
// with no buffer touched. The rules:
//   host device    the first CPU device of the list, else the last device;
//                  holds every weight no other rule moves;
//   n_gpu_layers   the first n layers go to the offload device: the first
//                  non-CPU device of the list, when it is a GPU (discrete or
//                  integrated) or its memory the host cannot read (none for
//                  an accelerator reading host memory, e.g. blas);
//   tensor_split   one proportion per device, in order: device k gets the
//                  layers [round(L c_{k-1} / S), round(L c_k / S)) with c_k
//                  the running sum, S the sum, L the layer count; the output
//                  head and final norm go with the last layer; the split
//                  replaces the n_gpu_layers rule;
//   overrides      a tensor whose name contains a match of a pattern
//                  (ECMAScript, searched as llama.cpp's -ot does: anchor
//                  with ^...$ for the whole name) lives on that pattern's
//                  device, first match winning; a pattern matching no
//                  tensor is logged as a warning.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/runtime/gguf.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/status.hpp"

namespace loom::llm {

struct TensorOverride {
  std::string pattern;
  registry::Device* device = nullptr;
};

struct PlacementRequest {
  std::vector<registry::Device*> devices;  // ordered, non-empty, no nulls
  int64_t n_gpu_layers = 0;                // >= 0 (clamped to the layer count)
  std::vector<double> tensor_split;        // empty: the n_gpu_layers rule
  std::vector<TensorOverride> overrides;
};

// Devices are indices into the request's list.
struct Placement {
  size_t host = 0;
  std::vector<size_t> layer;       // per layer
  size_t output = 0;               // the output head and final norm
  std::vector<size_t> tensor;      // per file tensor, in file order
  std::vector<bool> overridden;    // per file tensor: placed by an override
  std::vector<uint64_t> bytes;     // per device: its tensors' bytes, plus a
                                   // rope_freqs copy on each non-host device with layers
  std::vector<int64_t> layers;     // per device: layers it runs
  // Layers whose device is not the host device.
  int64_t offloaded_layers() const { return static_cast<int64_t>(layer.size()) - layers[host]; }
};

// "blk.<i>." -> i; -1 for tensors outside the layers.
int64_t layer_of(const std::string& name);
// Whether the output head's device holds tensor `name`: the final norm (and
// its bias), the head's bias, the head itself unless tied to the embedding.
bool output_tensor(const std::string& name, bool tied);

// The host device of the list (see above).
size_t host_device(const std::vector<registry::Device*>& devices);
// Whether a device other than the host can take layers: a GPU, or a device
// whose memory is not host memory.
bool can_offload(const registry::Device& device);

// Place `tensors` (a file's, in order) of a model with n_layer layers.
// Errors (INVALID_ARGUMENT, the message prefixed by `who`): a split of the
// wrong length or with a proportion not finite and >= 0 or all 0, an
// override whose pattern is not a regular expression or whose device is
// not in the list.
StatusOr<Placement> place_tensors(const std::string& who, const PlacementRequest& request, int64_t n_layer,
                                  const std::vector<GgufTensorInfo>& tensors);

// The override "pattern=device_name" for the device of that name in
// `devices`; INVALID_ARGUMENT naming the list when none has that name.
StatusOr<TensorOverride> tensor_override(const std::string& pattern, const std::string& device_name,
                                         const std::vector<registry::Device*>& devices);

}  // namespace loom::llm
