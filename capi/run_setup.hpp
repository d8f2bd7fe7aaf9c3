// The C++ steps `loom run` and the C API (include/loom/loom.h) share, so the
// two resolve device lists, set threads and refuse models the same way:
// what a device spec means (given, else LOOM_DEVICES, else auto), which
// plugins a spec needs loaded, and a model load that insists on a tokenizer.
// The generation itself is llm::generate for both.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "llm/llama_model.hpp"
#include "loom/registry.hpp"
#include "loom/status.hpp"

namespace loom::capi {

// The device spec a model runs on: `given` when not empty, else
// $LOOM_DEVICES when set and not empty, else "auto" (Registry::select). *origin (may be null)
// names where it came from, for messages: "--device X" is the caller's to
// phrase, so given specs are named by `given_label` + " " + given.
std::string resolve_device_spec(const std::string& given, const std::string& given_label, std::string* origin);

// Whether spec is a policy ("", "auto", "gpu-first", "cpu-only") rather than
// a list of device names.
bool is_device_policy(const std::string& spec);

// The device names a spec lists (none for a policy): what
// registry::Options::wanted_devices takes so that only the plugins serving
// them are loaded.
std::vector<std::string> named_devices(const std::string& spec);

// resolve_device_spec, then Registry::select. Errors name the origin and
// point at 'loom devices': "LOOM_DEVICES=cuda0: [registry.select] ...".
// An empty selection is NOT_FOUND.
StatusOr<std::vector<registry::Device*>> select_devices(const registry::Registry& reg, const std::string& given,
                                                        const std::string& given_label);

// Set n threads on every CPU-like device (CPU, accelerator) of the list.
// A device that cannot take them is an error only when it is the only
// device (a list may mix devices with and without the extension).
Status set_device_threads(const std::vector<registry::Device*>& devices, int n_threads);

// LlamaModel::load, then refuse a file without a tokenizer (text
// generation needs one) with "[llm.load] <path>: the file has no tokenizer".
StatusOr<std::unique_ptr<llm::LlamaModel>> load_text_model(const std::string& path, const llm::LoadOptions& options);

}  // namespace loom::capi
