// Status, StatusOr and the log filter.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/runtime/log.hpp"
#include "loom/runtime/status.hpp"

namespace loom {
namespace {

TEST(Status, CodesMessagesContext) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.to_string(), "OK");
  EXPECT_TRUE(ok.with_context("outer").ok());
  Status st = invalid_argument("[op.add] bad");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.to_string(), "INVALID_ARGUMENT: [op.add] bad");
  Status wrapped = st.with_context("graph.build");
  EXPECT_EQ(wrapped.message(), "[graph.build] [op.add] bad");
  EXPECT_EQ(wrapped.code(), StatusCode::kInvalidArgument);
  EXPECT_STREQ(status_code_name(StatusCode::kUnavailable), "UNAVAILABLE");
  EXPECT_EQ(resource_exhausted("x").code(), StatusCode::kResourceExhausted);
}

StatusOr<int> half(int v) {
  if (v % 2) return invalid_argument("[test.half] odd " + std::to_string(v));
  return v / 2;
}
StatusOr<int> quarter(int v) {
  LOOM_ASSIGN_OR_RETURN(int h, half(v));
  LOOM_ASSIGN_OR_RETURN(int q, half(h));
  return q;
}

TEST(Status, StatusOrAndMacros) {
  EXPECT_EQ(*quarter(8), 2);
  StatusOr<int> r = quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "[test.half] odd 3");
  auto check = [](int v) -> Status {
    LOOM_RETURN_IF_ERROR(half(v).status());
    return Status();
  };
  EXPECT_TRUE(check(2).ok());
  EXPECT_FALSE(check(3).ok());
}

// Restores the default filter and sink after each test.
class Log : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_TRUE(set_log_filter(""));
    set_log_sink(nullptr);
  }
};

TEST_F(Log, FilterRulesFirstMatchWins) {
  ASSERT_TRUE(set_log_filter("registry:debug,*:warn"));
  EXPECT_TRUE(log_enabled(LogLevel::kDebug, "registry"));
  EXPECT_FALSE(log_enabled(LogLevel::kDebug, "cpu"));
  EXPECT_FALSE(log_enabled(LogLevel::kInfo, "cpu"));
  EXPECT_TRUE(log_enabled(LogLevel::kWarn, "cpu"));
  EXPECT_FALSE(log_enabled(LogLevel::kOff, "registry"));
  ASSERT_TRUE(set_log_filter("plugins.*:info,*:error"));
  EXPECT_TRUE(log_enabled(LogLevel::kInfo, "plugins.cuda"));
  EXPECT_FALSE(log_enabled(LogLevel::kWarn, "runtime"));
  ASSERT_TRUE(set_log_filter("debug"));  // bare level = "*:level"
  EXPECT_TRUE(log_enabled(LogLevel::kDebug, "anything"));
  ASSERT_TRUE(set_log_filter("*:off"));
  EXPECT_FALSE(log_enabled(LogLevel::kError, "runtime"));
  ASSERT_TRUE(set_log_filter(""));  // default: warn
  EXPECT_FALSE(log_enabled(LogLevel::kInfo, "runtime"));
  EXPECT_TRUE(log_enabled(LogLevel::kWarn, "runtime"));
}

TEST_F(Log, BadSpecIsRejectedAndFilterKept) {
  ASSERT_TRUE(set_log_filter("registry:debug"));
  EXPECT_FALSE(set_log_filter("registry:loud"));
  EXPECT_FALSE(set_log_filter("registry:debug,cpu:"));
  EXPECT_FALSE(set_log_filter("verbose"));
  EXPECT_TRUE(log_enabled(LogLevel::kDebug, "registry"));  // unchanged
}

TEST_F(Log, SinkReceivesFilteredMessages) {
  struct Msg {
    LogLevel level;
    std::string cat, text;
  };
  std::vector<Msg> got;
  set_log_sink([&](LogLevel l, std::string_view c, std::string_view m) {
    got.push_back({l, std::string(c), std::string(m)});
  });
  ASSERT_TRUE(set_log_filter("runtime:info,*:error"));
  LOOM_LOG_DEBUG("runtime", "hidden");
  LOOM_LOG_INFO("runtime", "shown");
  LOOM_LOG_WARN("registry", "hidden too");
  LOOM_LOG_ERROR("registry", "shown too");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].text, "shown");
  EXPECT_EQ(got[0].level, LogLevel::kInfo);
  EXPECT_EQ(got[1].cat, "registry");
  EXPECT_EQ(got[1].text, "shown too");
}

}  // namespace
}  // namespace loom
