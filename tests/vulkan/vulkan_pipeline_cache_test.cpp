// The Vulkan pipeline cache on disk (plugins/vulkan/pipeline_cache.h): a
// run on vulkan0 leaves one file per device in the loom cache folder, the
// next process reads it back (`loom devices -v` / `loom run -v` say "hit"),
// and a corrupt, truncated or foreign file is ignored and replaced, never
// a failure. Each test uses its own LOOM_CACHE_DIR.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "vulkan_test_util.hpp"

namespace loom::vktest {
namespace {

namespace fs = std::filesystem;

class VulkanPipelineCache : public ::testing::Test {
 protected:
  void SetUp() override {
    auto reg = load_registry();
    if (reg->device("vulkan0") == nullptr) GTEST_SKIP() << "no vulkan0 here:" << report(*reg);
    if (!std::ifstream(model_path()).good()) GTEST_SKIP() << model_path() << " not found (LOOM_MODELS_DIR)";
    char tmpl[] = "/tmp/loom-vkpc-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    env_ = "LOOM_CACHE_DIR=" + dir_;
    run_ = "run --device vulkan0 -n 4 -v -m " + model_path();
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // The one cache file under <dir>/vulkan, or "".
  std::string cache_file() const {
    std::error_code ec;
    std::string found;
    for (const auto& e : fs::directory_iterator(dir_ + "/vulkan", ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("pipelines-", 0) == 0 && name.find(".tmp.") == std::string::npos) {
        EXPECT_TRUE(found.empty()) << "two cache files: " << found << ", " << name;
        found = e.path().string();
      }
    }
    return found;
  }
  std::vector<char> read(const std::string& path) const {
    std::ifstream in(path, std::ios::binary);
    return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  void write(const std::string& path, const std::vector<char>& bytes) const {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  // vulkan0's "pipeline cache at start: ..." line of `loom devices -v`.
  std::string state_at_start() const {
    ProcResult r = run_loom("devices -v", false, env_);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    const size_t dev = r.out.find("  vulkan0 ");
    const size_t at = r.out.find("pipeline cache at start: ", dev == std::string::npos ? 0 : dev);
    if (dev == std::string::npos || at == std::string::npos) return "(no line in: " + r.out + ")";
    return r.out.substr(at, r.out.find('\n', at) - at);
  }
  // A run on vulkan0 that must print the published text.
  ProcResult good_run() const {
    ProcResult r = run_loom(run_, true, env_);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("Once upon a time"), std::string::npos) << r.out;
    return r;
  }
  std::string dir_, env_, run_;
};

TEST_F(VulkanPipelineCache, ASecondStartReadsTheFileTheFirstWrote) {
  EXPECT_NE(state_at_start().find("miss (no file)"), std::string::npos) << state_at_start();
  ProcResult first = good_run();
  EXPECT_NE(first.out.find("pipeline cache at start: miss (no file)"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("pipelines created: "), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("pipelines created: 0 "), std::string::npos) << first.out;
  const std::string file = cache_file();
  ASSERT_FALSE(file.empty()) << "no cache file under " << dir_ << "/vulkan";
  EXPECT_NE(file.find("/vulkan/pipelines-"), std::string::npos) << file;

  EXPECT_NE(state_at_start().find("hit ("), std::string::npos) << state_at_start();
  ProcResult second = good_run();
  EXPECT_NE(second.out.find("pipeline cache at start: hit ("), std::string::npos) << second.out;
  EXPECT_EQ(cache_file(), file);  // the same file, replaced whole
}

// Every kind of damage is ignored with the reason, the run is unharmed, and
// the file is written again whole.
TEST_F(VulkanPipelineCache, ACorruptOrForeignFileIsIgnoredAndReplaced) {
  good_run();
  const std::string file = cache_file();
  ASSERT_FALSE(file.empty());
  const std::vector<char> good = read(file);
  ASSERT_GT(good.size(), 68u);

  struct Damage {
    const char* what;
    std::vector<char> bytes;
    const char* reason;
  };
  std::vector<char> flipped = good;
  flipped.at(70) = static_cast<char>(flipped.at(70) ^ 0x5a);  // in the driver data
  std::vector<char> other_driver = good;
  other_driver[16] = static_cast<char>(other_driver[16] ^ 1);  // driverVersion in loom's header
  const std::vector<Damage> damages = {
      {"garbage", std::vector<char>{'n', 'o', 't', ' ', 'a', ' ', 'c', 'a', 'c', 'h', 'e'}, "shorter than its header"},
      {"truncated", std::vector<char>(good.begin(), good.end() - 1), "truncated or padded data"},
      {"a flipped byte", flipped, "checksum mismatch"},
      {"another driver version", other_driver, "written by another driver version"},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.what);
    write(file, d.bytes);
    const std::string state = state_at_start();
    EXPECT_NE(state.find(std::string("ignored (") + d.reason), std::string::npos) << state;
    ProcResult r = good_run();
    EXPECT_NE(r.out.find("pipeline cache at start: ignored ("), std::string::npos) << r.out;
    EXPECT_NE(state_at_start().find("hit ("), std::string::npos) << "not rewritten: " << state_at_start();
  }
}

TEST_F(VulkanPipelineCache, NoCacheFolderMeansNoFile) {
  ProcResult r = run_loom(run_, true, "LOOM_CACHE_DIR=relative/dir XDG_CACHE_HOME= HOME=");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("pipeline cache at start: off (no cache folder"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists("relative/dir"));
}

}  // namespace
}  // namespace loom::vktest
