// Selection you can trust (issue: a probe cached under another environment
// hid a ready Vulkan device): a run after a probe made without the loader
// still finds vulkan0, every command sees what `loom devices` shows, and
// when the loader finds no driver the record names the driver manifests and
// why each library did not load.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "vulkan_test_util.hpp"

namespace loom::vktest {
namespace {

namespace fs = std::filesystem;

class VulkanSelection : public ::testing::Test {
 protected:
  void SetUp() override {
    auto reg = load_registry();
    if (reg->device("vulkan0") == nullptr) GTEST_SKIP() << "no vulkan0 here:" << report(*reg);
    if (!std::ifstream(model_path()).good()) GTEST_SKIP() << model_path() << " not found (LOOM_MODELS_DIR)";
    model_ = " -m " + model_path();
    char tmpl[] = "/tmp/loom-vksel-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cache_ = "LOOM_CACHE_DIR=" + dir_ + "/cache LOOM_PLUGIN_PROBE=isolated";
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  std::string dir_, cache_, model_;
};

// The H200 report, word for word: devices under a missing loader, then run
// and bench with the loader back. Each command must find vulkan0.
TEST_F(VulkanSelection, AProbeUnderAnotherEnvironmentNeverHidesTheDevice) {
  ProcResult before = run_loom("devices", true, cache_ + " LOOM_VULKAN_LOADER=/nonexistent/libvulkan.so.1");
  ASSERT_EQ(before.exit_code, 0) << before.out;
  ASSERT_NE(before.out.find("/nonexistent/libvulkan.so.1 not found"), std::string::npos) << before.out;
  ProcResult devices = run_loom("devices", true, cache_);
  ASSERT_NE(devices.out.find("vulkan0"), std::string::npos) << devices.out;
  ProcResult run = run_loom("run --device vulkan0 -n 4" + model_, true, cache_);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("device vulkan0"), std::string::npos) << run.out;
  ProcResult pair = run_loom("run --device vulkan0,cpu -n 4" + model_, true, cache_);
  EXPECT_EQ(pair.exit_code, 0) << pair.out;
  // And back: the loader gone again is seen again (the cached record of
  // the good run does not outlive the variable).
  ProcResult gone = run_loom("run --device vulkan0 -n 4" + model_, true,
                             cache_ + " LOOM_VULKAN_LOADER=/nonexistent/libvulkan.so.1");
  EXPECT_NE(gone.exit_code, 0) << gone.out;
  EXPECT_NE(gone.out.find("device 'vulkan0' not found"), std::string::npos) << gone.out;
  EXPECT_NE(gone.out.find("plugin vulkan unavailable: "), std::string::npos) << gone.out;
  EXPECT_NE(gone.out.find("/nonexistent/libvulkan.so.1 not found"), std::string::npos) << gone.out;
}

// No driver the loader can use: the record lists the manifests and what
// loading each manifest's library said.
TEST_F(VulkanSelection, NoUsableDriverNamesTheManifestsAndWhyEachFailed) {
  const std::string manifest = dir_ + "/broken_icd.json";
  std::ofstream(manifest) << R"({"file_format_version": "1.0.0",
  "ICD": {"library_path": "libloom_no_such_icd.so", "api_version": "1.3.0"}})";
  ProcResult r = run_loom("devices", true, cache_ + " VK_DRIVER_FILES=" + manifest);
  EXPECT_NE(r.out.find("ICD manifests (from VK_DRIVER_FILES): " + manifest +
                       " -> libloom_no_such_icd.so does not load: libloom_no_such_icd.so: cannot open"),
            std::string::npos)
      << r.out;
  ProcResult none = run_loom("devices", true, cache_ + " VK_DRIVER_FILES=" + dir_ + "/none.json");
  EXPECT_NE(none.out.find("no Vulkan driver manifest (ICD .json) in VK_DRIVER_FILES=" + dir_ + "/none.json"),
            std::string::npos)
      << none.out;
}

}  // namespace
}  // namespace loom::vktest
