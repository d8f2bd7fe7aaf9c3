// The device test_ops (and test_blas) run the conformance cases on: the one
// named by LOOM_TEST_DEVICE (default "cpu"), from a registry loaded once per
// process from LOOM_TEST_PLUGIN_DIR (other environment ignored). With the
// default only the cpu plugin file (LOOM_TEST_CPU_PLUGIN, default
// libloom-cpu.so) is loaded.
#pragma once

#include <string>

#include "loom/registry/registry.hpp"

namespace loom::optest {

std::string test_device_name();
registry::Registry* test_registry();
// nullptr when it did not load.
registry::Device* test_device();
// Why a plugin did not load (candidate records), for messages.
std::string registry_report();
// Whether the device under test is the CPU plugin (the default).
bool testing_reference_device();
// The CPU plugin file the "cpu" run loads: LOOM_TEST_CPU_PLUGIN, default
// libloom-cpu.so (the baseline build; libloom-cpu-avx2.so for the variant).
std::string cpu_plugin_file();
// Whether the plugin that would serve device `name` (its name starts with
// the plugin's: vulkan -> vulkan0) reported its hardware absent
// (UNAVAILABLE): a missing device is then a skip, else (a misspelt name, a
// broken plugin) a failure.
bool serving_plugin_unavailable(const std::string& name);

}  // namespace loom::optest
