#include "switches.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace loom::vulkan {

namespace {

bool listed(const char* var, const char* feature) {
  const char* env = std::getenv(var);
  if (env == nullptr) return false;
  const std::string list = std::string(",") + env + ",";
  return list.find(std::string(",") + feature + ",") != std::string::npos;
}

}  // namespace

bool feature_disabled(const char* feature) { return listed("LOOM_VULKAN_DISABLE", feature); }

bool feature_emulated(const char* feature) { return listed("LOOM_VULKAN_EMULATE", feature); }

bool has_extension(const Loader& l, VkPhysicalDevice phys, const char* name) {
  uint32_t n = 0;
  if (l.vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, nullptr) != VK_SUCCESS)
    return false;
  std::vector<VkExtensionProperties> exts(n);
  if (l.vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, exts.data()) != VK_SUCCESS)
    return false;
  for (const VkExtensionProperties& e : exts) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

}  // namespace loom::vulkan
