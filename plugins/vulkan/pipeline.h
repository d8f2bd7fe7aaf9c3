// Compute pipelines of one device: the one descriptor-set layout every
// shader uses (bindings 0..5: destination, two sources, error words, two
// more sources; ops/ops.h kSlots), the
// pipeline layout (128 bytes of push constants), and a cache of pipelines
// keyed by shader variant and specialization constants. Lives as long as
// its device; get() is thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "loader.h"
#include "loom/plugin.h"

namespace loom::vulkan {

class Pipelines {
 public:
  Pipelines(const DeviceFuncs& vk, VkDevice device) : vk_(vk), device_(device) {}
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  // Creates the layouts; a status naming the failed call otherwise.
  loom_status_t* init(const std::string& device_name);

  // The pipeline of `shader` with spec constants [0, n_spec); built on first
  // use. A status names the shader when module or pipeline creation fails.
  loom_status_t* get(const char* shader, const uint32_t* spec, uint32_t n_spec, VkPipeline* out);

  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  VkPipelineLayout layout() const { return layout_; }

 private:
  const DeviceFuncs& vk_;
  VkDevice device_;
  std::string device_name_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  std::mutex mutex_;
  std::map<std::tuple<std::string, uint32_t, uint32_t, uint32_t>, VkPipeline> cache_;
  std::map<std::string, VkShaderModule> modules_;
};

}  // namespace loom::vulkan
