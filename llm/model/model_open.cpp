#include "llm/model/model_open.hpp"

namespace loom::llm {

Status set_device_threads(const std::vector<registry::Device*>& devices, int n_threads) {
  for (registry::Device* d : devices) {
    if (d->info().type != LOOM_DEVICE_TYPE_CPU && d->info().type != LOOM_DEVICE_TYPE_ACCEL) continue;
    Status st = d->set_threads(n_threads);
    if (!st.ok() && devices.size() == 1) return st;
  }
  return Status();
}

StatusOr<std::unique_ptr<LlamaModel>> load_text_model(const std::string& path, const LoadOptions& options) {
  auto model = LlamaModel::load(path, options);
  if (!model.ok()) return model.status();
  if ((*model)->tokenizer() == nullptr) {
    return invalid_argument("[llm.load] " + path + ": the file has no tokenizer (tokenizer.ggml.model)");
  }
  return model;
}

}  // namespace loom::llm
