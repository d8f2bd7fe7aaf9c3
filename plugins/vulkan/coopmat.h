// Cooperative matrices for the prefill GEMM (shaders/mul_mat_cm.comp):
// whether a physical device runs the kernel, in which form, and the device
// features and extension its creation must enable. Used once per device
// while it is created (device.cpp); not thread-safe by itself.
//
// Both forms need Vulkan 1.2, shaderFloat16 and round-to-nearest-even
// conversions to F16 (shaderRoundingModeRTEFloat16): the kernel stages A
// and B as F16. Forms: VK_NV_cooperative_matrix with a 16x16x16 F16 x F16
// -> F32 shape at subgroup scope, subgroups of 32 and the Vulkan memory
// model (the SPIR-V glslc makes of GL_NV_cooperative_matrix declares it);
// or the multiply-adds emulated on plain arithmetic (LOOM_VULKAN_EMULATE=
// coopmat, tests on lavapipe). LOOM_VULKAN_DISABLE=coopmat: neither.
// VK_KHR_cooperative_matrix (AMD, Intel) needs a glslang with
// GL_KHR_cooperative_matrix (13 or later), which this build's does not
// have: not offered yet.
#pragma once

#include <string>
#include <vector>

#include "loader.h"

namespace loom::vulkan {

class Coopmat {
 public:
  enum class Kind { kNone, kNv, kEmulated };

  // Decides the form for `phys` (sg: its subgroup properties; core12:
  // Vulkan 1.2 on both the device and the instance).
  void probe(const Loader& l, VkPhysicalDevice phys, const VkPhysicalDeviceSubgroupProperties& sg,
             bool core12);

  // Puts the features to enable in front of *pnext (a VkDeviceCreateInfo
  // chain) and the extension into *exts: shaderFloat16 for both forms, the
  // NV extension, its feature and the memory model for kNv; nothing for
  // kNone.
  // The structs live in this object: keep it until vkCreateDevice returns.
  void enable(const void** pnext, std::vector<const char*>* exts);

  // No cooperative matrices after all (the self-check failed); describe()
  // says `why`.
  void turn_off(const std::string& why) {
    kind_ = Kind::kNone;
    describe_ = why;
  }

  // The shader variant (mul_mat_cm_nv, mul_mat_cm_emu; for MUL_MAT_ID's
  // grouped prefill mul_mat_id_cm_nv, mul_mat_id_cm_emu), or nullptr.
  const char* shader(bool grouped_id) const;
  // One line for `loom devices -v`: the form, or why there is none.
  const std::string& describe() const { return describe_; }

 private:
  Kind kind_ = Kind::kNone;
  std::string describe_;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cm_on_{};
  VkPhysicalDeviceShaderFloat16Int8Features f16_on_{};
  VkPhysicalDeviceVulkanMemoryModelFeatures mm_on_{};
};

}  // namespace loom::vulkan
