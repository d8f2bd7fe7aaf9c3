// The SPIR-V of shaders/*.comp, compiled by glslc at build time and embedded
// (the table is generated: see CMakeLists.txt). Static data, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::vulkan {

struct ShaderBlob {
  const char* name;      // variant name, e.g. "mul_mat_vec_subgroup"
  const uint32_t* code;  // SPIR-V words
  size_t size;           // bytes
};

// The blob named `name`, or nullptr.
const ShaderBlob* find_shader(const char* name);

}  // namespace loom::vulkan
