#include "coopmat.h"

#include "switches.h"

namespace loom::vulkan {

namespace {

// The shape mul_mat_cm.comp multiplies: 16x16 F16 fragments of A and B, a
// 16x16 f32 accumulator, at subgroup scope.
bool has_nv_shape(const Loader& l, VkPhysicalDevice phys) {
  auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      l.instance_proc("vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (get == nullptr) return false;
  uint32_t n = 0;
  if (get(phys, &n, nullptr) != VK_SUCCESS || n == 0) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> props(n);
  for (VkCooperativeMatrixPropertiesNV& p : props)
    p.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  if (get(phys, &n, props.data()) != VK_SUCCESS) return false;
  for (uint32_t i = 0; i < n; ++i) {
    const VkCooperativeMatrixPropertiesNV& p = props[i];
    if (p.MSize == 16 && p.NSize == 16 && p.KSize == 16 &&
        p.AType == VK_COMPONENT_TYPE_FLOAT16_NV && p.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        p.CType == VK_COMPONENT_TYPE_FLOAT32_NV && p.DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        p.scope == VK_SCOPE_SUBGROUP_NV)
      return true;
  }
  return false;
}

}  // namespace

void Coopmat::probe(const Loader& l, VkPhysicalDevice phys, const VkPhysicalDeviceSubgroupProperties& sg,
                    bool core12) {
  kind_ = Kind::kNone;
  if (feature_disabled("coopmat")) {
    describe_ = "off (LOOM_VULKAN_DISABLE=coopmat)";
    return;
  }
  const bool emulate = feature_emulated("coopmat");
  const bool nv = !emulate && has_extension(l, phys, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  if (!emulate && !nv) {
    describe_ = "none (no VK_NV_cooperative_matrix; VK_KHR_cooperative_matrix is not used yet)";
    return;
  }
  if (!core12) {
    describe_ = "none (cooperative matrices need Vulkan 1.2 here)";
    return;
  }
  VkPhysicalDeviceVulkanMemoryModelFeatures mm{};
  mm.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES;
  VkPhysicalDeviceShaderFloat16Int8Features f16{};
  f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  f16.pNext = &mm;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cm{};
  cm.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  cm.pNext = &f16;
  VkPhysicalDeviceFeatures2 f2{};
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f2.pNext = nv ? static_cast<void*>(&cm) : static_cast<void*>(&f16);
  l.vkGetPhysicalDeviceFeatures2(phys, &f2);
  VkPhysicalDeviceFloatControlsProperties fc{};
  fc.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES;
  VkPhysicalDeviceProperties2 p2{};
  p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  p2.pNext = &fc;
  l.vkGetPhysicalDeviceProperties2(phys, &p2);
  // The kernel stages F16 in shared memory and converts with round to
  // nearest even (RoundingModeRTE for width 16).
  if (!f16.shaderFloat16 || !fc.shaderRoundingModeRTEFloat16) {
    describe_ = "none (cooperative matrices: no shaderFloat16 or no round-to-nearest-even F16 conversions)";
    return;
  }
  if (emulate) {
    kind_ = Kind::kEmulated;
    describe_ = "cooperative matrices emulated on plain arithmetic (LOOM_VULKAN_EMULATE=coopmat)";
    return;
  }
  const bool basic = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                     (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
  if (!cm.cooperativeMatrix || !mm.vulkanMemoryModel || !basic) {
    describe_ = "none (VK_NV_cooperative_matrix without cooperativeMatrix, vulkanMemoryModel or basic "
                "subgroup operations)";
    return;
  }
  if (sg.subgroupSize != 32) {
    describe_ =
        "none (cooperative matrices: subgroups of " + std::to_string(sg.subgroupSize) + ", the kernel needs 32)";
    return;
  }
  if (!has_nv_shape(l, phys)) {
    describe_ = "none (VK_NV_cooperative_matrix without a 16x16x16 F16 x F16 -> F32 subgroup shape)";
    return;
  }
  kind_ = Kind::kNv;
  describe_ = "cooperative matrices (VK_NV_cooperative_matrix, 16x16x16 F16 inputs, f32 sums)";
}

void Coopmat::enable(const void** pnext, std::vector<const char*>* exts) {
  if (kind_ == Kind::kNone) return;
  f16_on_ = {};
  f16_on_.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  f16_on_.shaderFloat16 = VK_TRUE;
  f16_on_.pNext = const_cast<void*>(*pnext);
  *pnext = &f16_on_;
  if (kind_ != Kind::kNv) return;
  mm_on_ = {};
  mm_on_.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES;
  mm_on_.vulkanMemoryModel = VK_TRUE;
  mm_on_.pNext = const_cast<void*>(*pnext);
  cm_on_ = {};
  cm_on_.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  cm_on_.cooperativeMatrix = VK_TRUE;
  cm_on_.pNext = &mm_on_;
  *pnext = &cm_on_;
  exts->push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
}

const char* Coopmat::shader(bool grouped_id) const {
  switch (kind_) {
    case Kind::kNv:
      return grouped_id ? "mul_mat_id_cm_nv" : "mul_mat_cm_nv";
    case Kind::kEmulated:
      return grouped_id ? "mul_mat_id_cm_emu" : "mul_mat_cm_emu";
    case Kind::kNone:
      break;
  }
  return nullptr;
}

}  // namespace loom::vulkan
