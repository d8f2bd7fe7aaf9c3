// What a Vulkan physical device offers and what the environment switches
// off or emulates (tests run the fallback paths on a device that has
// everything, and the cooperative-matrix kernel's emulation on lavapipe).
// Reads the environment on each call; thread-safe.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan_core.h>

#include "loader.h"

namespace loom::vulkan {

// LOOM_VULKAN_DISABLE=f64,subgroup,map,import,async,rows,int8,int8dot,split,
// tiled,grouped,coopmat,op:<OP>: pretend a feature is absent, or refuse an op
// (tests make the scheduler split a graph between devices).
bool feature_disabled(const char* feature);

// LOOM_VULKAN_EMULATE=coopmat: run a device feature's kernels in their
// emulated form on plain shader arithmetic (tests on lavapipe, which has no
// cooperative matrices).
bool feature_emulated(const char* feature);

// Whether the physical device lists the device extension `name`.
bool has_extension(const Loader& l, VkPhysicalDevice phys, const char* name);

}  // namespace loom::vulkan
