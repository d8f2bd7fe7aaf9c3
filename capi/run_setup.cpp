#include "capi/run_setup.hpp"

namespace loom::capi {

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
