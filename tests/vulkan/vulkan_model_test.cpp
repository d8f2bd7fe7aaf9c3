// stories260K greedy generation through the loom binary: vulkan0 alone,
// vulkan0 with the CPU beside it (with --n-gpu-layers), the graph split
// between vulkan0 and the CPU (ops refused by vulkan0 through
// LOOM_VULKAN_DISABLE), and vulkan0 on its fallback paths (no f64, no
// subgroups, staged copies, synchronous compute) must print exactly the
// CPU's text.
#include <fstream>
#include <string>

#include "vulkan_test_util.hpp"

namespace loom::vktest {
namespace {

class VulkanStories : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::ifstream(model_path()).good())
      GTEST_SKIP() << model_path() << " not found (LOOM_MODELS_DIR)";
    auto reg = load_registry();
    if (reg->device("vulkan0") == nullptr) GTEST_SKIP() << "no vulkan0 here:" << report(*reg);
    cpu_ = generate("cpu");
    ASSERT_EQ(cpu_.exit_code, 0) << cpu_.out;
    ASSERT_NE(cpu_.out.find("Once upon a time, there was a little girl named Lily."),
              std::string::npos)
        << cpu_.out;
  }
  static ProcResult generate(const std::string& devices, const std::string& extra = "",
                             const std::string& env = "") {
    return run_loom("run -m " + model_path() + " -n 48 --device " + devices + " " + extra, false,
                    env);
  }
  ProcResult cpu_;
};

TEST_F(VulkanStories, Vulkan0AloneMatchesCpu) {
  ProcResult r = generate("vulkan0");
  ASSERT_EQ(r.exit_code, 0)
      << run_loom("run -m " + model_path() + " -n 4 --device vulkan0", true).out;
  EXPECT_EQ(r.out, cpu_.out);
}

TEST_F(VulkanStories, WeightsAreWrappedNotCopiedWhereDeviceMemoryIsHostMemory) {
  auto reg = load_registry();
  registry::Device* vk = reg->device("vulkan0");
  loom_buffer_type_t* own = vk->buffer_type();
  const bool host = own->iface->is_host(own) &&
                    (vk->info().caps & LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR) != 0;
  for (const char* devices : {"vulkan0", "vulkan0,cpu --n-gpu-layers 3"}) {
    ProcResult r = run_loom("run -m " + model_path() + " -n 2 --json --device " + devices);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(host ? "\"weights_zero_copy\":true" : "\"weights_zero_copy\":false"),
              std::string::npos)
        << devices << ": " << r.out;
  }
  // Device memory that is not host memory: every weight is copied.
  ProcResult staged = run_loom("run -m " + model_path() + " -n 2 --json --device vulkan0", false,
                               "LOOM_VULKAN_DISABLE=map");
  ASSERT_EQ(staged.exit_code, 0) << staged.out;
  EXPECT_NE(staged.out.find("\"weights_zero_copy\":false"), std::string::npos) << staged.out;
}

TEST_F(VulkanStories, Vulkan0WithCpuMatchesCpu) {
  // All 5 layers (weights and KV cache) on vulkan0, then 3 of them.
  ProcResult all = generate("vulkan0,cpu", "--n-gpu-layers 5");
  ASSERT_EQ(all.exit_code, 0) << run_loom("run -m " + model_path() +
                                              " -n 4 --device vulkan0,cpu --n-gpu-layers 5",
                                          true)
                                     .out;
  EXPECT_EQ(all.out, cpu_.out);
  ProcResult some = generate("vulkan0,cpu", "--n-gpu-layers 3");
  ASSERT_EQ(some.exit_code, 0) << run_loom("run -m " + model_path() +
                                               " -n 4 --device vulkan0,cpu --n-gpu-layers 3",
                                           true)
                                      .out;
  EXPECT_EQ(some.out, cpu_.out);
  ProcResult cpu_first = generate("cpu,vulkan0", "--n-gpu-layers 5");
  ASSERT_EQ(cpu_first.exit_code, 0)
      << run_loom("run -m " + model_path() + " -n 4 --device cpu,vulkan0 --n-gpu-layers 5", true)
             .out;
  EXPECT_EQ(cpu_first.out, cpu_.out);
}

TEST_F(VulkanStories, GraphSplitBetweenVulkan0AndCpuMatchesCpu) {
  // vulkan0 refuses SOFT_MAX and ROPE: every layer bounces between devices.
  const std::string env = "LOOM_VULKAN_DISABLE=op:SOFT_MAX,op:ROPE";
  const std::string args = "--device vulkan0,cpu --n-gpu-layers 5";
  ProcResult split = generate("vulkan0,cpu", "--n-gpu-layers 5", env);
  ASSERT_EQ(split.exit_code, 0)
      << run_loom("run -m " + model_path() + " -n 4 " + args, true, env).out;
  EXPECT_EQ(split.out, cpu_.out);
  ProcResult info = run_loom("run -m " + model_path() + " -n 1 " + args, true, env);
  EXPECT_NE(info.out.find(" splits, "), std::string::npos) << info.out;
  EXPECT_EQ(info.out.find("; 1 splits, "), std::string::npos) << "the graph should be split:\n"
                                                              << info.out;
}

TEST_F(VulkanStories, FallbackPathsMatchCpu) {
  ProcResult r = generate("vulkan0", "", "LOOM_VULKAN_DISABLE=f64,subgroup,map,async");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, cpu_.out);
}

}  // namespace
}  // namespace loom::vktest
