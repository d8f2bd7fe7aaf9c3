#include "capi/run_setup.hpp"

#include <cstdlib>

namespace loom::capi {

std::string resolve_device_spec(const std::string& given, const std::string& given_label, std::string* origin) {
  std::string from;
  std::string spec;
  if (!given.empty()) {
    from = given_label + " " + given;
    spec = given;
  } else if (const char* env = std::getenv("LOOM_DEVICES"); env && *env) {
    from = std::string("LOOM_DEVICES=") + env;
    spec = env;
  } else {
    from = "the default device policy auto";
    spec = "auto";
  }
  if (origin) *origin = from;
  return spec;
}

bool is_device_policy(const std::string& spec) {
  return spec.empty() || spec == "auto" || spec == "gpu-first" || spec == "cpu-only";
}

std::vector<std::string> named_devices(const std::string& spec) {
  std::vector<std::string> names;
  if (is_device_policy(spec)) return names;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    if (comma > pos) names.push_back(spec.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return names;
}

StatusOr<std::vector<registry::Device*>> select_devices(const registry::Registry& reg, const std::string& given,
                                                        const std::string& given_label) {
  std::string origin;
  const std::string spec = resolve_device_spec(given, given_label, &origin);
  auto sel = reg.select(spec);
  if (!sel.ok()) return Status(sel.status().code(), origin + ": " + sel.status().message() + " (see 'loom devices')");
  if (sel->empty()) return not_found(origin + " selects no device (see 'loom devices')");
  return sel;
}

Status set_device_threads(const std::vector<registry::Device*>& devices, int n_threads) {
  for (registry::Device* d : devices) {
    if (d->info().type != LOOM_DEVICE_TYPE_CPU && d->info().type != LOOM_DEVICE_TYPE_ACCEL) continue;
    Status st = d->set_threads(n_threads);
    if (!st.ok() && devices.size() == 1) return st;
  }
  return Status();
}

StatusOr<std::unique_ptr<llm::LlamaModel>> load_text_model(const std::string& path, const llm::LoadOptions& options) {
  auto model = llm::LlamaModel::load(path, options);
  if (!model.ok()) return model.status();
  if ((*model)->tokenizer() == nullptr) {
    return invalid_argument("[llm.load] " + path + ": the file has no tokenizer (tokenizer.ggml.model)");
  }
  return model;
}

}  // namespace loom::capi
