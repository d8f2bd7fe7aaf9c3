// The CUDA plugin on a machine without a GPU: the registry's record for
// libloom-cuda.so is UNAVAILABLE with the reason (no driver here; a fake
// driver library gives the "driver too old" and "no devices" reasons), and
// every other plugin still works. Skipped when the plugin is not built.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "cli/run_loom.hpp"
#include "loom/registry/registry.hpp"
#include "registry/registry_test_util.hpp"

#ifdef LOOM_TEST_HAVE_CUDA_PLUGIN
#include "plugins/cuda/cublas.h"
#endif

namespace loom {
namespace {

using test::ScopedEnv;

std::unique_ptr<registry::Registry> load(registry::ProbeMode mode) {
  registry::Options o;
  o.paths = {LOOM_TEST_PLUGIN_DIR};
  o.use_env = false;
  o.search_library_dir = false;
  o.search_install_dir = false;
  o.probe = mode;
  return registry::Registry::load(o);
}

const registry::Candidate* cuda_candidate(const registry::Registry& reg) {
  for (const registry::Candidate& c : reg.candidates()) {
    if (c.plugin == "cuda") return &c;
  }
  return nullptr;
}

class CudaPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef LOOM_TEST_HAVE_CUDA_PLUGIN
    GTEST_SKIP() << "the cuda plugin is not built (LOOM_PLUGIN_CUDA / no CUDA toolkit)";
#endif
  }
};

// The record `loom devices` shows on this machine: loaded, negotiated,
// probed UNAVAILABLE with the driver reason (isolated probing, as users run).
TEST_F(CudaPlugin, LoadsWithoutGpuAndIsUnavailableWithTheReason) {
  auto reg = load(registry::ProbeMode::kIsolated);
  const registry::Candidate* c = cuda_candidate(*reg);
  ASSERT_NE(c, nullptr) << test::describe(*reg);
  if (c->fate == registry::Fate::kReady) GTEST_SKIP() << "a CUDA device is present here: " << test::describe(*reg);
  EXPECT_EQ(c->fate, registry::Fate::kUnavailable) << test::describe(*reg);
  EXPECT_EQ(c->stage, registry::Stage::kProbed) << test::describe(*reg);
  const bool no_driver = c->reason.find("no CUDA driver (libcuda.so.1 not found: ") != std::string::npos;
  const bool no_device = c->reason.find("no CUDA devices") != std::string::npos;
  EXPECT_TRUE(no_driver || no_device) << c->reason;
  EXPECT_EQ(reg->device("cuda0"), nullptr);
  ASSERT_NE(reg->device("cpu"), nullptr) << test::describe(*reg);
}

// The same record as `loom devices` prints it.
TEST_F(CudaPlugin, LoomDevicesShowsTheRecord) {
  const test::LoomResult r = test::run_loom("devices");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const size_t at = r.out.find("libloom-cuda.so");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(r.out.rfind('\n', at) + 1);
  if (line.find("ready") < line.find('\n')) GTEST_SKIP() << "a CUDA device is present here";
  EXPECT_LT(line.find("unavailable"), line.find('\n')) << r.out;
  const std::string next = line.substr(line.find('\n') + 1, line.find('\n', line.find('\n') + 1) - line.find('\n'));
  EXPECT_TRUE(next.find("probed: no CUDA driver (libcuda.so.1 not found: ") != std::string::npos ||
              next.find("probed: no CUDA devices") != std::string::npos)
      << r.out;
}

TEST_F(CudaPlugin, MissingDriverFileIsNamed) {
  ScopedEnv env("LOOM_CUDA_DRIVER", "/nonexistent/libcuda.so.1");
  auto reg = load(registry::ProbeMode::kInline);
  const registry::Candidate* c = cuda_candidate(*reg);
  ASSERT_NE(c, nullptr) << test::describe(*reg);
  EXPECT_EQ(c->fate, registry::Fate::kUnavailable) << test::describe(*reg);
  EXPECT_NE(c->reason.find("no CUDA driver (/nonexistent/libcuda.so.1 not found: "), std::string::npos) << c->reason;
  ASSERT_NE(reg->device("cpu"), nullptr) << test::describe(*reg);
}

TEST_F(CudaPlugin, OldDriverSaysWhichVersions) {
  ScopedEnv env("LOOM_CUDA_DRIVER", LOOM_TEST_FAKE_CUDA_DRIVER);
  ScopedEnv ver("LOOM_FAKE_CUDA_VERSION", "12020");
  auto reg = load(registry::ProbeMode::kInline);
  const registry::Candidate* c = cuda_candidate(*reg);
  ASSERT_NE(c, nullptr) << test::describe(*reg);
  EXPECT_EQ(c->fate, registry::Fate::kUnavailable) << test::describe(*reg);
  EXPECT_NE(c->reason.find("driver supports CUDA 12.2, plugin needs 13.x (built with CUDA 13."), std::string::npos) << c->reason;
}

TEST_F(CudaPlugin, DriverWithoutDevicesSaysSo) {
  ScopedEnv env("LOOM_CUDA_DRIVER", LOOM_TEST_FAKE_CUDA_DRIVER);
  ScopedEnv ver("LOOM_FAKE_CUDA_VERSION", "13020");
  ScopedEnv init("LOOM_FAKE_CUDA_INIT", "100");
  auto reg = load(registry::ProbeMode::kInline);
  const registry::Candidate* c = cuda_candidate(*reg);
  ASSERT_NE(c, nullptr) << test::describe(*reg);
  EXPECT_EQ(c->fate, registry::Fate::kUnavailable) << test::describe(*reg);
  EXPECT_NE(c->reason.find("no CUDA devices (driver 13.2)"), std::string::npos) << c->reason;
}

#ifdef LOOM_TEST_HAVE_CUDA_PLUGIN
// cuBLAS opens without a GPU: every entry the plugin uses resolves (from the
// loader's path or the build's toolkit folder), and a missing file or
// LOOM_CUDA_CUBLAS=off is a reason.
TEST_F(CudaPlugin, CublasLoaderResolvesEveryEntryOrSaysWhy) {
  {
    cuda::Cublas c;
    const std::string err = c.open();
    if (!err.empty()) GTEST_SKIP() << "no cuBLAS here: " << err;
    EXPECT_TRUE(c.ok());
    EXPECT_NE(c.create, nullptr);
    EXPECT_NE(c.set_stream, nullptr);
    EXPECT_NE(c.status_string, nullptr);
  }
  {
    ScopedEnv env("LOOM_CUDA_CUBLAS", "/nonexistent/libcublas.so.13");
    cuda::Cublas c;
    EXPECT_NE(c.open().find("/nonexistent/libcublas.so.13 not found: "), std::string::npos) << c.error;
    EXPECT_FALSE(c.ok());
  }
  {
    ScopedEnv env("LOOM_CUDA_CUBLAS", "off");
    cuda::Cublas c;
    EXPECT_EQ(c.open(), "cuBLAS turned off (LOOM_CUDA_CUBLAS=off)");
    EXPECT_FALSE(c.ok());
  }
}
#endif

}  // namespace
}  // namespace loom
