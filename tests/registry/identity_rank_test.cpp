// One physical GPU shown by two plugins: the CUDA plugin's device is kept
// over the Vulkan plugin's view of the same NVIDIA card, whatever the
// search order; the hidden one is listed as a duplicate and can still be
// selected by its name.
#include <gtest/gtest.h>

#include "registry_test_util.hpp"

namespace loom::test {
namespace {

using registry::Registry;

std::string vendor_dir(const char* plugin) {
  return std::string(LOOM_TEST_FAKE_DIR) + "/../vendor_plugins/" + plugin;
}

// The hidden view of a shared device is out of the list and the policies,
// yet a user who names it gets it (whichever plugin won).
void expect_hidden_but_selectable(const Registry& reg, const std::string& hidden, const std::string& kept) {
  for (const registry::Device* d : reg.devices()) EXPECT_NE(d->name(), hidden) << describe(reg);
  const registry::Device* h = reg.device(hidden);
  ASSERT_NE(h, nullptr) << describe(reg);
  EXPECT_EQ(h->info().plugin, hidden.substr(0, hidden.size() - 1));
  auto named = reg.select(hidden + "," + kept);
  ASSERT_TRUE(named.ok()) << named.status().message();
  ASSERT_EQ(named->size(), 2u);
  EXPECT_EQ((*named)[0]->name(), hidden);
  auto by_policy = reg.select("auto");
  ASSERT_TRUE(by_policy.ok()) << by_policy.status().message();
  ASSERT_EQ(by_policy->size(), 1u);
  EXPECT_EQ((*by_policy)[0]->name(), kept);
}

TEST(IdentityRank, CudaKeepsTheCardVulkanAlsoShows) {
  CleanLoomEnv env;
  for (bool vulkan_first : {true, false}) {
    SCOPED_TRACE(vulkan_first ? "vulkan first" : "cuda first");
    auto reg = Registry::load(vulkan_first ? only({vendor_dir("vulkan"), vendor_dir("cuda")})
                                           : only({vendor_dir("cuda"), vendor_dir("vulkan")}));
    ASSERT_NE(reg->device("cuda0"), nullptr) << describe(*reg);
    ASSERT_EQ(reg->duplicates().size(), 1u) << describe(*reg);
    EXPECT_EQ(reg->duplicates()[0], "vulkan0 (same device as cuda0)");
    ASSERT_EQ(reg->devices().size(), 1u) << describe(*reg);
    EXPECT_EQ(reg->devices()[0]->name(), "cuda0");
    expect_hidden_but_selectable(*reg, "vulkan0", "cuda0");
    EXPECT_TRUE(reg->shutdown().ok());
  }
}

// The preference is overridable: Options::prefer_plugins, or
// LOOM_DEVICE_PREFER when the environment is read, keeps the Vulkan view.
TEST(IdentityRank, ThePreferenceIsOverridable) {
  CleanLoomEnv env;
  for (bool by_env : {false, true}) {
    SCOPED_TRACE(by_env ? "LOOM_DEVICE_PREFER=vulkan" : "Options::prefer_plugins");
    registry::Options o = only({vendor_dir("cuda"), vendor_dir("vulkan")});
    if (by_env) {
      o.use_env = true;
      o.search_library_dir = false;
      o.search_install_dir = false;
    } else {
      o.prefer_plugins = {"vulkan"};
    }
    ScopedEnv prefer("LOOM_DEVICE_PREFER", by_env ? std::optional<std::string>(" vulkan , cuda") : std::nullopt);
    auto reg = Registry::load(o);
    ASSERT_NE(reg->device("vulkan0"), nullptr) << describe(*reg);
    ASSERT_EQ(reg->duplicates().size(), 1u) << describe(*reg);
    EXPECT_EQ(reg->duplicates()[0], "cuda0 (same device as vulkan0)");
    expect_hidden_but_selectable(*reg, "cuda0", "vulkan0");
    EXPECT_TRUE(reg->shutdown().ok());
  }
}

}  // namespace
}  // namespace loom::test
