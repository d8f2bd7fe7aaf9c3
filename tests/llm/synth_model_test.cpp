// Synthetic llama models from ../shared/tools/make_synth_gguf.py: F32, F16,
// Q8_0 and Q4_0 weights drawn from the same seed (so the quantized models are
// roundings of the F32 one), grouped-query attention with n_head_kv =
// n_head/2 and n_head/4. Each loads and generates; quantized logits track the
// F32 logits within a per-type bound; batched prefill agrees with decode
// steps; blas,cpu gives the cpu tokens.
//
// Needs /usr/bin/python3 with numpy (Debian python3-numpy); the tests skip
// with the reason when it or the script is missing. LOOM_SYNTH_TOOL names
// another copy of the script.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/generate.hpp"
#include "llm/session/llama_session.hpp"
#include "llm_test_util.hpp"
#include "loom/registry/registry.hpp"
#include "story_run.hpp"
#include "tool_cache.hpp"

namespace loom::llm {
namespace {

using test::models_dir;

namespace fs = std::filesystem;

constexpr char kPython[] = "/usr/bin/python3";
constexpr int kHeads = 8;

std::string tool_path() {
  const char* env = std::getenv("LOOM_SYNTH_TOOL");
  if (env && *env) return env;
  return models_dir() + "/../tools/make_synth_gguf.py";
}

// The generated files, made once for the whole suite: name -> path.
class SynthModels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_reason_ = new std::string();
    files_ = new std::map<std::string, std::string>();
    const std::string stories = models_dir() + "/stories260K.gguf";
    if (!fs::exists(stories)) {
      *skip_reason_ = stories + " not found (its vocab is borrowed; set LOOM_MODELS_DIR)";
      return;
    }
    if (!fs::exists(tool_path())) {
      *skip_reason_ = tool_path() + " not found (set LOOM_SYNTH_TOOL)";
      return;
    }
    if (std::system((std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) != 0) {
      *skip_reason_ = std::string(kPython) + " has no numpy (apt-get install python3-numpy)";
      return;
    }
    struct Spec {
      const char* name;
      const char* type;
      int kv_heads;
    };
    // dim 64 (head size 8), ffn 160: multiples of the 32-element quant block.
    const Spec specs[] = {{"f32", "f32", 4},   {"f16", "f16", 4},  {"q8_0", "q8_0", 4},
                          {"q4_0", "q4_0", 4}, {"gqa2", "f32", 4}, {"gqa4", "f32", 2}};
    for (const Spec& s : specs) {
      // Made once per build tree (tests/tool_cache.hpp), not once per test process.
      const std::string cmd =
          std::string(kPython) + " " + tool_path() + " {dir}/m.gguf --tokenizer-from " + stories +
          " --dim 64 --layers 2 --heads " + std::to_string(kHeads) + " --kv-heads " +
          std::to_string(s.kv_heads) + " --ffn 160 --type " + s.type + " --seed 7 >/dev/null";
      std::string why;
      const std::string dir =
          test::cached_tool_dir(std::string("synth-") + s.name, cmd, {tool_path(), stories}, &why);
      if (dir.empty()) {
        *skip_reason_ = "make_synth_gguf.py: " + why;
        return;
      }
      (*files_)[s.name] = dir + "/m.gguf";
    }
  }

  void SetUp() override {
    if (!skip_reason_->empty()) GTEST_SKIP() << *skip_reason_;
    registry::Options o;
    o.paths = {LOOM_TEST_PLUGIN_DIR};
    o.use_env = false;
    reg_ = registry::Registry::load(o);
    ASSERT_NE(reg_->device("cpu"), nullptr);
  }

  std::unique_ptr<LlamaModel> load(const std::string& name,
                                   const std::vector<std::string>& devices = {"cpu"}) {
    LoadOptions lo;
    for (const std::string& d : devices) lo.devices.push_back(reg_->device(d));
    auto m = LlamaModel::load(files_->at(name), lo);
    EXPECT_TRUE(m.ok()) << name << ": " << m.status().to_string();
    return m.ok() ? std::move(m).value() : nullptr;
  }

  // Logits of every position of `prompt` (batched) or the last one.
  static std::vector<float> logits(LlamaModel* m, const std::vector<TokenId>& prompt,
                                   int64_t n_batch, bool all) {
    SessionOptions so;
    so.n_batch = n_batch;
    // The tests compare logits of different paths (batching, devices) to
    // f32 rounding; an F16 cache would round K/V values that differ in the
    // last f32 bit to different halves (1e-3 apart).
    so.kv_type = LOOM_TYPE_F32;
    auto s = LlamaSession::create(m, so);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return {};
    std::vector<float> out;
    const Status st = (*s)->eval(prompt, all, &out);
    EXPECT_TRUE(st.ok()) << st.to_string();
    return out;
  }

  static std::vector<TokenId> greedy(LlamaModel* m, int32_t n) { return test::greedy(m, n); }
  static const std::vector<TokenId>& prompt() { return test::story_prompt(); }

  static std::string* skip_reason_;
  static std::map<std::string, std::string>* files_;
  std::unique_ptr<registry::Registry> reg_;
};

std::string* SynthModels::skip_reason_ = nullptr;
std::map<std::string, std::string>* SynthModels::files_ = nullptr;

// ||a - b|| / ||b||
double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

TEST_F(SynthModels, EveryTypeLoadsAndGenerates) {
  for (const char* name : {"f32", "f16", "q8_0", "q4_0", "gqa2", "gqa4"}) {
    SCOPED_TRACE(name);
    auto m = load(name);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->hparams().n_head, kHeads);
    const std::vector<TokenId> toks = greedy(m.get(), 12);
    ASSERT_FALSE(toks.empty());  // random weights may sample EOS early
    EXPECT_LE(toks.size(), 12u);
    for (TokenId t : toks) EXPECT_LT(t, m->hparams().n_vocab);
  }
  EXPECT_EQ(load("gqa4")->hparams().n_head_kv, kHeads / 4);
  EXPECT_EQ(load("gqa2")->hparams().n_head_kv, kHeads / 2);
}

TEST_F(SynthModels, QuantizedLogitsTrackF32) {
  // The same random weights, rounded: the logits' relative error grows with
  // the rounding error of the type: measured here at 8e-4 for F16, 2.1e-2 for
  // Q8_0 and 0.42 for Q4_0 (each about 4x the type's per-weight RMS rounding
  // error: 0.03%, 0.5%, 7.6%). Unrelated logits would give ~1.4.
  auto ref_model = load("f32");
  ASSERT_NE(ref_model, nullptr);
  const std::vector<float> ref = logits(ref_model.get(), prompt(), 64, true);
  ASSERT_FALSE(ref.empty());
  const std::map<std::string, double> bound = {{"f16", 3e-3}, {"q8_0", 6e-2}, {"q4_0", 0.7}};
  for (const auto& [name, b] : bound) {
    auto m = load(name);
    ASSERT_NE(m, nullptr);
    const std::vector<float> got = logits(m.get(), prompt(), 64, true);
    ASSERT_EQ(got.size(), ref.size());
    const double err = rel_l2(got, ref);
    EXPECT_LT(err, b) << name << " logits vs f32";
    EXPECT_GT(err, 0.0) << name << ": identical to f32 — was the type really used?";
    std::cout << "[ synth ] " << name << " vs f32: relative L2 error " << err << "\n";
  }
}

TEST_F(SynthModels, GqaBatchedPrefillMatchesDecodeSteps) {
  for (const char* name : {"gqa2", "gqa4", "q4_0"}) {
    SCOPED_TRACE(name);
    auto m = load(name);
    ASSERT_NE(m, nullptr);
    const std::vector<float> batched = logits(m.get(), prompt(), 64, true);
    const std::vector<float> single = logits(m.get(), prompt(), 1, true);
    ASSERT_EQ(batched.size(), prompt().size() * static_cast<size_t>(m->hparams().n_vocab));
    ASSERT_EQ(single.size(), batched.size());
    EXPECT_LT(rel_l2(single, batched), 1e-5);
  }
}

TEST_F(SynthModels, BlasAndCpuGiveTheCpuTokens) {
  if (!reg_->device("blas")) GTEST_SKIP() << "blas plugin not built";
  for (const char* name : {"f16", "q8_0", "q4_0"}) {
    SCOPED_TRACE(name);
    auto cpu = load(name);
    auto both = load(name, {"blas", "cpu"});
    ASSERT_NE(cpu, nullptr);
    ASSERT_NE(both, nullptr);
    const std::vector<float> a = logits(cpu.get(), prompt(), 64, true);
    const std::vector<float> b = logits(both.get(), prompt(), 64, true);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_LT(rel_l2(b, a), 1e-4);
  }
}

}  // namespace
}  // namespace loom::llm
