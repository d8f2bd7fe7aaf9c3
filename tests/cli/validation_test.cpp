// `loom` against hostile model files and settings (issue 11, findings 4
// and 5): every bad input ends the command with exit status 1 and a message
// naming it, never an abort, a hang or garbage with exit status 0; and
// LOOM_DEVICES is honoured by run, plan and bench.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/json_test_util.hpp"
#include "cli/run_loom.hpp"
#include "llm/tiny_llama.hpp"

namespace fs = std::filesystem;

namespace {

using loom::test::run_loom;
using loom::test::TinyLlama;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A folder for the test's model files, removed at the end.
class CliValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/loom-cli-validation-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Writes m as <dir>/<name>.gguf and returns the path.
  std::string write(const TinyLlama& m, const std::string& name) {
    const std::string path = dir_ + "/" + name + ".gguf";
    EXPECT_TRUE(m.write(path));
    return path;
  }
  std::string dir_;
};

TinyLlama with_tokenizer() {
  TinyLlama m;
  m.n_tokens = 6;
  return m;
}

// 2^32 layers: run, plan and bench used to abort with an uncaught
// std::bad_alloc (exit 134).
TEST_F(CliValidation, HugeBlockCountIsAnErrorInEveryModelCommand) {
  TinyLlama m = with_tokenizer();
  m.keys["block_count"] = uint64_t{1} << 32;
  const std::string model = write(m, "layers");
  for (const std::string cmd : {"run -n 2", "plan", "bench -p 1 -n 1 -r 1"}) {
    auto r = run_loom(cmd + " -m " + model);
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.out;
    EXPECT_TRUE(has(r.out, "llama.block_count = 4294967296: above loom's limit of 4096 layers")) << cmd << ": "
                                                                                                  << r.out;
    EXPECT_FALSE(has(r.out, "terminate")) << r.out;
  }
}

// A FIFO as -m used to block in open() forever.
TEST_F(CliValidation, NonRegularModelFilesAreRefusedAtOnce) {
  const std::string fifo = dir_ + "/model.gguf";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto r = run_loom("run -m " + fifo, "", true, 30);
  EXPECT_NE(r.exit_code, 124) << "loom run blocked on a FIFO";
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r.out, fifo + ": is a FIFO (named pipe), not a regular file")) << r.out;

  auto zero = run_loom("plan -m /dev/zero", "", true, 30);
  EXPECT_EQ(zero.exit_code, 1) << zero.out;
  EXPECT_TRUE(has(zero.out, "/dev/zero: is a character device")) << zero.out;
  auto dir = run_loom("bench -m " + dir_, "", true, 30);
  EXPECT_EQ(dir.exit_code, 1) << dir.out;
  EXPECT_TRUE(has(dir.out, dir_ + ": is a directory")) << dir.out;
}

// One token more in the tokenizer than rows in token_embd: the prompt's
// token 6 used to fail the first step, after the prompt had been echoed.
TEST_F(CliValidation, VocabularyMismatchFailsBeforeThePromptIsEchoed) {
  TinyLlama m;
  m.n_tokens = 7;
  const std::string model = write(m, "vocab");
  auto r = run_loom("run -m " + model + " -n 4 -p 'a b c'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "the tokenizer has 7 tokens (tokenizer.ggml.tokens), tensor 'token_embd.weight' has 6 "
                         "rows: vocabulary sizes differ"))
      << r.out;
  EXPECT_FALSE(has(r.out, "a b c")) << "the prompt was echoed before the error:\n" << r.out;
}

// NaN weights used to generate garbage with exit status 0.
TEST_F(CliValidation, NanWeightsFailTheRunNamingThePosition) {
  TinyLlama m = with_tokenizer();
  m.fill_tensor = "blk.0.ffn_down.weight";
  m.fill_value = std::nanf("");
  const std::string model = write(m, "nan");
  auto r = run_loom("run -m " + model + " -n 4 -p a");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "[llm.eval] logits of the token at position 1 are not finite: NaN")) << r.out;
  auto b = run_loom("bench -m " + model + " -p 2 -n 1 -r 1");
  EXPECT_EQ(b.exit_code, 1) << b.out;
  EXPECT_TRUE(has(b.out, "are not finite")) << b.out;

  auto check = run_loom("run -m " + model + " -n 4 -p a", "LOOM_CHECK_FINITE=1");
  EXPECT_EQ(check.exit_code, 1) << check.out;
  EXPECT_TRUE(has(check.out, "[llm.check_finite] step at positions [0, 2): node")) << check.out;
  EXPECT_TRUE(has(check.out, "MUL_MAT")) << check.out;
  EXPECT_TRUE(has(check.out, "'blk.0.ffn_down.weight'")) << check.out;
  EXPECT_TRUE(has(check.out, "on cpu, is the first to produce a non-finite value: NaN")) << check.out;
}

// A good model under LOOM_CHECK_FINITE=1 runs and prints the same text.
TEST_F(CliValidation, CheckFiniteLeavesGoodModelsAlone) {
  const std::string model = write(with_tokenizer(), "good");
  auto plain = run_loom("run -m " + model + " -n 6 -p a --json", "", false);
  auto checked = run_loom("run -m " + model + " -n 6 -p a --json", "LOOM_CHECK_FINITE=1", false);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  ASSERT_EQ(checked.exit_code, 0) << checked.out;
  nlohmann::json a, b;
  a = loom::test::parse_json(plain.out);
  ASSERT_TRUE(a.is_object()) << plain.out;
  b = loom::test::parse_json(checked.out);
  ASSERT_TRUE(b.is_object()) << checked.out;
  EXPECT_EQ(a.at("text").get<std::string>(), b.at("text").get<std::string>());
}

// LOOM_DEVICES used to be read by `loom check` only.
TEST_F(CliValidation, LoomDevicesIsHonouredAndDeviceWins) {
  const std::string model = write(with_tokenizer(), "devices");
  for (const std::string cmd : {"run -n 2", "plan", "bench -p 1 -n 1 -r 1"}) {
    auto r = run_loom(cmd + " -m " + model, "LOOM_DEVICES=nosuch");
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.out;
    EXPECT_TRUE(has(r.out, "LOOM_DEVICES=nosuch: [registry.select] device 'nosuch' not found")) << cmd << ": "
                                                                                                 << r.out;
  }
  auto wins = run_loom("plan -m " + model + " --device cpu", "LOOM_DEVICES=nosuch", false);
  EXPECT_EQ(wins.exit_code, 0) << wins.out;

  const std::string sim = "LOOM_SIM_DEVICES=1 LOOM_DEVICES=sim0,cpu";
  auto r = run_loom("run -m " + model + " -n 2 --json --plugin-path " + std::string(LOOM_TEST_SIM_DIR), sim, false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j;
  j = loom::test::parse_json(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  ASSERT_EQ(j.at("devices").size(), 2u) << r.out;
  EXPECT_EQ(j.at("devices").at(0).get<std::string>(), "sim0");
  EXPECT_EQ(j.at("devices").at(1).get<std::string>(), "cpu");
}

// A malformed value is a warning naming the variable and the value.
TEST_F(CliValidation, MalformedSettingsAreWarnings) {
  const std::string model = write(with_tokenizer(), "settings");
  for (const std::string var : {"LOOM_CHECK_FINITE", "LOOM_LLM_FUSED_ATTN", "LOOM_SCHED_DEBUG", "LOOM_CPU_PROFILE",
                                "LOOM_CPU_REFERENCE", "LOOM_CPU_REPACK"}) {
    auto r = run_loom("run -m " + model + " -n 2", var + "=abc");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_TRUE(has(r.out, "[env] " + var + "='abc' is not 1 or 0; using ")) << r.out;
  }
  auto work = run_loom("run -m " + model + " -n 2", "LOOM_CPU_PARALLEL_MIN_WORK=10k");
  EXPECT_TRUE(has(work.out, "[env] LOOM_CPU_PARALLEL_MIN_WORK='10k' is not a whole number")) << work.out;
  auto pipe = run_loom("run -m " + model + " -n 2", "LOOM_SCHED_PIPELINING=0");
  EXPECT_TRUE(has(pipe.out, "[env] LOOM_SCHED_PIPELINING='0' is not a whole number in [1, 64]")) << pipe.out;
  auto threads = run_loom("run -m " + model + " -n 2", "LOOM_CPU_THREADS=abc");
  EXPECT_EQ(threads.exit_code, 0) << threads.out;
  EXPECT_TRUE(has(threads.out, "LOOM_CPU_THREADS=abc is not a whole number")) << threads.out;
}

}  // namespace
