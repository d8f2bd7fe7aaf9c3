// Secure execution: in a setuid/setgid process LOOM_PLUGIN_PATH (and every
// variable that can load code or move the cache) is ignored. Runs a setgid
// copy of tests/secure/secure_harness.cpp (group nogroup, so AT_SECURE is
// set while the real user stays root and can read the build tree).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "registry_test_util.hpp"

namespace loom::test {
namespace {

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(SecureExecution, EnvironmentCannotAddPlugins) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a setgid copy of the harness";
  TempDir dir;
  const std::string harness = dir.copy_in(std::string(LOOM_TEST_BIN_DIR) + "/test_secure_harness", "harness");
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(chown(harness.c_str(), 0, 65534), 0);
  ASSERT_EQ(chmod(harness.c_str(), 02755), 0);
  const std::string env = "env LOOM_PLUGIN_PATH=" + fake_dir() + " LOOM_PLUGIN_PROBE=inline LOOM_CACHE_DIR=" +
                          dir.path() + "/cache ";

  // The same binary without the setgid bit is the control: it does see them.
  const std::string plain = dir.copy_in(std::string(LOOM_TEST_BIN_DIR) + "/test_secure_harness", "plain");
  std::string control = run(env + plain);
  ASSERT_TRUE(contains(control, "secure=0")) << control;
  ASSERT_TRUE(contains(control, "candidate dupa LOOM_PLUGIN_PATH")) << control;

  std::string out = run(env + harness);
  if (contains(out, "secure=0")) GTEST_SKIP() << "setgid has no effect here (nosuid mount?): " << out;
  ASSERT_TRUE(contains(out, "secure=1")) << out;
  EXPECT_FALSE(contains(out, "LOOM_PLUGIN_PATH ready")) << out;
  EXPECT_FALSE(contains(out, "candidate dupa")) << out;
  EXPECT_TRUE(contains(out, "warning [registry.discover] LOOM_PLUGIN_PATH is ignored")) << out;
  EXPECT_FALSE(fs::exists(dir.path() + "/cache")) << "LOOM_CACHE_DIR must be ignored too";
}

}  // namespace
}  // namespace loom::test
