// The steps before a text model runs that `loom` and the C API
// (include/loom/loom.h) share, so the two set threads and refuse models the
// same way (device specs are registry::DeviceSpec's, placement and the fit
// LlamaModel::load's): a thread count for a device list and a model load
// that insists on a tokenizer. The generation itself is llm::generate.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/status.hpp"

namespace loom::llm {

// Set n threads on every CPU-like device (CPU, accelerator) of the list.
// A device that cannot take them is an error only when it is the only
// device (a list may mix devices with and without the extension).
Status set_device_threads(const std::vector<registry::Device*>& devices, int n_threads);

// LlamaModel::load, then refuse a file without a tokenizer (text
// generation needs one) with "[llm.load] <path>: the file has no tokenizer".
StatusOr<std::unique_ptr<LlamaModel>> load_text_model(const std::string& path, const LoadOptions& options);

}  // namespace loom::llm
