// Device selection: explicit names, missing names, policies, LOOM_DEVICES.
#include <gtest/gtest.h>

#include "registry_test_util.hpp"

namespace loom::test {
namespace {

using registry::Device;
using registry::Registry;

std::vector<std::string> names(const std::vector<Device*>& devices) {
  std::vector<std::string> out;
  for (const Device* d : devices) out.push_back(d->name());
  return out;
}

class Selection : public ::testing::Test {
 protected:
  void SetUp() override {
    ScopedEnv n("LOOM_NULL_DEVICES", "2");
    // null0, null1 (accel), then the fakes: dupa0 (gpu), fakevar0, newerminor0 (accel).
    reg_ = Registry::load(only({null_plugin_path(), fake_dir()}));
  }
  CleanLoomEnv env_;
  std::unique_ptr<Registry> reg_;
};

TEST_F(Selection, NullPluginExposesTheRequestedDevices) {
  const auto* c = find_candidate(*reg_, "null");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->fate, registry::Fate::kReady) << c->reason;
  EXPECT_EQ(c->device_count, 2u);
  ASSERT_NE(reg_->device("null0"), nullptr);
  ASSERT_NE(reg_->device("null1"), nullptr);
  EXPECT_EQ(reg_->device("null2"), nullptr);
  const auto& info = reg_->device("null1")->info();
  EXPECT_EQ(info.type, LOOM_DEVICE_TYPE_ACCEL);
  EXPECT_EQ(info.plugin, "null");
  EXPECT_EQ(info.memory_total, 0u);
  EXPECT_EQ(info.uuid.size(), 32u);
  EXPECT_NE(info.uuid, reg_->device("null0")->info().uuid);
  EXPECT_EQ(std::string(registry::device_type_name(info.type)), "accel");
}

TEST_F(Selection, ExplicitNamesKeepTheirOrder) {
  auto sel = reg_->select("null1, dupa0,null1");
  ASSERT_TRUE(sel.ok()) << sel.status().to_string();
  EXPECT_EQ(names(*sel), (std::vector<std::string>{"null1", "dupa0"}));
}

TEST_F(Selection, MissingNameIsAnErrorListingWhatExists) {
  auto sel = reg_->select("null0,cuda0");
  ASSERT_FALSE(sel.ok());
  EXPECT_EQ(sel.status().code(), StatusCode::kNotFound);
  const std::string m = sel.status().message();
  EXPECT_TRUE(contains(m, "'cuda0'")) << m;
  EXPECT_TRUE(contains(m, "null0")) << m;
  EXPECT_TRUE(contains(m, "dupa0")) << m;
}

TEST_F(Selection, AutoPutsGpusFirst) {
  for (const char* policy : {"", "auto", "gpu-first", " auto "}) {
    auto sel = reg_->select(policy);
    ASSERT_TRUE(sel.ok()) << policy << ": " << sel.status().to_string();
    std::vector<std::string> got = names(*sel);
    ASSERT_EQ(got.size(), reg_->devices().size());
    EXPECT_EQ(got.front(), "dupa0") << policy;
    for (size_t i = 1; i < got.size(); ++i) {
      EXPECT_NE(reg_->device(got[i])->info().type, LOOM_DEVICE_TYPE_GPU);
    }
  }
}

TEST_F(Selection, CpuOnlyWithoutACpuIsNotFound) {
  auto sel = reg_->select("cpu-only");
  ASSERT_FALSE(sel.ok());
  EXPECT_EQ(sel.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(sel.status().message(), "cpu-only")) << sel.status().message();
}

// One parser for --device, LOOM_DEVICES and the C API's spec.
TEST(DeviceSpec, ListsArePoliciesOrTrimmedNames) {
  using registry::DeviceSpec;
  for (const char* p : {"", "  ", "auto", " gpu-first ", "cpu-only"}) {
    const DeviceSpec s = DeviceSpec::parse(p);
    EXPECT_TRUE(s.is_policy()) << "'" << p << "'";
    EXPECT_TRUE(s.names.empty()) << p;
  }
  EXPECT_EQ(DeviceSpec::parse("").policy, "auto");
  EXPECT_EQ(DeviceSpec::parse(" gpu-first ").policy, "gpu-first");
  const DeviceSpec list = DeviceSpec::parse(" cuda0 , cpu,,cuda0, vulkan0 ");
  EXPECT_FALSE(list.is_policy());
  EXPECT_EQ(list.names, (std::vector<std::string>{"cuda0", "cpu", "vulkan0"}));
  EXPECT_EQ(list.text, "cuda0 , cpu,,cuda0, vulkan0");
  EXPECT_EQ(list.repeated, (std::vector<std::string>{"cuda0"}));
  EXPECT_EQ(DeviceSpec::parse("cpu,blas,cpu,cpu,blas").repeated, (std::vector<std::string>{"cpu", "blas"}));
  EXPECT_TRUE(DeviceSpec::parse("cpu,blas").repeated.empty());
  EXPECT_TRUE(DeviceSpec::parse(" , ").names.empty());
  EXPECT_FALSE(DeviceSpec::parse(" , ").is_policy());
  // "auto,cpu" is a list (a device named auto), not a policy.
  EXPECT_EQ(DeviceSpec::parse("auto,cpu").names, (std::vector<std::string>{"auto", "cpu"}));
}

TEST(DeviceSpec, ResolveTakesTheGivenThenLoomDevicesThenAuto) {
  using registry::DeviceSpec;
  ScopedEnv d("LOOM_DEVICES", " sim0, cpu ");
  DeviceSpec given = DeviceSpec::resolve("cuda0", "--device");
  EXPECT_EQ(given.names, std::vector<std::string>{"cuda0"});
  EXPECT_EQ(given.origin, "--device cuda0");
  DeviceSpec env = DeviceSpec::resolve("  ", "--device");
  EXPECT_EQ(env.names, (std::vector<std::string>{"sim0", "cpu"}));
  EXPECT_EQ(env.origin, "LOOM_DEVICES= sim0, cpu ");
  ScopedEnv none("LOOM_DEVICES", "");
  DeviceSpec fallback = DeviceSpec::resolve("", "--device");
  EXPECT_EQ(fallback.policy, "auto");
  EXPECT_EQ(fallback.origin, "the default device policy auto");
}

TEST_F(Selection, SpacesInAListAreTrimmedAndTheOriginLeadsErrors) {
  auto sel = reg_->select(" null1 , null0 ");
  ASSERT_TRUE(sel.ok()) << sel.status().to_string();
  EXPECT_EQ(names(*sel), (std::vector<std::string>{"null1", "null0"}));
  auto bad = reg_->select(registry::DeviceSpec::resolve("null0,nosuch", "--device"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(bad.status().message(), "--device null0,nosuch: [registry.select] device 'nosuch' not found"))
      << bad.status().message();
  EXPECT_TRUE(contains(bad.status().message(), "(see 'loom devices')")) << bad.status().message();
}

TEST_F(Selection, FromEnv) {
  {
    ScopedEnv d("LOOM_DEVICES", "null1");
    auto sel = reg_->select_from_env();
    ASSERT_TRUE(sel.ok()) << sel.status().to_string();
    EXPECT_EQ(names(*sel), std::vector<std::string>{"null1"});
  }
  {
    ScopedEnv d("LOOM_DEVICES", "cuda0");
    auto sel = reg_->select_from_env();
    ASSERT_FALSE(sel.ok());
    EXPECT_EQ(sel.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(contains(sel.status().message(), "LOOM_DEVICES=cuda0")) << sel.status().message();
  }
  {
    ScopedEnv d("LOOM_DEVICES", std::nullopt);
    auto sel = reg_->select_from_env();
    ASSERT_TRUE(sel.ok());
    EXPECT_EQ(sel->front()->name(), "dupa0");
  }
}

TEST(SelectionEmpty, NoDevicesIsNotFound) {
  CleanLoomEnv env;
  auto reg = Registry::load(only({}));
  EXPECT_TRUE(reg->candidates().empty());
  auto sel = reg->select("auto");
  ASSERT_FALSE(sel.ok());
  EXPECT_EQ(sel.status().code(), StatusCode::kNotFound);
}

TEST(SelectionCpu, CpuOnlyAndAutoWithTheCpuPlugin) {
  CleanLoomEnv env;
  if (!cpu_plugin_ready()) GTEST_SKIP() << "the cpu plugin in " << plugin_dir() << " does not load yet";
  ScopedEnv n("LOOM_NULL_DEVICES", "1");
  auto reg = Registry::load(only({plugin_dir(), fake_dir()}));
  auto cpu_only = reg->select("cpu-only");
  ASSERT_TRUE(cpu_only.ok()) << cpu_only.status().to_string();
  EXPECT_EQ(names(*cpu_only), std::vector<std::string>{"cpu"});
  auto all = reg->select("auto");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->front()->name(), "dupa0");
  EXPECT_EQ(all->back()->name(), "cpu");
}

}  // namespace
}  // namespace loom::test
