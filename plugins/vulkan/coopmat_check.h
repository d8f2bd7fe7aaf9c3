// A first product on the cooperative-matrix GEMM when a device is made
// (Device::create): A F16 [128, 80] x B F32 [128, 24] through the plugin's
// own buffers, stream and planner, against the host's reference with A and
// B rounded to F16. A kernel that fails to build or run, or a result off by
// more than the F16-inputs rule allows, turns the kernel off for that
// device (`loom devices -v` says why): a driver whose cooperative matrices
// misbehave costs speed, never correctness. Runs once per device, before
// the device is shared; not thread-safe.
#pragma once

#include <string>

namespace loom::vulkan {

class Device;

// "" when the product matched, else why not (the kernel is then not used).
// LOOM_VULKAN_COOPMAT_CHECK=fail (tests) reports a failure whatever the
// result, to exercise the fallback.
std::string coopmat_self_check(Device* dev);

}  // namespace loom::vulkan
