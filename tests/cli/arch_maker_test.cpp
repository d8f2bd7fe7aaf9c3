// tools/make_arch_gguf.py: a random-weight file of every architecture it
// knows, made at test time (needs /usr/bin/python3 with numpy and
// stories260K.gguf, whose vocabulary it borrows; skips naming what is
// missing). `loom run` generates with every one of them (kMakerArchs below) in
// every weight type the maker writes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli/run_loom.hpp"

namespace fs = std::filesystem;

namespace {

// Every --arch the maker knows (its ARCHS).
const char* const kMakerArchs[] = {
    "llama",     "mixtral", "qwen2",    "qwen3",      "qwen3moe", "phi3",       "gemma2",   "gemma3",
    "gemma",     "smollm3", "granite",  "granitemoe", "olmo2",    "qwen2vl",    "exaone",   "ernie4_5",
    "command-r", "cohere2", "gpt2",     "gptneox",    "phi2",     "starcoder2", "stablelm", "qwen2moe",
    "olmoe",     "glm4",    "minicpm",  "internlm2",  "exaone4",  "bloom",      "mpt",      "falcon",
    "starcoder", "olmo",    "nemotron", "arcee",      "seed_oss", "baichuan",   "qwen3vl",  "qwen3vlmoe"};

using loom::test::kPython;
using loom::test::run_loom;
using loom::test::stories_model;

class ArchMaker : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(stories_model()))
      GTEST_SKIP() << stories_model() << " not found (its vocab is borrowed; set LOOM_MODELS_DIR)";
    if (std::system((std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) != 0) {
      GTEST_SKIP() << kPython << " has no numpy (apt-get install python3-numpy)";
    }
    char tmpl[] = "/tmp/loom-arch-maker-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // Makes the file; its path ("" when the maker failed, with a test failure).
  std::string make(const std::string& arch, const std::string& type, const std::string& extra = "") {
    const std::string out = dir_ + "/" + arch + "-" + type + ".gguf";
    const std::string cmd = std::string(kPython) +
                            " " LOOM_TEST_SOURCE_DIR "/tools/make_arch_gguf.py --arch " + arch +
                            " --tokenizer-from " + stories_model() + " --type " + type + " " +
                            extra + " " + out + " >/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return fs::exists(out) ? out : "";
  }
  std::string dir_;
};

TEST_F(ArchMaker, LoomRunsEveryArchitectureItKnowsInEveryType) {
  for (const char* arch : kMakerArchs) {
    for (const char* type : {"f32", "f16", "q8_0", "q4_0"}) {
      SCOPED_TRACE(std::string(arch) + " " + type);
      const std::string a = arch;
      const std::string f = make(arch, type,
                                 a == "llama"                           ? "--rope-freqs"
                                 : a == "qwen3moe" || a == "qwen3vlmoe" ? "--expert-ffn 64"
                                 : a == "baichuan"                      ? "--layers 40 --dim 32"
                                                                        : "");
      ASSERT_FALSE(f.empty());
      const auto r = run_loom("run -m " + f + " -p 'Once upon a time' -n 6 --device cpu --json", "", false, 120);
      EXPECT_EQ(r.exit_code, 0) << r.out;
      const std::string file_arch = a == "mixtral" ? "llama" : a;  // Mixtral's files say llama
      EXPECT_NE(r.out.find("\"architecture\":\"" + file_arch + "\""), std::string::npos) << r.out;
    }
  }
}

// Rope scaling keys: linear and YaRN files run; YaRN on gemma3 (local layers
// with a RoPE base of their own) is refused by name.
TEST_F(ArchMaker, RopeScalingFilesRunOrAreRefusedByName) {
  for (const char* scaling : {"linear", "yarn"}) {
    for (const char* arch : {"llama", "qwen2", "qwen3"}) {
      SCOPED_TRACE(std::string(arch) + " " + scaling);
      const std::string f = make(arch, "f32", std::string("--rope-scaling ") + scaling + " --rope-factor 8");
      ASSERT_FALSE(f.empty());
      const auto r = run_loom("run -m " + f + " -p 'Once upon a time' -n 4 --device cpu", "", false, 120);
      EXPECT_EQ(r.exit_code, 0) << r.out;
    }
  }
  {
    SCOPED_TRACE("phi3 longrope");
    const std::string f = make("phi3", "f32", "--longrope --ctx 512 --rope-orig-ctx 128");
    ASSERT_FALSE(f.empty());
    // Past the original context (the long factors) and within it (the short).
    for (const char* ctx : {"512", "128"}) {
      const auto r = run_loom("run -m " + f + " -p 'Once upon a time' -n 4 -c " + ctx + " --device cpu", "", false, 120);
      EXPECT_EQ(r.exit_code, 0) << r.out;
    }
  }
  const std::string g = make("gemma3", "f32", "--rope-scaling yarn");
  ASSERT_FALSE(g.empty());
  const auto r = run_loom("run -m " + g + " -p Once -n 2 --device cpu", "", true, 120);
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("gemma3.rope.scaling.type = yarn: not implemented"), std::string::npos) << r.out;
}

// The common way to run a big mixture on a small GPU: every layer on the
// GPU but the experts, kept on the CPU by a llama.cpp-style -ot pattern (a
// match anywhere in the name); a pattern that matches nothing is said.
TEST_F(ArchMaker, ExpertsOverriddenToTheCpuBesideVulkan0) {
  const std::string f = make("qwen3moe", "q8_0", "--expert-ffn 64");
  ASSERT_FALSE(f.empty());
  const auto devices = run_loom("devices", "", true, 60);
  if (devices.out.find("vulkan0") == std::string::npos) GTEST_SKIP() << "no vulkan0 here";
  const auto r = run_loom("run -m " + f + " -p Once -n 4 --device vulkan0,cpu -ngl 99 -ot 'ffn_.*_exps=cpu'" +
                              " -ot 'no_such_tensor=cpu'",
                          "", true, 120);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("vulkan0: layers 0-1; cpu: 6 overridden tensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tensor override 'no_such_tensor' matches no tensor of this model"), std::string::npos) << r.out;
}

TEST_F(ArchMaker, HelpListsTheArchitecturesAndBadSizesAreRefused) {
  const std::string help = std::string(kPython) + " " LOOM_TEST_SOURCE_DIR "/tools/make_arch_gguf.py --help";
  FILE* p = popen(help.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  for (const char* arch : kMakerArchs) {
    EXPECT_NE(out.find(arch), std::string::npos) << arch;
  }
  const std::string bad = std::string(kPython) +
                          " " LOOM_TEST_SOURCE_DIR "/tools/make_arch_gguf.py --arch llama" +
                          " --tokenizer-from " + stories_model() + " --heads 3 --kv-heads 2 " +
                          dir_ + "/x.gguf 2>/dev/null";
  EXPECT_NE(std::system(bad.c_str()), 0);
  EXPECT_FALSE(fs::exists(dir_ + "/x.gguf"));
}

}  // namespace
