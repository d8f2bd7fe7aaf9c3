// `loom bench --device vulkan0` judges decode by the device's own memory
// when it has some (a GPU's, lavapipe's device buffers): the bandwidth of a
// copy inside that memory through the plugin, not the host's DRAM probe
// (issue: a GPU judged against host DRAM was "236.9% of the bound").
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "loom/registry/plugin_calls.hpp"
#include "vulkan_test_util.hpp"

namespace loom::vktest {
namespace {

TEST(VulkanBench, DecodeIsJudgedByTheDevicesOwnMemory) {
  auto reg = load_registry();
  registry::Device* dev = reg->device("vulkan0");
  if (dev == nullptr) GTEST_SKIP() << "no vulkan0 here:" << report(*reg);
  if (!std::ifstream(model_path()).good()) GTEST_SKIP() << model_path() << " not found (LOOM_MODELS_DIR)";
  const bool own_memory = !registry::buffer_type_is_host(dev->buffer_type());
  ProcResult r = run_loom("bench -m " + model_path() + " --device vulkan0 -p 0 -n 2 -r 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  const nlohmann::json& bw = j.at("bandwidth");
  const std::string probe = bw.at("probe").get<std::string>();
  if (own_memory) {
    EXPECT_EQ(bw.at("memory").get<std::string>(), "vulkan0") << r.out;
    EXPECT_NE(probe.find("vulkan0's copy of"), std::string::npos) << probe;
  } else {
    EXPECT_EQ(bw.at("memory").get<std::string>(), "host") << r.out;
  }
  EXPECT_GT(bw.at("read_gb_per_s").get<double>(), 0) << r.out;
  EXPECT_GT(j.at("gen_bound").at("tokens_per_s").get<double>(), 0) << r.out;
}

// With the layers split between vulkan0 and the CPU no single memory bounds
// decode: the host's probe is used and says so.
TEST(VulkanBench, SplitPlacementUsesTheHostProbe) {
  auto reg = load_registry();
  if (reg->device("vulkan0") == nullptr) GTEST_SKIP() << "no vulkan0 here:" << report(*reg);
  if (!std::ifstream(model_path()).good()) GTEST_SKIP() << model_path() << " not found (LOOM_MODELS_DIR)";
  ProcResult r = run_loom("bench -m " + model_path() + " --device vulkan0,cpu -ts 1,1 -p 0 -n 2 -r 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j.at("bandwidth").at("memory").get<std::string>(), "host") << r.out;
  EXPECT_NE(j.at("bandwidth").at("probe").get<std::string>().find("vector sum"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace loom::vktest
