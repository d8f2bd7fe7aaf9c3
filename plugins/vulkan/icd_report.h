// Why the Vulkan loader found no driver, in words a user can act on: the
// ICD manifests (driver JSON files) the loader would read, where it looks
// for them, and for each the driver library it names and whether that
// library loads here (the dlopen error when not). Used only on the failure
// paths of init (vkCreateInstance failed, or no physical device).
#pragma once

#include <string>

namespace loom::vulkan {

// "ICD manifests: <file> -> <library>: loads | <dlerror>; ..." or
// "no ICD manifest in <folders> (install ...)".
std::string icd_report();

}  // namespace loom::vulkan
