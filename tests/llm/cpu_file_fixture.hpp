// Test helper: a fixture with the build's plugins loaded (the environment
// ignored), their cpu device, and a temporary file for the model a test
// writes (removed after the test). Skips when the cpu plugin is missing.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "loom/registry/registry.hpp"

namespace loom::test {

class CpuFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry::Options o;
    o.paths = {LOOM_TEST_PLUGIN_DIR};
    o.use_env = false;
    reg_ = registry::Registry::load(o);
    dev_ = reg_->device("cpu");
    if (!dev_) GTEST_SKIP() << "no cpu device (plugin not built?)";
    char tmpl[] = "/tmp/loom-llm-test-XXXXXX";
    const int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  void TearDown() override {
    if (!path_.empty()) std::remove(path_.c_str());
  }

  std::unique_ptr<registry::Registry> reg_;
  registry::Device* dev_ = nullptr;
  std::string path_;
};

}  // namespace loom::test
