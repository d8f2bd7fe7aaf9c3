// Search order, duplicate file names, file-name parsing and env filters.
#include <gtest/gtest.h>

#include <fstream>

#include "registry/discovery.hpp"
#include "registry/filters.hpp"
#include "registry_test_util.hpp"

namespace loom::test {
namespace {

using registry::Fate;
using registry::Registry;

std::vector<const registry::Candidate*> all_of(const Registry& reg, const std::string& plugin) {
  std::vector<const registry::Candidate*> out;
  for (const auto& c : reg.candidates()) {
    if (c.plugin == plugin) out.push_back(&c);
  }
  return out;
}

TEST(Discovery, ParsesPluginFileNames) {
  std::string p, v;
  EXPECT_TRUE(registry::parse_plugin_file_name("libloom-cpu.so", &p, &v));
  EXPECT_EQ(p, "cpu");
  EXPECT_EQ(v, "");
  EXPECT_TRUE(registry::parse_plugin_file_name("libloom-cpu-x86-64-v3.so", &p, &v));
  EXPECT_EQ(p, "cpu");
  EXPECT_EQ(v, "x86-64-v3");
  EXPECT_FALSE(registry::parse_plugin_file_name("libloom.so", &p, &v));
  EXPECT_FALSE(registry::parse_plugin_file_name("libloom-.so", &p, &v));
  EXPECT_FALSE(registry::parse_plugin_file_name("libloom-cpu-.so", &p, &v));
  EXPECT_FALSE(registry::parse_plugin_file_name("libloom-cpu.so.1", &p, &v));
  EXPECT_FALSE(registry::parse_plugin_file_name("libloomfake-dep.so", &p, &v));
}

TEST(Discovery, ApplicationPathsThenEnvThenLibraryFolderFirstNameWins) {
  CleanLoomEnv clean;
  TempDir app, env_dir;
  std::string app_copy = app.copy_in(null_plugin_path(), "libloom-null.so");
  std::string env_copy = env_dir.copy_in(null_plugin_path(), "libloom-null.so");
  ScopedEnv path("LOOM_PLUGIN_PATH", "/nonexistent/loom:" + env_dir.path());
  registry::Options o;
  o.paths = {app.path()};
  o.search_install_dir = false;
  auto reg = Registry::load(o);
  auto nulls = all_of(*reg, "null");
  ASSERT_EQ(nulls.size(), 3u) << describe(*reg);
  EXPECT_EQ(nulls[0]->path, app_copy);
  EXPECT_EQ(nulls[0]->origin, "application");
  EXPECT_EQ(nulls[0]->fate, Fate::kUnavailable) << nulls[0]->reason;
  EXPECT_EQ(nulls[1]->path, env_copy);
  EXPECT_EQ(nulls[1]->origin, "LOOM_PLUGIN_PATH");
  EXPECT_EQ(nulls[1]->fate, Fate::kSkipped);
  EXPECT_EQ(nulls[1]->reason, "duplicate of " + app_copy);
  EXPECT_EQ(nulls[2]->origin, "library folder");
  EXPECT_EQ(nulls[2]->fate, Fate::kSkipped);
  EXPECT_EQ(nulls[2]->reason, "duplicate of " + app_copy);
  EXPECT_EQ(registry::library_dir(), fs::canonical(plugin_dir()).string());
  EXPECT_TRUE(reg->shutdown().ok());
}

TEST(Discovery, EnvPathBeatsLibraryFolder) {
  CleanLoomEnv clean;
  TempDir env_dir;
  std::string env_copy = env_dir.copy_in(null_plugin_path(), "libloom-null.so");
  ScopedEnv path("LOOM_PLUGIN_PATH", env_dir.path());
  ScopedEnv n("LOOM_NULL_DEVICES", "1");
  registry::Options o;
  o.search_install_dir = false;
  auto reg = Registry::load(o);
  auto nulls = all_of(*reg, "null");
  ASSERT_EQ(nulls.size(), 2u) << describe(*reg);
  EXPECT_EQ(nulls[0]->path, env_copy);
  EXPECT_EQ(nulls[0]->fate, Fate::kReady) << nulls[0]->reason;
  EXPECT_EQ(nulls[1]->origin, "library folder");
  EXPECT_EQ(nulls[1]->fate, Fate::kSkipped);
  EXPECT_TRUE(reg->shutdown().ok());
}

TEST(Discovery, EnvIgnoredWithoutUseEnvAndFoldersSearchedOnce) {
  CleanLoomEnv clean;
  ScopedEnv path("LOOM_PLUGIN_PATH", fake_dir());
  auto reg = Registry::load(only({null_plugin_path(), plugin_dir(), plugin_dir() + "/"}));
  EXPECT_EQ(find_candidate(*reg, "wrongmajor"), nullptr) << describe(*reg);
  // The explicit file is not listed again when its folder is searched.
  EXPECT_EQ(all_of(*reg, "null").size(), 1u) << describe(*reg);
}

TEST(Discovery, ExplicitFileWithAnOddNameIsRecorded) {
  CleanLoomEnv clean;
  TempDir dir;
  std::string odd = dir.copy_in(null_plugin_path(), "null-plugin.so");
  auto reg = Registry::load(only({odd}));
  ASSERT_EQ(reg->candidates().size(), 1u);
  EXPECT_EQ(reg->candidates()[0].fate, Fate::kFailed);
  EXPECT_TRUE(contains(reg->candidates()[0].reason, "does not match")) << reg->candidates()[0].reason;
}

TEST(Discovery, PluginNameMustMatchFileName) {
  CleanLoomEnv clean;
  TempDir dir;
  dir.copy_in(null_plugin_path(), "libloom-impostor.so");
  auto reg = Registry::load(only({dir.path()}));
  const auto* c = find_candidate(*reg, "impostor");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->fate, Fate::kFailed);
  EXPECT_TRUE(contains(c->reason, "calls itself 'null'")) << c->reason;
}

TEST(Discovery, BrokenFileInEnvPathIsListed) {
  CleanLoomEnv clean;
  TempDir dir;
  { std::ofstream(dir.path() + "/libloom-broken.so") << "not a shared object\n"; }
  ScopedEnv path("LOOM_PLUGIN_PATH", dir.path());
  registry::Options o;
  o.search_library_dir = false;
  o.search_install_dir = false;
  auto reg = Registry::load(o);
  const auto* c = find_candidate(*reg, "broken");
  ASSERT_NE(c, nullptr) << describe(*reg);
  EXPECT_EQ(c->fate, Fate::kFailed);
  EXPECT_EQ(c->origin, "LOOM_PLUGIN_PATH");
  EXPECT_FALSE(c->reason.empty());
}

TEST(Filters, GlobLists) {
  EXPECT_TRUE(registry::glob_list_matches("cpu", "cpu"));
  EXPECT_TRUE(registry::glob_list_matches("cuda, c*", "cpu"));
  EXPECT_TRUE(registry::glob_list_matches("x,fake?ar", "fakevar"));
  EXPECT_FALSE(registry::glob_list_matches("cuda,vulkan", "cpu"));
  EXPECT_FALSE(registry::glob_list_matches("", "cpu"));
  EXPECT_FALSE(registry::glob_list_matches(",,", "cpu"));
}

TEST(Filters, DisableThenSelect) {
  CleanLoomEnv clean;
  ScopedEnv disable("LOOM_PLUGINS_DISABLE", "fakevar,dupb");
  ScopedEnv select("LOOM_PLUGINS_SELECT", "dup*,newer*,fakevar");
  auto reg = Registry::load(only({fake_dir()}, /*use_env=*/true));
  const auto* dupb = find_candidate(*reg, "dupb");
  ASSERT_NE(dupb, nullptr);
  EXPECT_EQ(dupb->fate, Fate::kSkipped);
  EXPECT_TRUE(contains(dupb->reason, "LOOM_PLUGINS_DISABLE")) << dupb->reason;
  // Disable wins over select.
  const auto* var = find_candidate(*reg, "fakevar", "high");
  ASSERT_NE(var, nullptr);
  EXPECT_EQ(var->fate, Fate::kSkipped);
  EXPECT_TRUE(contains(var->reason, "LOOM_PLUGINS_DISABLE")) << var->reason;
  const auto* wrong = find_candidate(*reg, "wrongmajor");
  ASSERT_NE(wrong, nullptr);
  EXPECT_EQ(wrong->fate, Fate::kSkipped);
  EXPECT_TRUE(contains(wrong->reason, "LOOM_PLUGINS_SELECT")) << wrong->reason;
  EXPECT_EQ(wrong->stage, registry::Stage::kFound);
  EXPECT_EQ(find_candidate(*reg, "dupa")->fate, Fate::kReady);
  EXPECT_EQ(find_candidate(*reg, "newerminor")->fate, Fate::kReady);
  // dupb was never loaded, so dupa0 has no duplicate.
  EXPECT_TRUE(reg->duplicates().empty());
  EXPECT_TRUE(reg->shutdown().ok());
}

TEST(Filters, VariantGlobAndNoEnvMeansNoFilter) {
  CleanLoomEnv clean;
  {
    ScopedEnv disable("LOOM_PLUGINS_DISABLE", "fakevar-high");
    auto reg = Registry::load(only({fake_dir()}, true));
    EXPECT_EQ(find_candidate(*reg, "fakevar", "high")->fate, Fate::kSkipped);
    const auto* low = find_candidate(*reg, "fakevar", "low");
    EXPECT_EQ(low->fate, Fate::kReady) << low->reason;
  }
  {
    ScopedEnv disable("LOOM_PLUGINS_DISABLE", "*");
    auto reg = Registry::load(only({fake_dir()}, /*use_env=*/false));
    EXPECT_EQ(find_candidate(*reg, "dupa")->fate, Fate::kReady);
  }
}

}  // namespace
}  // namespace loom::test
