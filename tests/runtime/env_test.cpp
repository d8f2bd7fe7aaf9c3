// env_flag / env_int: LOOM_* settings that do not parse are a warning
// naming the variable and the value, then the fallback.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "loom/runtime/log.hpp"
#include "runtime/env.hpp"

namespace loom {
namespace {

class Env : public ::testing::Test {
 protected:
  void SetUp() override {
    set_log_sink([this](LogLevel, std::string_view cat, std::string_view msg) {
      logged_.push_back(std::string(cat) + ": " + std::string(msg));
    });
  }
  void TearDown() override {
    set_log_sink(nullptr);
    unsetenv(kVar);
  }
  static constexpr const char* kVar = "LOOM_TEST_ENV_SETTING";
  std::vector<std::string> logged_;
};

TEST_F(Env, FlagsParseOrWarn) {
  unsetenv(kVar);
  EXPECT_TRUE(env_flag(kVar, true));
  setenv(kVar, "", 1);
  EXPECT_FALSE(env_flag(kVar, false));
  for (const char* on : {"1", "on", "true", "yes"}) {
    setenv(kVar, on, 1);
    EXPECT_TRUE(env_flag(kVar, false)) << on;
  }
  for (const char* off : {"0", "off", "false", "no"}) {
    setenv(kVar, off, 1);
    EXPECT_FALSE(env_flag(kVar, true)) << off;
  }
  EXPECT_TRUE(logged_.empty());
  setenv(kVar, "abc", 1);
  EXPECT_TRUE(env_flag(kVar, true));
  ASSERT_EQ(logged_.size(), 1u);
  EXPECT_EQ(logged_[0], "env: LOOM_TEST_ENV_SETTING='abc' is not 1 or 0; using 1");
}

TEST_F(Env, IntegersParseOrWarn) {
  unsetenv(kVar);
  EXPECT_EQ(env_int(kVar, 1, 64, 7), 7);
  setenv(kVar, "12", 1);
  EXPECT_EQ(env_int(kVar, 1, 64, 7), 12);
  EXPECT_TRUE(logged_.empty());
  for (const char* bad : {"abc", "12x", "65", "0", "-3", "99999999999999999999"}) {
    setenv(kVar, bad, 1);
    EXPECT_EQ(env_int(kVar, 1, 64, 7), 7) << bad;
  }
  ASSERT_EQ(logged_.size(), 6u);
  EXPECT_EQ(logged_[0], "env: LOOM_TEST_ENV_SETTING='abc' is not a whole number in [1, 64]; using 7");
}

}  // namespace
}  // namespace loom
