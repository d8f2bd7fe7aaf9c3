#include "device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/glue.h"
#include "common/op_info.h"
#include "coopmat_check.h"
#include "event.h"
#include "pipeline_cache.h"
#include "stream.h"
#include "switches.h"

namespace loom::vulkan {

namespace {

using common::guarded;
using common::make_status;

constexpr uint64_t kStagingBytes = uint64_t{16} << 20;

// ------------------------------------------------------------ device table

loom_status_t* device_get_props(loom_device_t* d, loom_device_props_t* out) {
  return guarded("vulkan.get_props", [&] { return Device::from(d)->get_props(out); });
}
loom_buffer_type_t* device_buffer_type(loom_device_t* d) {
  return Device::from(d)->buffer_type().handle();
}
bool device_supports_op(loom_device_t* d, const loom_tensor_t* node) {
  const Device* dev = Device::from(d);
  if (node != nullptr && dev->op_disabled(node->op)) return false;
  return unsupported_reason(dev->caps(), node) == nullptr;
}
loom_buffer_type_t* device_host_buffer_type(loom_device_t* d) {
  return Device::from(d)->host_buffer_type().handle();
}
bool device_supports_buffer_type(loom_device_t* d, const loom_buffer_type_t* t) {
  return Device::from(d)->supports_buffer_type(t);
}
loom_status_t* device_buffer_from_host_ptr(loom_device_t* d, void* ptr, size_t size,
                                           loom_buffer_t** out) {
  return guarded("vulkan.buffer_from_host_ptr",
                 [&] { return Device::from(d)->host_buffer_type().import(ptr, size, out); });
}
loom_status_t* device_stream_create(loom_device_t* d, loom_stream_t** out) {
  return guarded("vulkan.stream_create", [&]() -> loom_status_t* {
    if (out == nullptr)
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[vulkan.stream_create] out_stream is null");
    return Stream::create(Device::from(d), out);
  });
}

double cost_op_time_us(loom_device_t* d, const loom_tensor_t* node) {
  const Device* dev = Device::from(d);
  if (node != nullptr && dev->op_disabled(node->op)) return -1.0;
  return op_time_us(dev->caps(), node);
}

const loom_ext_cost_t kCostExt = {sizeof(loom_ext_cost_t), cost_op_time_us};

size_t details_get(loom_device_t* d, char* out, size_t cap) {
  try {
    const std::string text = Device::from(d)->details();
    if (cap > 0 && out != nullptr) {
      const size_t n = std::min(cap - 1, text.size());
      std::memcpy(out, text.data(), n);
      out[n] = '\0';
    }
    return text.size();
  } catch (...) {
    if (cap > 0 && out != nullptr) out[0] = '\0';
    return 0;
  }
}

const loom_ext_details_t kDetailsExt = {sizeof(loom_ext_details_t), details_get};

const void* device_get_extension(loom_device_t*, const char* id, uint32_t version) {
  if (id == nullptr) return nullptr;
  if (std::strcmp(id, LOOM_EXT_COST) == 0 && version == LOOM_EXT_COST_VERSION) return &kCostExt;
  if (std::strcmp(id, LOOM_EXT_DETAILS) == 0 && version == LOOM_EXT_DETAILS_VERSION) return &kDetailsExt;
  return nullptr;
}

loom_status_t* device_event_create(loom_device_t* d, loom_event_t** out) {
  return guarded("vulkan.event_create", [&]() -> loom_status_t* {
    if (out == nullptr)
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[vulkan.event_create] out_event is null");
    Device* dev = Device::from(d);
    if (!dev->async()) {
      return make_status(LOOM_STATUS_UNIMPLEMENTED, "[vulkan.event_create] " + dev->name() +
                                                        ": no timeline semaphores, no events");
    }
    *out = Event::create(dev);
    return nullptr;
  });
}

const loom_device_iface_t kDeviceIface = {
    sizeof(loom_device_iface_t),
    device_get_props,
    device_buffer_type,
    device_host_buffer_type,  // host-visible coherent memory the kernels read
    device_supports_op,
    device_supports_buffer_type,
    device_stream_create,
    device_event_create,   // fails when the device has no timeline semaphore (no CAP_EVENTS)
    device_get_extension,  // loom.cost, loom.details
    device_buffer_from_host_ptr,  // UNIMPLEMENTED without VK_EXT_external_memory_host
};

}  // namespace

loom_status_t* vk_status(const std::string& where, const char* call, VkResult r) {
  const bool oom = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
  return make_status(oom ? LOOM_STATUS_RESOURCE_EXHAUSTED : LOOM_STATUS_INTERNAL,
                     "[vulkan." + where + ": " + call + " failed: " + result_name(r));
}

std::unique_ptr<Device> Device::create(const Loader& loader, VkPhysicalDevice phys, size_t index,
                                       std::string* why) {
  std::unique_ptr<Device> d(new Device());
  *why = d->init(loader, phys, index);
  if (!why->empty()) return nullptr;
  d->check_coopmat();
  return d;
}

void Device::coopmat_caps() {
  caps_.coopmat_shader = coopmat_.shader(false);
  caps_.coopmat_id_shader = coopmat_.shader(true);
}

void Device::check_coopmat() {
  // Only where the planner would take the kernel (CPU implementations run
  // every matmul one invocation per output unless told "rows").
  if (caps_.coopmat_shader == nullptr || caps_.rows_kernels) return;
  const std::string why = coopmat_self_check(this);
  if (why.empty()) return;
  coopmat_.turn_off("off (the self-check's 128 x 80 x 24 F16 product " + why + ")");
  coopmat_caps();
  common::plugin_log(LOOM_LOG_LEVEL_WARN, "vulkan", name_ + ": prefill GEMM " + coopmat_.describe());
}

std::string Device::init(const Loader& l, VkPhysicalDevice phys, size_t index) {
  loader_ = &l;
  phys_ = phys;
  raw_ = {sizeof(loom_device_t), &kDeviceIface, this};
  name_ = "vulkan" + std::to_string(index);

  VkPhysicalDeviceIDProperties id{};
  id.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
  VkPhysicalDeviceSubgroupProperties sg{};
  sg.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  sg.pNext = &id;
  VkPhysicalDeviceMaintenance3Properties m3{};
  m3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
  m3.pNext = &sg;
  VkPhysicalDevicePCIBusInfoPropertiesEXT pci{};
  pci.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT;
  const bool has_pci = has_extension(l, phys, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
  if (has_pci) pci.pNext = &m3;
  VkPhysicalDeviceProperties2 p2{};
  p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  p2.pNext = has_pci ? static_cast<void*>(&pci) : static_cast<void*>(&m3);
  l.vkGetPhysicalDeviceProperties2(phys, &p2);
  const VkPhysicalDeviceProperties& props = p2.properties;
  if (props.apiVersion < VK_API_VERSION_1_1) return name_ + ": Vulkan 1.1 needed, device has 1.0";

  std::string kind;
  switch (props.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      type_ = LOOM_DEVICE_TYPE_GPU;
      kind = "discrete GPU";
      break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      type_ = LOOM_DEVICE_TYPE_IGPU;
      caps_.speed = OpCaps::Speed::kIntegrated;
      kind = "integrated GPU";
      break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      type_ = LOOM_DEVICE_TYPE_GPU;
      kind = "virtual GPU";
      break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      // A CPU implementation (lavapipe, SwiftShader): a software stand-in for
      // a GPU, flagged EMULATED so automatic policies never pick it; it runs
      // when named (--device vulkan0).
      type_ = LOOM_DEVICE_TYPE_GPU;
      emulated_ = true;
      caps_.speed = OpCaps::Speed::kEmulated;
      caps_.rows_kernels = !feature_disabled("rows");
      caps_.loop_budget = 60000;  // lavapipe's 65535, with a margin
      kind = "CPU implementation, emulated";
      break;
    default:
      type_ = LOOM_DEVICE_TYPE_ACCEL;
      kind = "other";
      break;
  }
  description_ = std::string(props.deviceName) + " (Vulkan " +
                 std::to_string(VK_API_VERSION_MAJOR(props.apiVersion)) + "." +
                 std::to_string(VK_API_VERSION_MINOR(props.apiVersion)) + ", " + kind + ")";
  std::memcpy(uuid_, id.deviceUUID, 16);
  if (has_pci) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", pci.pciDomain & 0xFFFF, pci.pciBus & 0xFF,
                  pci.pciDevice & 0x1F, pci.pciFunction & 0x7);
    pci_bus_id_ = buf;
  }

  // A queue family with compute.
  uint32_t nq = 0;
  l.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  l.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf.data());
  bool found = false;
  for (uint32_t i = 0; i < nq && !found; ++i) {
    if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && qf[i].queueCount > 0) {
      queue_family_ = i;
      found = true;
    }
  }
  if (!found) return name_ + " (" + props.deviceName + "): no compute queue";

  VkPhysicalDeviceFeatures feats{};
  l.vkGetPhysicalDeviceFeatures(phys, &feats);
  // Timeline semaphores (events, async streams): core in 1.2, else the KHR
  // extension.
  VkPhysicalDeviceTimelineSemaphoreFeatures tl{};
  tl.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES;
  // Integer dot products (int8 GEMV): core in 1.3, else the KHR extension.
  const bool core13 = props.apiVersion >= VK_API_VERSION_1_3 && l.api_version() >= VK_API_VERSION_1_3;
  const bool dot_ext = !core13 && has_extension(l, phys, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  VkPhysicalDeviceShaderIntegerDotProductFeatures dotf{};
  dotf.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
  if (core13 || dot_ext) tl.pNext = &dotf;
  VkPhysicalDeviceFeatures2 f2{};
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f2.pNext = &tl;
  l.vkGetPhysicalDeviceFeatures2(phys, &f2);
  const bool core12 =
      props.apiVersion >= VK_API_VERSION_1_2 && l.api_version() >= VK_API_VERSION_1_2;
  const bool tl_ext = !core12 && has_extension(l, phys, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
  const bool want_timeline = tl.timelineSemaphore && (core12 || tl_ext) && !feature_disabled("async");
  VkPhysicalDeviceFeatures enable{};
  caps_.f64 = feats.shaderFloat64 && !feature_disabled("f64");
  for (int32_t op = 0; op < LOOM_OP_COUNT; ++op) {
    disabled_ops_[op] = feature_disabled((std::string("op:") + common::op_name(op)).c_str());
  }
  enable.shaderFloat64 = caps_.f64 ? VK_TRUE : VK_FALSE;
  caps_.subgroup_add = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                       (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                       (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
                       !feature_disabled("subgroup");
  caps_.subgroup_size = std::max<uint32_t>(1, sg.subgroupSize);
  caps_.int8 = caps_.subgroup_add && !feature_disabled("int8");
  caps_.int8dot = caps_.int8 && dotf.shaderIntegerDotProduct && !feature_disabled("int8dot");
  caps_.split_kv = !feature_disabled("split");
  caps_.tiled_attention = !feature_disabled("tiled");
  caps_.grouped_moe = !feature_disabled("grouped");
  coopmat_.probe(l, phys, sg, core12);
  coopmat_caps();
  for (int i = 0; i < 3; ++i)
    caps_.max_groups[i] = std::min<uint32_t>(props.limits.maxComputeWorkGroupCount[i], 65535);
  // The row shaders run workgroups of up to 256 invocations in x.
  if (props.limits.maxComputeWorkGroupInvocations < 256 || props.limits.maxComputeWorkGroupSize[0] < 256 ||
      props.limits.maxComputeSharedMemorySize < 16384 || props.limits.maxPushConstantsSize < 128) {
    return name_ + " (" + props.deviceName +
           "): compute limits below loom's needs (workgroups of 256 invocations in x, 16 KiB shared)";
  }

  // Memory: device-local type for buffers; host-visible coherent for staging
  // and the host buffer type.
  VkPhysicalDeviceMemoryProperties mp{};
  l.vkGetPhysicalDeviceMemoryProperties(phys, &mp);
  int dev_type = -1;
  int stage_type = -1;
  const VkMemoryPropertyFlags host_flags =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
    if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && dev_type < 0) dev_type = static_cast<int>(i);
    if ((f & host_flags) == host_flags) {
      if (stage_type < 0 || (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT))
        stage_type = static_cast<int>(i);
    }
  }
  if (stage_type < 0) return name_ + ": no host-visible coherent memory type";
  if (dev_type < 0) dev_type = stage_type;
  device_mem_type_ = static_cast<uint32_t>(dev_type);
  staging_mem_type_ = static_cast<uint32_t>(stage_type);
  const VkMemoryPropertyFlags df = mp.memoryTypes[device_mem_type_].propertyFlags;
  // Device memory is the host's own where the device shares it (integrated
  // GPUs, CPU implementations) and the type is host visible: then the
  // device's buffers are host buffers. A discrete GPU's mappable VRAM
  // (resizable BAR) would be slow for the host to read, so it stays a
  // device type there.
  uma_ = (df & host_flags) == host_flags &&
         (type_ == LOOM_DEVICE_TYPE_IGPU || emulated_) && !feature_disabled("map");
  if (uma_ && (df & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) == 0 &&
      (mp.memoryTypes[staging_mem_type_].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) {
    device_mem_type_ = staging_mem_type_;  // the cached view of the same memory reads faster
  }
  device_heap_ = mp.memoryTypes[device_mem_type_].heapIndex;
  heap_size_ = mp.memoryHeaps[device_heap_].size;
  has_budget_ = has_extension(l, phys, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  max_storage_range_ = props.limits.maxStorageBufferRange;
  max_allocation_ = m3.maxMemoryAllocationSize ? m3.maxMemoryAllocationSize : heap_size_;
  // Buffers may exceed maxStorageBufferRange: shaders bind a window of
  // them around each tensor (ops/dispatch.cpp).
  max_buffer_size_ = std::min(max_allocation_, heap_size_) & ~uint64_t{255};
  caps_.max_range = max_storage_range_ & ~uint64_t{255};
  caps_.range_align = std::max<uint64_t>(256, props.limits.minStorageBufferOffsetAlignment);
  // Importing host memory (buffer_from_host_ptr), e.g. a model's mapping.
  const bool has_import = has_extension(l, phys, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME) &&
                          !feature_disabled("import");
  if (has_import) {
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp{};
    hp.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT;
    VkPhysicalDeviceProperties2 hp2{};
    hp2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    hp2.pNext = &hp;
    l.vkGetPhysicalDeviceProperties2(phys, &hp2);
    import_alignment_ = hp.minImportedHostPointerAlignment;
    if ((import_alignment_ & (import_alignment_ - 1)) != 0) import_alignment_ = 0;
  }

  // The logical device with one compute queue.
  const float prio = 1.0f;
  VkDeviceQueueCreateInfo qci{};
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &prio;
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.pEnabledFeatures = &enable;
  VkPhysicalDeviceTimelineSemaphoreFeatures tl_on{};
  tl_on.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES;
  tl_on.timelineSemaphore = VK_TRUE;
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot_on{};
  dot_on.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
  dot_on.shaderIntegerDotProduct = VK_TRUE;
  std::vector<const char*> exts;
  if (want_timeline) {
    dci.pNext = &tl_on;
    if (tl_ext) exts.push_back(VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
  }
  if (caps_.int8dot) {
    dot_on.pNext = const_cast<void*>(dci.pNext);
    dci.pNext = &dot_on;
    if (dot_ext) exts.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  }
  if (import_alignment_ != 0) {
    exts.push_back(VK_KHR_EXTERNAL_MEMORY_EXTENSION_NAME);  // core in 1.1; harmless
    exts.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  }
  coopmat_.enable(&dci.pNext, &exts);
  dci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
  dci.ppEnabledExtensionNames = exts.empty() ? nullptr : exts.data();
  VkResult r = l.vkCreateDevice(phys, &dci, nullptr, &device_);
  if (r != VK_SUCCESS) {
    device_ = VK_NULL_HANDLE;
    return name_ + " (" + props.deviceName + "): vkCreateDevice failed: " + result_name(r);
  }
  const std::string missing = l.load_device(device_, &vk_);
  if (!missing.empty()) return name_ + ": device entry " + missing + " missing";
  vk_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  if (import_alignment_ != 0) {
    vk_.vkGetMemoryHostPointerPropertiesEXT = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
        l.vkGetDeviceProcAddr(device_, "vkGetMemoryHostPointerPropertiesEXT"));
    if (vk_.vkGetMemoryHostPointerPropertiesEXT == nullptr) import_alignment_ = 0;
  }
  if (want_timeline) {
    vk_.vkWaitSemaphores = reinterpret_cast<PFN_vkWaitSemaphores>(
        l.vkGetDeviceProcAddr(device_, core12 ? "vkWaitSemaphores" : "vkWaitSemaphoresKHR"));
    VkSemaphoreTypeCreateInfo sti{};
    sti.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
    sti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    sti.initialValue = 0;
    VkSemaphoreCreateInfo sci{};
    sci.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
    sci.pNext = &sti;
    if (vk_.vkWaitSemaphores == nullptr ||
        vk_.vkCreateSemaphore(device_, &sci, nullptr, &timeline_) != VK_SUCCESS) {
      timeline_ = VK_NULL_HANDLE;  // no events: streams stay synchronous
    }
  }

  VkCommandPoolCreateInfo pci2{};
  pci2.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pci2.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci2.queueFamilyIndex = queue_family_;
  r = vk_.vkCreateCommandPool(device_, &pci2, nullptr, &once_pool_);
  if (r != VK_SUCCESS) return name_ + ": vkCreateCommandPool failed: " + result_name(r);
  VkCommandBufferAllocateInfo cai{};
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = once_pool_;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  r = vk_.vkAllocateCommandBuffers(device_, &cai, &once_cb_);
  if (r != VK_SUCCESS) return name_ + ": vkAllocateCommandBuffers failed: " + result_name(r);
  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  r = vk_.vkCreateFence(device_, &fci, nullptr, &once_fence_);
  if (r != VK_SUCCESS) return name_ + ": vkCreateFence failed: " + result_name(r);

  // Pipelines built by an earlier process come from the cache file.
  std::memcpy(cache_key_.device_uuid, id.deviceUUID, 16);
  std::memcpy(cache_key_.cache_uuid, props.pipelineCacheUUID, 16);
  cache_key_.vendor_id = props.vendorID;
  cache_key_.device_id = props.deviceID;
  cache_key_.driver_version = props.driverVersion;
  cache_path_ = pipeline_cache_path(cache_key_);
  std::vector<uint8_t> cache_data;
  if (cache_path_.empty()) {
    cache_state_ = "off (no cache folder: LOOM_CACHE_DIR, XDG_CACHE_HOME and HOME unset, or secure execution)";
  } else {
    cache_data = read_pipeline_cache(cache_path_, cache_key_, &cache_state_);
  }
  const bool feedback = props.apiVersion >= VK_API_VERSION_1_3 && l.api_version() >= VK_API_VERSION_1_3;
  pipelines_ = std::make_unique<Pipelines>(vk_, device_);
  if (loom_status_t* st = pipelines_->init(name_, cache_data, feedback)) {
    common::host_services()->status_free(st);
    return name_ + ": pipeline layout creation failed";
  }
  buffer_type_ = std::make_unique<BufferType>(this, name_, device_mem_type_, uma_);
  if (!uma_) host_type_ = std::make_unique<BufferType>(this, name_ + "_host", staging_mem_type_, true);
  return "";
}

Device::~Device() {
  if (device_ == VK_NULL_HANDLE) return;
  if (vk_.vkDeviceWaitIdle) vk_.vkDeviceWaitIdle(device_);
  if (pipelines_) save_pipeline_cache();
  pipelines_.reset();
  free_mapped(&staging_);
  if (once_fence_) vk_.vkDestroyFence(device_, once_fence_, nullptr);
  if (timeline_) vk_.vkDestroySemaphore(device_, timeline_, nullptr);
  if (once_pool_) vk_.vkDestroyCommandPool(device_, once_pool_, nullptr);
  if (vk_.vkDestroyDevice) vk_.vkDestroyDevice(device_, nullptr);
}

loom_status_t* Device::get_props(loom_device_props_t* out) {
  if (out == nullptr)
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[vulkan.get_props] out_props is null");
  loom_device_props_t p{};
  p.struct_size = sizeof p;
  p.name = name_.c_str();
  p.description = description_.c_str();
  p.type = type_;
  p.memory_total = heap_size_;
  p.memory_free = 0;  // unknown without VK_EXT_memory_budget
  if (has_budget_) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{};
    budget.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT;
    VkPhysicalDeviceMemoryProperties2 mp2{};
    mp2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2;
    mp2.pNext = &budget;
    loader_->vkGetPhysicalDeviceMemoryProperties2(phys_, &mp2);
    const uint64_t b = budget.heapBudget[device_heap_];
    const uint64_t u = budget.heapUsage[device_heap_];
    p.memory_free = b > u ? b - u : 0;
  }
  std::strncpy(p.pci_bus_id, pci_bus_id_.c_str(), sizeof p.pci_bus_id - 1);
  std::memcpy(p.uuid, uuid_, 16);
  p.has_uuid = true;
  // With a timeline semaphore compute returns once submitted, and events
  // exist. A CPU implementation (lavapipe) is emulated: automatic device
  // policies skip it.
  p.caps = (async() ? (LOOM_DEVICE_CAP_ASYNC | LOOM_DEVICE_CAP_EVENTS) : 0u) |
           (emulated_ ? LOOM_DEVICE_CAP_EMULATED : 0u) | LOOM_DEVICE_CAP_HOST_BUFFER |
           (import_alignment_ != 0 ? LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR : 0u);
  common::write_device_props(p, out);
  return nullptr;
}

void Device::save_pipeline_cache() {
  std::vector<uint8_t> data;
  if (cache_path_.empty() || !pipelines_->take_cache_data(&data)) return;
  const std::string why = write_pipeline_cache(cache_path_, cache_key_, data);
  if (!why.empty()) {
    common::plugin_log(LOOM_LOG_LEVEL_WARN, "vulkan", "[vulkan.pipeline_cache] " + name_ + ": " + why);
  } else {
    common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "vulkan",
                       name_ + ": wrote " + std::to_string(data.size()) + " bytes of pipeline cache to " +
                           cache_path_);
  }
}

std::string Device::details() {
  const Pipelines::Stats st = pipelines_->stats();
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f", st.total_ms);
  std::string s = "pipeline cache: " + (cache_path_.empty() ? std::string("-") : cache_path_) + "\n";
  s += "pipeline cache at start: " + cache_state_ + "\n";
  s += std::string("decode GEMV: ") +
       (caps_.rows_kernels ? "none (every matmul one invocation per output: CPU implementation)"
        : caps_.int8 ? (caps_.int8dot ? "int8 for quantized A (integer dot products)"
                                      : "int8 for quantized A (plain integer arithmetic)")
                     : "float") +
       (caps_.rows_kernels ? "" : caps_.subgroup_add ? "; float A: a row per subgroup" : "; float A: a row per workgroup") +
       ", subgroup size " + std::to_string(caps_.subgroup_size) + "\n";
  s += "prefill GEMM: " + coopmat_.describe() + "\n";
  s += "queue submissions: " + std::to_string(submissions_.load()) + "\n";
  s += "pipelines created: " + std::to_string(st.created) + " in " + ms + " ms";
  s += st.feedback ? " (" + std::to_string(st.driver_hits) + " found in the cache by the driver)\n"
                   : " (the driver gives no creation feedback)\n";
  return s;
}

VkResult Device::submit(VkCommandBuffer cb, VkFence fence, uint64_t* out_value) {
  return submit(&cb, 1, fence, out_value);
}

VkResult Device::submit(const VkCommandBuffer* cbs, uint32_t n, VkFence fence, uint64_t* out_value) {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = n;
  si.pCommandBuffers = cbs;
  VkTimelineSemaphoreSubmitInfo ti{};
  const uint64_t value = timeline_value_ + 1;
  if (timeline_ != VK_NULL_HANDLE) {
    ti.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
    ti.signalSemaphoreValueCount = 1;
    ti.pSignalSemaphoreValues = &value;
    si.pNext = &ti;
    si.signalSemaphoreCount = 1;
    si.pSignalSemaphores = &timeline_;
  }
  const VkResult r = vk_.vkQueueSubmit(queue_, 1, &si, fence);
  if (r == VK_SUCCESS) ++submissions_;
  if (r == VK_SUCCESS && timeline_ != VK_NULL_HANDLE) timeline_value_ = value;
  if (out_value) *out_value = r == VK_SUCCESS && timeline_ != VK_NULL_HANDLE ? value : 0;
  return r;
}

loom_status_t* Device::wait_value(uint64_t value, const char* where) {
  if (value == 0 || timeline_ == VK_NULL_HANDLE) return nullptr;
  VkSemaphoreWaitInfo wi{};
  wi.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
  wi.semaphoreCount = 1;
  wi.pSemaphores = &timeline_;
  wi.pValues = &value;
  const VkResult r = vk_.vkWaitSemaphores(device_, &wi, kWaitNs);
  if (r != VK_SUCCESS) return vk_status(std::string(where) + "] " + name_, "vkWaitSemaphores", r);
  return nullptr;
}

loom_status_t* Device::run_once(const char* where,
                                const std::function<void(VkCommandBuffer)>& fill) {
  std::lock_guard<std::mutex> lock(once_mutex_);
  return run_once_locked(where, fill);
}

loom_status_t* Device::run_once_locked(const char* where,
                                       const std::function<void(VkCommandBuffer)>& fill) {
  const std::string w = std::string(where) + "] " + name_;
  VkResult r = vk_.vkResetCommandBuffer(once_cb_, 0);
  if (r != VK_SUCCESS) return vk_status(w, "vkResetCommandBuffer", r);
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  r = vk_.vkBeginCommandBuffer(once_cb_, &bi);
  if (r != VK_SUCCESS) return vk_status(w, "vkBeginCommandBuffer", r);
  // After every earlier kernel and copy of the queue; results to the host.
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask =
      VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vk_.vkCmdPipelineBarrier(once_cb_,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                               VK_PIPELINE_STAGE_HOST_BIT,
                           VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  fill(once_cb_);
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vk_.vkCmdPipelineBarrier(once_cb_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                           1, &mb, 0, nullptr, 0, nullptr);
  r = vk_.vkEndCommandBuffer(once_cb_);
  if (r != VK_SUCCESS) return vk_status(w, "vkEndCommandBuffer", r);
  r = vk_.vkResetFences(device_, 1, &once_fence_);
  if (r != VK_SUCCESS) return vk_status(w, "vkResetFences", r);
  r = submit(once_cb_, once_fence_, nullptr);
  if (r != VK_SUCCESS) return vk_status(w, "vkQueueSubmit", r);
  r = vk_.vkWaitForFences(device_, 1, &once_fence_, VK_TRUE, kWaitNs);
  if (r != VK_SUCCESS) return vk_status(w, "vkWaitForFences", r);
  return nullptr;
}

loom_status_t* Device::make_mapped(VkDeviceSize size, VkBufferUsageFlags usage,
                                   const std::string& where, MappedBuffer* out) {
  return make_buffer(size, usage, staging_mem_type_, true, where, out);
}

loom_status_t* Device::make_local(VkDeviceSize size, VkBufferUsageFlags usage,
                                  const std::string& where, MappedBuffer* out) {
  return make_buffer(size, usage, device_mem_type_, false, where, out);
}

loom_status_t* Device::make_buffer(VkDeviceSize size, VkBufferUsageFlags usage, uint32_t mem_type,
                                   bool map, const std::string& where, MappedBuffer* out) {
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = size;
  bci.usage = usage;
  MappedBuffer b;
  VkResult r = vk_.vkCreateBuffer(device_, &bci, nullptr, &b.buffer);
  if (r != VK_SUCCESS) return vk_status(where, "vkCreateBuffer", r);
  VkMemoryRequirements req{};
  vk_.vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  VkMemoryAllocateInfo mai{};
  mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = mem_type;
  r = vk_.vkAllocateMemory(device_, &mai, nullptr, &b.memory);
  if (r != VK_SUCCESS) b.memory = VK_NULL_HANDLE;
  void* p = nullptr;
  if (r == VK_SUCCESS) r = vk_.vkBindBufferMemory(device_, b.buffer, b.memory, 0);
  if (r == VK_SUCCESS && map) r = vk_.vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &p);
  if (r != VK_SUCCESS) {
    free_mapped(&b);
    return vk_status(where, "vkAllocateMemory/vkMapMemory", r);
  }
  b.map = static_cast<uint8_t*>(p);
  *out = b;
  return nullptr;
}

void Device::free_mapped(MappedBuffer* b) {
  if (b->map) vk_.vkUnmapMemory(device_, b->memory);
  if (b->buffer) vk_.vkDestroyBuffer(device_, b->buffer, nullptr);
  if (b->memory) vk_.vkFreeMemory(device_, b->memory, nullptr);
  *b = MappedBuffer{};
}

loom_status_t* Device::ensure_staging(const char* where) {
  if (staging_.buffer) return nullptr;
  return make_mapped(kStagingBytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                     std::string(where) + "] " + name_ + " staging", &staging_);
}

loom_status_t* Device::staged_write(VkBuffer dst, uint64_t offset, const void* src, size_t size) {
  std::lock_guard<std::mutex> lock(once_mutex_);
  if (loom_status_t* st = ensure_staging("set_tensor")) return st;
  const auto* in = static_cast<const uint8_t*>(src);
  for (size_t done = 0; done < size;) {
    const size_t n = std::min<size_t>(size - done, kStagingBytes);
    std::memcpy(staging_.map, in + done, n);
    VkBufferCopy region{0, offset + done, n};
    loom_status_t* st = run_once_locked("set_tensor", [&](VkCommandBuffer cb) {
      vk_.vkCmdCopyBuffer(cb, staging_.buffer, dst, 1, &region);
    });
    if (st) return st;
    done += n;
  }
  return nullptr;
}

loom_status_t* Device::staged_read(VkBuffer src, uint64_t offset, void* dst, size_t size) {
  std::lock_guard<std::mutex> lock(once_mutex_);
  if (loom_status_t* st = ensure_staging("get_tensor")) return st;
  auto* out = static_cast<uint8_t*>(dst);
  for (size_t done = 0; done < size;) {
    const size_t n = std::min<size_t>(size - done, kStagingBytes);
    VkBufferCopy region{offset + done, 0, n};
    loom_status_t* st = run_once_locked("get_tensor", [&](VkCommandBuffer cb) {
      vk_.vkCmdCopyBuffer(cb, src, staging_.buffer, 1, &region);
    });
    if (st) return st;
    std::memcpy(out + done, staging_.map, n);
    done += n;
  }
  return nullptr;
}

void Device::register_buffer(Buffer* b) {
  // Ids are unique across the plugin's devices: a device address never
  // maps to a buffer of another device.
  static std::atomic<uint64_t> next_id{1};
  if (b->mapped_ != nullptr) {
    b->base_ = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(b->mapped_));
  } else {
    b->base_ = (uint64_t{1} << 63) | ((next_id.fetch_add(1) & 0x7FFFFFFFu) << 32);
  }
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  buffers_.emplace(b->base_, b);
}

void Device::unregister_buffer(Buffer* b) {
  {
    std::lock_guard<std::mutex> lock(buffers_mutex_);
    auto range = buffers_.equal_range(b->base_);
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second == b) {
        buffers_.erase(it);
        break;
      }
    }
  }
  generation_.fetch_add(1);
}

Buffer* Device::find_buffer(uint64_t addr) {
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  // Buffers never overlap except host buffers wrapping the same memory;
  // any of those serves.
  for (auto it = buffers_.upper_bound(addr); it != buffers_.begin();) {
    --it;
    if (addr - it->first <= it->second->size()) return it->second;
  }
  return nullptr;
}

}  // namespace loom::vulkan
