#include "pipeline.h"

#include <chrono>

#include "common/glue.h"
#include "ops/ops.h"
#include "shaders.h"

namespace loom::vulkan {

namespace {

loom_status_t* fail(const std::string& where, const std::string& what, VkResult r) {
  return common::make_status(r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY
                                 ? LOOM_STATUS_RESOURCE_EXHAUSTED
                                 : LOOM_STATUS_INTERNAL,
                             "[vulkan.pipeline] " + where + ": " + what + ": " + result_name(r));
}

}  // namespace

Pipelines::~Pipelines() {
  for (auto& kv : cache_) vk_.vkDestroyPipeline(device_, kv.second, nullptr);
  for (auto& kv : modules_) vk_.vkDestroyShaderModule(device_, kv.second, nullptr);
  if (cache_handle_) vk_.vkDestroyPipelineCache(device_, cache_handle_, nullptr);
  if (layout_) vk_.vkDestroyPipelineLayout(device_, layout_, nullptr);
  if (set_layout_) vk_.vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
}

loom_status_t* Pipelines::init(const std::string& device_name,
                               const std::vector<uint8_t>& cache_data, bool feedback) {
  device_name_ = device_name;
  stats_.feedback = feedback;
  VkDescriptorSetLayoutBinding bindings[kBindings] = {};
  for (uint32_t i = 0; i < kBindings; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo sci{};
  sci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  sci.bindingCount = kBindings;
  sci.pBindings = bindings;
  VkResult r = vk_.vkCreateDescriptorSetLayout(device_, &sci, nullptr, &set_layout_);
  if (r != VK_SUCCESS) return fail(device_name_, "vkCreateDescriptorSetLayout", r);
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
  VkPipelineLayoutCreateInfo lci{};
  lci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  lci.setLayoutCount = 1;
  lci.pSetLayouts = &set_layout_;
  lci.pushConstantRangeCount = 1;
  lci.pPushConstantRanges = &range;
  r = vk_.vkCreatePipelineLayout(device_, &lci, nullptr, &layout_);
  if (r != VK_SUCCESS) return fail(device_name_, "vkCreatePipelineLayout", r);
  VkPipelineCacheCreateInfo cci{};
  cci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  cci.initialDataSize = cache_data.size();
  cci.pInitialData = cache_data.empty() ? nullptr : cache_data.data();
  r = vk_.vkCreatePipelineCache(device_, &cci, nullptr, &cache_handle_);
  if (r != VK_SUCCESS && !cache_data.empty()) {
    // The driver may refuse data it wrote itself (checked but stale):
    // start empty rather than fail.
    cci.initialDataSize = 0;
    cci.pInitialData = nullptr;
    r = vk_.vkCreatePipelineCache(device_, &cci, nullptr, &cache_handle_);
  }
  if (r != VK_SUCCESS) cache_handle_ = VK_NULL_HANDLE;  // pipelines are built without one
  return nullptr;
}

Pipelines::Stats Pipelines::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

bool Pipelines::take_cache_data(std::vector<uint8_t>* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cache_handle_ == VK_NULL_HANDLE || stats_.created == saved_created_) return false;
  size_t n = 0;
  if (vk_.vkGetPipelineCacheData(device_, cache_handle_, &n, nullptr) != VK_SUCCESS) return false;
  out->resize(n);
  // VK_INCOMPLETE cannot happen under the mutex (nothing adds meanwhile).
  if (vk_.vkGetPipelineCacheData(device_, cache_handle_, &n, out->data()) != VK_SUCCESS) return false;
  out->resize(n);
  saved_created_ = stats_.created;
  return true;
}

loom_status_t* Pipelines::get(const char* shader, const uint32_t* spec, uint32_t n_spec,
                              VkPipeline* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto key = std::make_pair(std::string(shader), std::vector<uint32_t>(spec, spec + n_spec));
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    *out = it->second;
    return nullptr;
  }
  VkShaderModule& module = modules_[shader];
  if (module == VK_NULL_HANDLE) {
    const ShaderBlob* blob = find_shader(shader);
    if (blob == nullptr) {
      modules_.erase(shader);
      return common::make_status(LOOM_STATUS_INTERNAL, "[vulkan.pipeline] " + device_name_ +
                                                           ": shader '" + shader +
                                                           "' is not embedded in the plugin");
    }
    VkShaderModuleCreateInfo mci{};
    mci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    mci.codeSize = blob->size;
    mci.pCode = blob->code;
    VkResult r = vk_.vkCreateShaderModule(device_, &mci, nullptr, &module);
    if (r != VK_SUCCESS) {
      modules_.erase(shader);
      return fail(device_name_, std::string("vkCreateShaderModule for shader '") + shader + "'", r);
    }
  }
  if (n_spec > kMaxSpec) {
    return common::make_status(LOOM_STATUS_INTERNAL, "[vulkan.pipeline] " + device_name_ + ": shader '" +
                                                         shader + "' given " + std::to_string(n_spec) +
                                                         " specialization constants, at most " +
                                                         std::to_string(kMaxSpec));
  }
  VkSpecializationMapEntry entries[kMaxSpec];
  for (uint32_t i = 0; i < kMaxSpec; ++i) entries[i] = {i, 4 * i, 4};
  VkSpecializationInfo si{};
  si.mapEntryCount = n_spec;
  si.pMapEntries = entries;
  si.dataSize = 4u * n_spec;
  si.pData = spec;
  VkComputePipelineCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &si;
  ci.layout = layout_;
  VkPipelineCreationFeedback fb{};
  VkPipelineCreationFeedbackCreateInfo fbi{};
  fbi.sType = VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO;
  fbi.pPipelineCreationFeedback = &fb;
  if (stats_.feedback) ci.pNext = &fbi;
  VkPipeline p = VK_NULL_HANDLE;
  const auto t0 = std::chrono::steady_clock::now();
  VkResult r = vk_.vkCreateComputePipelines(device_, cache_handle_, 1, &ci, nullptr, &p);
  stats_.total_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (r != VK_SUCCESS) {
    return fail(device_name_,
                std::string("vkCreateComputePipelines for shader '") + shader + "' (workgroup " +
                    std::to_string(spec[0]) + ")",
                r);
  }
  ++stats_.created;
  if ((fb.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) &&
      (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT)) {
    ++stats_.driver_hits;
  }
  cache_[key] = p;
  *out = p;
  return nullptr;
}

}  // namespace loom::vulkan
