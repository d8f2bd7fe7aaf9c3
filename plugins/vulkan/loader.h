// The Vulkan loader, opened at run time: the plugin never links libvulkan.
// dlopen("libvulkan.so.1") (or LOOM_VULKAN_LOADER), then every entry point
// comes from vkGetInstanceProcAddr / vkGetDeviceProcAddr (VK_NO_PROTOTYPES).
// One Loader per plugin context; it lives until plugin shutdown.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan_core.h>

#include <string>

namespace loom::vulkan {

// Instance-level entry points (and the global ones used before an instance).
#define LOOM_VK_INSTANCE_FUNCS(X)             \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures)              \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceMemoryProperties2)     \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

// Device-level entry points, one table per VkDevice.
#define LOOM_VK_DEVICE_FUNCS(X)    \
  X(vkDestroyDevice)               \
  X(vkGetDeviceQueue)              \
  X(vkDeviceWaitIdle)              \
  X(vkQueueSubmit)                 \
  X(vkQueueWaitIdle)               \
  X(vkCreateBuffer)                \
  X(vkDestroyBuffer)               \
  X(vkGetBufferMemoryRequirements) \
  X(vkAllocateMemory)              \
  X(vkFreeMemory)                  \
  X(vkBindBufferMemory)            \
  X(vkMapMemory)                   \
  X(vkUnmapMemory)                 \
  X(vkCreateShaderModule)          \
  X(vkDestroyShaderModule)         \
  X(vkCreateDescriptorSetLayout)   \
  X(vkDestroyDescriptorSetLayout)  \
  X(vkCreatePipelineLayout)        \
  X(vkDestroyPipelineLayout)       \
  X(vkCreateComputePipelines)      \
  X(vkCreatePipelineCache)         \
  X(vkDestroyPipelineCache)        \
  X(vkGetPipelineCacheData)        \
  X(vkDestroyPipeline)             \
  X(vkCreateDescriptorPool)        \
  X(vkDestroyDescriptorPool)       \
  X(vkResetDescriptorPool)         \
  X(vkAllocateDescriptorSets)      \
  X(vkUpdateDescriptorSets)        \
  X(vkCreateCommandPool)           \
  X(vkDestroyCommandPool)          \
  X(vkAllocateCommandBuffers)      \
  X(vkFreeCommandBuffers)          \
  X(vkBeginCommandBuffer)          \
  X(vkEndCommandBuffer)            \
  X(vkResetCommandBuffer)          \
  X(vkCmdBindPipeline)             \
  X(vkCmdBindDescriptorSets)       \
  X(vkCmdPushConstants)            \
  X(vkCmdDispatch)                 \
  X(vkCmdPipelineBarrier)          \
  X(vkCmdCopyBuffer)               \
  X(vkCmdFillBuffer)               \
  X(vkCreateSemaphore)             \
  X(vkDestroySemaphore)            \
  X(vkCreateFence)                 \
  X(vkDestroyFence)                \
  X(vkResetFences)                 \
  X(vkWaitForFences)

#define LOOM_VK_DECLARE(name) PFN_##name name = nullptr;

struct DeviceFuncs {
  LOOM_VK_DEVICE_FUNCS(LOOM_VK_DECLARE)
  // Timeline semaphores (Vulkan 1.2 or VK_KHR_timeline_semaphore); NULL
  // when the device has none.
  PFN_vkWaitSemaphores vkWaitSemaphores = nullptr;
  // VK_EXT_external_memory_host; NULL when the device has none.
  PFN_vkGetMemoryHostPointerPropertiesEXT vkGetMemoryHostPointerPropertiesEXT = nullptr;
};

class Loader {
 public:
  Loader() = default;
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Opens the loader library and creates the instance. Returns "" or the
  // reason (e.g. "libvulkan.so.1 not found: <dlerror>"): the plugin then
  // reports UNAVAILABLE with it.
  std::string open();

  VkInstance instance() const { return instance_; }
  uint32_t api_version() const { return api_version_; }
  // An instance-level entry point outside the table above (an extension's),
  // or nullptr.
  PFN_vkVoidFunction instance_proc(const char* name) const {
    return get_instance_proc_ ? get_instance_proc_(instance_, name) : nullptr;
  }
  // The device table of `device`; "" or the name of the missing entry.
  std::string load_device(VkDevice device, DeviceFuncs* out) const;

  LOOM_VK_INSTANCE_FUNCS(LOOM_VK_DECLARE)

 private:
  void* lib_ = nullptr;
  VkInstance instance_ = VK_NULL_HANDLE;
  uint32_t api_version_ = VK_API_VERSION_1_1;  // instance: up to 1.3 as the loader has it
  PFN_vkGetInstanceProcAddr get_instance_proc_ = nullptr;
};

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc.
const char* result_name(VkResult r);

}  // namespace loom::vulkan
