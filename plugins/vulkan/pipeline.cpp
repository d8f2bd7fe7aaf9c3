#include "pipeline.h"

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
  if (layout_) vk_.vkDestroyPipelineLayout(device_, layout_, nullptr);
  if (set_layout_) vk_.vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
}

loom_status_t* Pipelines::init(const std::string& device_name) {
  device_name_ = device_name;
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
  return nullptr;
}

loom_status_t* Pipelines::get(const char* shader, const uint32_t* spec, uint32_t n_spec,
                              VkPipeline* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto key = std::make_tuple(std::string(shader), n_spec, spec[0], n_spec > 1 ? spec[1] : 0u);
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
  VkSpecializationMapEntry entries[2] = {{0, 0, 4}, {1, 4, 4}};
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
  VkPipeline p = VK_NULL_HANDLE;
  VkResult r = vk_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &ci, nullptr, &p);
  if (r != VK_SUCCESS) {
    return fail(device_name_,
                std::string("vkCreateComputePipelines for shader '") + shader + "' (workgroup " +
                    std::to_string(spec[0]) + ")",
                r);
  }
  cache_[key] = p;
  *out = p;
  return nullptr;
}

}  // namespace loom::vulkan
