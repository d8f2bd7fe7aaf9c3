// Isolated probing: plugins that crash, abort, exit or hang while loading
// become records and never take the host down; a FIFO is never opened;
// results are cached per file version; --device names load only the
// plugins that serve them; relative search paths and name clashes are
// visible warnings.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <iterator>

#include "registry_test_util.hpp"

namespace loom::test {
namespace {

using registry::Fate;
using registry::Registry;

#if defined(LOOM_SANITIZE_ADDRESS) || defined(LOOM_SANITIZE_THREAD)
constexpr bool kSanitizer = true;  // the sanitizer's own SIGSEGV handler turns the signal into an exit status
#else
constexpr bool kSanitizer = false;
#endif

std::string hostile_dir() { return LOOM_TEST_HOSTILE_DIR; }

std::string warnings_of(const Registry& reg) {
  std::string s;
  for (const auto& w : reg.warnings()) s += w + "\n";
  return s;
}

class Isolation : public ::testing::Test {
 protected:
  CleanLoomEnv clean_;
  TempDir dir_;
  ScopedEnv cache_{"LOOM_CACHE_DIR", dir_.path() + "/cache"};
  ScopedEnv timeout_{"LOOM_PLUGIN_PROBE_TIMEOUT", "2"};
  ScopedEnv mode_{"LOOM_PLUGIN_PROBE", std::nullopt};
};

TEST_F(Isolation, HostilePluginsBecomeRecordsAndTheHostLivesOn) {
  const std::string fifo = dir_.path() + "/fifo";
  ASSERT_EQ(fs::create_directory(fifo), true);
  ASSERT_EQ(mkfifo((fifo + "/libloom-fifo.so").c_str(), 0600), 0);
  ScopedEnv null_devices("LOOM_NULL_DEVICES", "1");
  auto start = std::chrono::steady_clock::now();
  auto reg = Registry::load(only({hostile_dir(), fifo, null_plugin_path()}, /*use_env=*/true));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string all = describe(*reg);
  struct Want {
    const char* plugin;
    const char* what;  // in the reason
  };
  const Want wants[] = {
      {"segvctor", "while loading the library"}, {"segvquery", "in loom_plugin_query"},
      {"segvscore", "in score"},                 {"segvinit", "in init"},
      {"segvcount", "while listing devices"},    {"segvprops", "while listing devices"},
      {"abortinit", "crashed with SIGABRT in init"}, {"exitinit", "exited with status 0 in init"},
      {"hanginit", "no answer in 2 s (in init)"},    {"fifo", "not a regular file (a FIFO)"},
  };
  for (const Want& w : wants) {
    const registry::Candidate* c = find_candidate(*reg, w.plugin);
    ASSERT_NE(c, nullptr) << w.plugin << "\n" << all;
    EXPECT_EQ(c->fate, Fate::kFailed) << all;
    EXPECT_TRUE(contains(c->reason, w.what)) << c->reason;
    EXPECT_TRUE(contains(c->reason, std::string("libloom-") + w.plugin + ".so")) << c->reason;
    if (std::string(w.plugin) != "fifo") {
      EXPECT_TRUE(contains(c->reason, "probed in a child")) << c->reason;
    }
    if (std::string(w.plugin).rfind("segv", 0) == 0) {
      EXPECT_TRUE(contains(c->reason, kSanitizer ? "status" : "crashed with SIGSEGV")) << c->reason;
    }
  }
  // The good plugin beside them is loaded and usable.
  ASSERT_NE(reg->device("null0"), nullptr) << all;
  // Every child ran at once: the hang costs one time limit, not one each.
  EXPECT_LT(secs, 10.0);
}

TEST_F(Isolation, ResultsAreCachedPerFileVersion) {
  const std::string copy = dir_.copy_in(hostile_dir() + "/libloom-segvinit.so", "libloom-segvinit.so");
  auto first = Registry::load(only({copy}, true));
  const registry::Candidate* c = find_candidate(*first, "segvinit");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(contains(c->reason, "cached")) << c->reason;
  auto second = Registry::load(only({copy}, true));
  c = find_candidate(*second, "segvinit");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(contains(c->reason, "cached result")) << c->reason;
  // A new version of the file (here: another file under the same name) is probed again.
  fs::remove(copy);
  dir_.copy_in(fake_dir() + "/libloom-unavailable.so", "libloom-segvinit.so");
  auto third = Registry::load(only({copy}, true));
  c = find_candidate(*third, "segvinit");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(contains(c->reason, "probed in a child")) << c->reason;
}

TEST_F(Isolation, InlineModeLoadsInProcess) {
  ScopedEnv inline_mode("LOOM_PLUGIN_PROBE", "inline");
  ScopedEnv null_devices("LOOM_NULL_DEVICES", "1");
  auto reg = Registry::load(only({null_plugin_path()}, true));
  EXPECT_NE(reg->device("null0"), nullptr) << describe(*reg);
  EXPECT_FALSE(fs::exists(dir_.path() + "/cache/probe"));  // no child, nothing cached
  ScopedEnv bad("LOOM_PLUGIN_PROBE", "sometimes");
  auto reg2 = Registry::load(only({null_plugin_path()}, true));
  EXPECT_TRUE(contains(warnings_of(*reg2), "LOOM_PLUGIN_PROBE=sometimes")) << warnings_of(*reg2);
}

TEST_F(Isolation, WantedDevicesLoadOnlyThePluginsThatServeThem) {
  registry::Options o = only({fake_dir()}, true);
  o.wanted_devices = {"dupb0"};
  auto reg = Registry::load(o);
  const std::string all = describe(*reg);
  ASSERT_NE(reg->device("dupb0"), nullptr) << all;
  EXPECT_EQ(reg->devices().size(), 1u) << all;
  const registry::Candidate* dupa = find_candidate(*reg, "dupa");
  ASSERT_NE(dupa, nullptr);
  EXPECT_EQ(dupa->fate, Fate::kSkipped);
  EXPECT_TRUE(contains(dupa->reason, "not loaded: its devices (dupa0) are not among the requested dupb0"))
      << dupa->reason;
  // A plugin that could not serve anyway keeps its own reason.
  const registry::Candidate* unavailable = find_candidate(*reg, "unavailable");
  ASSERT_NE(unavailable, nullptr);
  EXPECT_EQ(unavailable->fate, Fate::kUnavailable) << unavailable->reason;
}

TEST_F(Isolation, RelativeSearchPathsAreRefused) {
  ScopedEnv path("LOOM_PLUGIN_PATH", "relative/plugins:" + fake_dir());
  auto reg = Registry::load(only({"also/relative"}, true));
  const std::string w = warnings_of(*reg);
  EXPECT_TRUE(contains(w, "search path 'relative/plugins' (LOOM_PLUGIN_PATH) is relative")) << w;
  EXPECT_TRUE(contains(w, "search path 'also/relative' (application) is relative")) << w;
  EXPECT_NE(find_candidate(*reg, "dupa"), nullptr);  // the absolute entry is still searched
}

TEST_F(Isolation, LoomsOwnPluginKeepsItsDeviceName) {
  ScopedEnv null_devices("LOOM_NULL_DEVICES", "1");
  ScopedEnv select("LOOM_PLUGINS_SELECT", "clash,null");
  registry::Options o = only({std::string(LOOM_TEST_CLASH_PLUGIN)}, true);
  o.search_library_dir = true;
  auto reg = Registry::load(o);
  const std::string all = describe(*reg);
  ASSERT_NE(reg->device("null0"), nullptr) << all;
  EXPECT_EQ(reg->device("null0")->info().plugin, "null") << all;
  EXPECT_TRUE(contains(warnings_of(*reg), "device name 'null0' of plugin clash is loom's own plugin null's"))
      << warnings_of(*reg);
}

TEST_F(Isolation, AnOutsideVariantThatWinsIsAWarning) {
  auto builtin = Registry::load([] {
    registry::Options o = only({}, false);
    o.search_library_dir = true;
    return o;
  }());
  const registry::Candidate* best = nullptr;
  for (const auto& c : builtin->candidates()) {
    if (c.plugin == "cpu" && c.fate == Fate::kReady) best = &c;
  }
  if (!best) GTEST_SKIP() << "no cpu plugin in the build's lib folder";
  // Same code, same score, earlier in search order: it wins, visibly.
  const std::string copy = dir_.copy_in(best->path, "libloom-cpu-outside.so");
  registry::Options o = only({copy}, false);
  o.search_library_dir = true;
  auto reg = Registry::load(o);
  const registry::Candidate* outside = find_candidate(*reg, "cpu", "outside");
  ASSERT_NE(outside, nullptr);
  ASSERT_EQ(outside->fate, Fate::kReady) << describe(*reg);
  EXPECT_TRUE(contains(warnings_of(*reg), "variant cpu-outside from application")) << warnings_of(*reg);
  EXPECT_TRUE(contains(warnings_of(*reg), "is used instead of loom's own")) << warnings_of(*reg);
}

// A probe made under another environment never hides a device later (the
// H200 case: a first run without the driver on the path, then a run with
// it). The gated fake finds its device only when LOOM_FAKE_GATE names a
// file that opens; each cached record lists the variables and files the
// plugin read, and is used only while they are as they were.
TEST_F(Isolation, ACachedProbeFollowsTheEnvironmentAndFilesThePluginRead) {
  const std::string gated = std::string(LOOM_TEST_FAKE_DIR) + "/../gated_plugins/libloom-gated.so";
  const std::string driver = dir_.path() + "/driver.txt";
  auto load = [&](bool wanted) {
    registry::Options o = only({gated}, true);
    if (wanted) o.wanted_devices = {"gated0"};
    return Registry::load(o);
  };
  auto records = [&] {
    std::string text;
    for (const auto& e : fs::directory_iterator(dir_.path() + "/cache/probe")) {
      std::ifstream in(e.path());
      text += std::string(std::istreambuf_iterator<char>(in), {});
    }
    return text;
  };
  auto fate_of = [](const Registry& reg) {
    const registry::Candidate* c = find_candidate(reg, "gated");
    return c ? c->fate : Fate::kFailed;
  };
  {
    ScopedEnv gate("LOOM_FAKE_GATE", std::nullopt);
    auto reg = load(false);
    EXPECT_EQ(fate_of(*reg), Fate::kUnavailable) << describe(*reg);
  }
  {
    // Another value of a variable init read: probed again, found.
    ScopedEnv gate("LOOM_FAKE_GATE", driver);
    auto reg = load(true);
    EXPECT_EQ(fate_of(*reg), Fate::kUnavailable) << describe(*reg);  // the file is not there yet
    // The record says what it depended on.
    const std::string r = records();
    EXPECT_TRUE(contains(r, "input env LOOM_FAKE_GATE ")) << r;
    EXPECT_TRUE(contains(r, "input file absent " + driver)) << r;
    EXPECT_TRUE(contains(r, " /etc/ld.so.cache\n")) << r;
    std::ofstream(driver) << "installed\n";
    // A file init looked for appeared ("a driver installed since").
    auto after = load(true);
    ASSERT_NE(after->device("gated0"), nullptr) << describe(*after);
    auto again = load(true);  // and that answer is cached as it is
    ASSERT_NE(again->device("gated0"), nullptr) << describe(*again);
    // A driver that takes its process down: a failure, cached as such ...
    std::ofstream(driver, std::ios::trunc) << "exit\n";
    auto broken = load(false);
    ASSERT_EQ(fate_of(*broken), Fate::kFailed) << describe(*broken);
    EXPECT_TRUE(contains(find_candidate(*broken, "gated")->reason, "exited with status 7 in init"));
    auto cached = load(false);
    EXPECT_TRUE(contains(find_candidate(*cached, "gated")->reason, "cached result")) << describe(*cached);
    // ... until the driver changes: the failure does not outlive it.
    std::ofstream(driver, std::ios::trunc) << "fixed, and longer\n";
    auto fixed = load(false);
    ASSERT_NE(fixed->device("gated0"), nullptr) << describe(*fixed);
  }
  {
    ScopedEnv gate("LOOM_FAKE_GATE", std::nullopt);
    auto reg = load(true);
    EXPECT_EQ(fate_of(*reg), Fate::kUnavailable) << describe(*reg);
  }
}

// A cached record that is stale in a way no input shows still cannot hide a
// device the caller names: a miss probes the cached files again.
TEST_F(Isolation, ANamedDeviceMissingFromTheCacheIsProbedAgain) {
  const std::string gated = std::string(LOOM_TEST_FAKE_DIR) + "/../gated_plugins/libloom-gated.so";
  const std::string driver = dir_.path() + "/driver.txt";
  std::ofstream(driver) << "installed\n";
  ScopedEnv gate("LOOM_FAKE_GATE", driver);
  registry::Options o = only({gated}, true);
  o.wanted_devices = {"gated0"};
  ASSERT_NE(Registry::load(o)->device("gated0"), nullptr);
  // Forge the cached record into "unavailable" with inputs that still hold.
  for (const auto& e : fs::directory_iterator(dir_.path() + "/cache/probe")) {
    std::ifstream in(e.path());
    std::string text(std::istreambuf_iterator<char>(in), {});
    const size_t at = text.find("fate ready");
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, 10, "fate unavailable");
    std::ofstream(e.path(), std::ios::trunc) << text;
  }
  auto reg = Registry::load(o);
  ASSERT_NE(reg->device("gated0"), nullptr) << describe(*reg);
}

}  // namespace
}  // namespace loom::test
