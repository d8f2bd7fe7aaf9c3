// Compute pipelines of one device: the one descriptor-set layout every
// shader uses (bindings 0..5: destination, two sources, error words, two
// more sources; ops/ops.h kSlots), the
// pipeline layout (128 bytes of push constants), and a cache of pipelines
// keyed by shader variant and specialization constants, built through one
// VkPipelineCache (seeded from the device's cache file, pipeline_cache.h).
// Lives as long as its device; every member function is thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "loader.h"
#include "loom/plugin.h"

namespace loom::vulkan {

class Pipelines {
 public:
  Pipelines(const DeviceFuncs& vk, VkDevice device) : vk_(vk), device_(device) {}
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  // Creates the layouts and the pipeline cache from `cache_data` (a
  // driver's vkGetPipelineCacheData, may be empty); a status naming the
  // failed call otherwise. `feedback`: the device takes
  // VkPipelineCreationFeedbackCreateInfo (Vulkan 1.3), which says whether
  // the driver found a pipeline in the cache.
  loom_status_t* init(const std::string& device_name, const std::vector<uint8_t>& cache_data,
                      bool feedback);

  // Specialization constants a pipeline may take (constant_id 0..7).
  static constexpr uint32_t kMaxSpec = 8;

  // The pipeline of `shader` with spec constants [0, n_spec); built on first
  // use. A status names the shader when module or pipeline creation fails.
  loom_status_t* get(const char* shader, const uint32_t* spec, uint32_t n_spec, VkPipeline* out);

  // What creation cost so far: pipelines made, wall time in them, and how
  // many the driver reported as found in the cache (0 without feedback).
  struct Stats {
    uint32_t created = 0;
    double total_ms = 0;
    uint32_t driver_hits = 0;
    bool feedback = false;
  };
  Stats stats();
  // The driver's cache data when pipelines were made since the last call
  // (true), else false: the caller writes the file only when it changed.
  bool take_cache_data(std::vector<uint8_t>* out);

  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  VkPipelineLayout layout() const { return layout_; }

 private:
  const DeviceFuncs& vk_;
  VkDevice device_;
  std::string device_name_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipelineCache cache_handle_ = VK_NULL_HANDLE;
  std::mutex mutex_;
  Stats stats_;
  uint32_t saved_created_ = 0;  // stats_.created when the data was last taken
  std::map<std::pair<std::string, std::vector<uint32_t>>, VkPipeline> cache_;
  std::map<std::string, VkShaderModule> modules_;
};

}  // namespace loom::vulkan
