#include "test_device.hpp"

#include <cstdlib>
#include <sstream>

namespace loom::optest {

registry::Registry* test_registry() {
  // Held through a plain pointer: never torn down from static destructors.
  static registry::Registry* reg = [] {
    // Small test shapes must still take the threaded kernel paths.
    setenv("LOOM_CPU_PARALLEL_MIN_WORK", "0", 1);
    registry::Options opts;
    // Testing the CPU plugin: load just it (no GPU driver start-up per test).
    opts.paths = {testing_reference_device() ? std::string(LOOM_TEST_PLUGIN_DIR) + "/" + cpu_plugin_file()
                                             : std::string(LOOM_TEST_PLUGIN_DIR)};
    // LOOM_TEST_DEVICE_PLUGIN_DIR: the device under test from that folder
    // instead (the emulated cuda plugin of tests/cuda/emu), beside the cpu.
    const char* dir = std::getenv("LOOM_TEST_DEVICE_PLUGIN_DIR");
    if (!testing_reference_device() && dir != nullptr && *dir != '\0') {
      opts.paths = {dir, std::string(LOOM_TEST_PLUGIN_DIR) + "/" + cpu_plugin_file()};
    }
    opts.use_env = false;
    opts.search_library_dir = false;
    opts.search_install_dir = false;
    return registry::Registry::load(opts).release();
  }();
  return reg;
}

std::string test_device_name() {
  const char* env = std::getenv("LOOM_TEST_DEVICE");
  return env != nullptr && *env != '\0' ? env : "cpu";
}

bool testing_reference_device() { return test_device_name() == "cpu"; }

std::string cpu_plugin_file() {
  const char* env = std::getenv("LOOM_TEST_CPU_PLUGIN");
  return env != nullptr && *env != '\0' ? env : "libloom-cpu.so";
}

registry::Device* test_device() { return test_registry() ? test_registry()->device(test_device_name()) : nullptr; }

std::string registry_report() {
  std::ostringstream os;
  for (const registry::Candidate& c : test_registry()->candidates()) {
    os << "\n  " << c.path << ": " << registry::fate_name(c.fate) << " at "
       << registry::stage_name(c.stage) << " " << c.reason;
  }
  return os.str();
}

bool serving_plugin_unavailable(const std::string& name) {
  for (const registry::Candidate& c : test_registry()->candidates()) {
    if (c.fate == registry::Fate::kUnavailable && name.rfind(c.plugin, 0) == 0) return true;
  }
  return false;
}

}  // namespace loom::optest
