// run_guarded: an exception escaping a subcommand becomes exit status 1 and
// a message saying what was thrown, never std::terminate (issue 11).
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>

#include "tools/loom/command_guard.hpp"

namespace {

using loom::cli::run_guarded;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CommandGuard, ExitCodesPassThrough) {
  EXPECT_EQ(run_guarded("run", [] { return 0; }), 0);
  EXPECT_EQ(run_guarded("run", [] { return 2; }), 2);
}

TEST(CommandGuard, ExceptionsBecomeExitOneWithAMessage) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_guarded("bench", []() -> int { throw std::bad_alloc(); }), 1);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(has(err, "loom bench: [cli.bench] stopped by an unexpected exception: out of memory (std::bad_alloc)"))
      << err;

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_guarded("plan", []() -> int { throw std::runtime_error("disk on fire"); }), 1);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(has(err, "loom plan: [cli.plan] stopped by an unexpected exception: disk on fire")) << err;

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_guarded("run", []() -> int { throw 42; }), 1);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(has(err, "an exception of unknown type")) << err;
}

}  // namespace
