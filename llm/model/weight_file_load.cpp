#include "llm/model/weight_file_load.hpp"

#include <climits>
#include <cstdlib>

#include "common/checksum64.h"
#include "loom/runtime/log.hpp"

namespace loom::llm {

WeightFileLoad::WeightFileLoad(const GgufFile& file, const registry::Device& device) : file_(file), device_(device) {
  const char* env = std::getenv("LOOM_FILE_LOAD");
  if (env != nullptr && std::string(env) == "0") return;
  if (!file.is_mapped() || !device.has_file_load()) return;
  char abs[PATH_MAX];
  if (realpath(file.name().c_str(), abs) == nullptr) return;
  path_ = abs;
  on_ = true;
}

bool WeightFileLoad::load(Tensor* t, const GgufTensorInfo& info) {
  const auto* p = static_cast<const uint8_t*>(info.data);
  if (on_ && p >= file_.image() && info.nbytes <= file_.image_size() - static_cast<size_t>(p - file_.image())) {
    const uint64_t offset = static_cast<uint64_t>(p - file_.image());
    Status st = device_.set_tensor_from_file(t, path_, offset, info.nbytes, common::checksum64(p, info.nbytes));
    if (st.ok()) {
      ++loaded_;
      loaded_bytes_ += info.nbytes;
      return true;
    }
    on_ = false;
    const std::string msg = "weights for " + device_.name() + " are sent through set_tensor from tensor '" +
                            info.name + "' on: the device did not read them from the file: " + st.message();
    if (st.code() == StatusCode::kUnimplemented) {
      LOOM_LOG_INFO("llm", msg);
    } else {
      LOOM_LOG_WARN("llm", msg);
    }
  }
  ++streamed_;
  streamed_bytes_ += info.nbytes;
  return false;
}

void WeightFileLoad::log_summary() const {
  if (loaded_ == 0 && path_.empty()) return;
  LOOM_LOG_INFO("llm", "weights on " + device_.name() + ": " + std::to_string(loaded_) + " (" +
                           std::to_string(loaded_bytes_) + " B) read by the device from " + path_ + ", " +
                           std::to_string(streamed_) + " (" + std::to_string(streamed_bytes_) + " B) sent through set_tensor");
}

}  // namespace loom::llm
