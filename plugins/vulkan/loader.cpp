#include "loader.h"

#include "icd_report.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <set>

namespace loom::vulkan {

namespace {

// Paths of every shared object mapped in the process now.
std::set<std::string> loaded_objects() {
  std::set<std::string> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          static_cast<std::set<std::string>*>(data)->insert(info->dlpi_name);
        }
        return 0;
      },
      &out);
  return out;
}

// Keep every object loaded since `before` mapped for the life of the process
// (RTLD_NODELETE): Vulkan drivers bring LLVM and other libraries that are
// not safe to unload and load again, and leak checkers can then name them.
void pin_new_objects(const std::set<std::string>& before) {
  for (const std::string& path : loaded_objects()) {
    if (before.count(path) != 0) continue;
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(h);
  }
}

}  // namespace

Loader::~Loader() {
  if (instance_ != VK_NULL_HANDLE && vkDestroyInstance) vkDestroyInstance(instance_, nullptr);
  if (lib_) dlclose(lib_);
}

std::string Loader::open() {
  // A loader path loads code: ignored under secure execution (setuid/setgid).
  const char* env = secure_getenv("LOOM_VULKAN_LOADER");
  const std::string file = (env && *env) ? env : "libvulkan.so.1";
  const std::set<std::string> before = loaded_objects();
  lib_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    const char* err = dlerror();
    return file + " not found: " + (err ? err : "dlopen failed");
  }
  get_instance_proc_ =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib_, "vkGetInstanceProcAddr"));
  if (!get_instance_proc_) return file + " has no vkGetInstanceProcAddr";
  auto create =
      reinterpret_cast<PFN_vkCreateInstance>(get_instance_proc_(nullptr, "vkCreateInstance"));
  if (!create) return file + ": vkCreateInstance missing";
  // Vulkan 1.1 is the floor (device UUID, properties2, subgroup facts).
  auto enum_version = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
      get_instance_proc_(nullptr, "vkEnumerateInstanceVersion"));
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (enum_version) enum_version(&loader_version);
  if (loader_version < VK_API_VERSION_1_1) {
    return "Vulkan loader " + file + " supports only Vulkan 1.0 (1.1 needed)";
  }
  // The loader's version up to 1.3: 1.2 for core timeline semaphores, 1.3
  // for core pipeline creation feedback and integer dot products.
  api_version_ = loader_version >= VK_API_VERSION_1_3   ? VK_API_VERSION_1_3
                 : loader_version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2
                                                        : VK_API_VERSION_1_1;

  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "loom";
  app.pEngineName = "loom";
  app.apiVersion = api_version_;
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  VkResult r = create(&ci, nullptr, &instance_);
  if (r != VK_SUCCESS) {
    instance_ = VK_NULL_HANDLE;
    return std::string("vkCreateInstance failed: ") + result_name(r) + "; " + icd_report();
  }
#define LOOM_VK_LOAD_INSTANCE(name)                                          \
  name = reinterpret_cast<PFN_##name>(get_instance_proc_(instance_, #name)); \
  if (!name) return std::string("Vulkan loader ") + file + ": instance entry " #name " missing";
  LOOM_VK_INSTANCE_FUNCS(LOOM_VK_LOAD_INSTANCE)
#undef LOOM_VK_LOAD_INSTANCE
  // Drivers load at instance creation or at the first enumeration.
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance_, &n, nullptr);
  pin_new_objects(before);
  return "";
}

std::string Loader::load_device(VkDevice device, DeviceFuncs* out) const {
#define LOOM_VK_LOAD_DEVICE(name)                                               \
  out->name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name)); \
  if (!out->name) return #name;
  LOOM_VK_DEVICE_FUNCS(LOOM_VK_LOAD_DEVICE)
#undef LOOM_VK_LOAD_DEVICE
  return "";
}

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_INCOMPLETE:
      return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
      return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL:
      return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_INVALID_EXTERNAL_HANDLE:
      return "VK_ERROR_INVALID_EXTERNAL_HANDLE";
    case VK_ERROR_FRAGMENTATION:
      return "VK_ERROR_FRAGMENTATION";
    case VK_ERROR_INVALID_SHADER_NV:
      return "VK_ERROR_INVALID_SHADER_NV";
    default:
      return "VK_ERROR_UNKNOWN";
  }
}

}  // namespace loom::vulkan
