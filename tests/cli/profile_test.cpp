// `loom profile`: on a synthetic ReLU llama made at test time by
// tools/make_sparse_gguf.py (needs /usr/bin/python3 with numpy and
// stories260K.gguf, whose vocabulary it borrows; skips naming what is
// missing), the profile's per-neuron firing shares agree with the ones the
// tool measured on its own sample, and `loom run --sparse-budget
// --sparse-profile` places by it and gives the dense tokens; bad input is
// an error naming why.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/json_test_util.hpp"
#include "cli/run_loom.hpp"
#include "loom/runtime/gguf.hpp"
#include "tool_cache.hpp"

namespace fs = std::filesystem;

namespace {

using loom::test::kPython;
using loom::test::run_loom;
using loom::test::stories_model;

constexpr int kLayers = 2;
constexpr int kFf = 512;

// Any text: the tokenizer is stories260K's, every token drives the model.
std::string text() {
  std::string t;
  for (int i = 0; i < 40; ++i) {
    t += "Once upon a time there was a little girl named Lily. She liked to play in the park with "
         "her dog. ";
  }
  return t;
}

class CliProfile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_ = new std::string();
    if (!fs::exists(stories_model())) {
      *skip_ = stories_model() + " not found (its vocab is borrowed; set LOOM_MODELS_DIR)";
      return;
    }
    if (std::system((std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) != 0) {
      *skip_ = std::string(kPython) + " has no numpy (apt-get install python3-numpy)";
      return;
    }
    char tmpl[] = "/tmp/loom-profile-XXXXXX";
    if (!mkdtemp(tmpl)) {
      *skip_ = "mkdtemp failed";
      return;
    }
    dir_ = new std::string(tmpl);
    // The model is made once per build tree (tests/tool_cache.hpp), not once per test process.
    const std::string tool = LOOM_TEST_SOURCE_DIR "/tools/make_sparse_gguf.py";
    const std::string cmd =
        std::string(kPython) + " " + tool + " {dir}/relu.gguf --tokenizer-from " + stories_model() +
        " --dim 64 --layers " + std::to_string(kLayers) + " --heads 4 --ffn " +
        std::to_string(kFf) +
        " --sparsity 0.9 --recall 0.999 --noise 0.02 --seed 3 --samples 96 >/dev/null";
    std::string why;
    const std::string made = loom::test::cached_tool_dir(
        "profile-relu", cmd, {tool, LOOM_TEST_SOURCE_DIR "/tools/gguf_writer.py", stories_model()},
        &why);
    if (made.empty()) *skip_ = "make_sparse_gguf.py: " + why;
    model_ = new std::string(made + "/relu.gguf");
    std::FILE* f = std::fopen(text_file().c_str(), "wb");
    const std::string t = text();
    if (!f || std::fwrite(t.data(), 1, t.size(), f) != t.size() || std::fclose(f) != 0)
      *skip_ = "cannot write the text";
  }
  static void TearDownTestSuite() {
    if (dir_) fs::remove_all(*dir_);
  }
  void SetUp() override {
    if (!skip_->empty()) GTEST_SKIP() << *skip_;
  }
  static std::string model() { return *model_; }
  static std::string text_file() { return *dir_ + "/text.txt"; }
  static std::string* skip_;
  static std::string* dir_;
  static std::string* model_;
};

std::string* CliProfile::skip_ = nullptr;
std::string* CliProfile::dir_ = nullptr;
std::string* CliProfile::model_ = nullptr;

// Pearson correlation of two equal-length vectors.
double correlation(const float* a, const float* b, size_t n) {
  double ma = 0, mb = 0;
  for (size_t i = 0; i < n; ++i) {
    ma += a[i];
    mb += b[i];
  }
  ma /= static_cast<double>(n);
  mb /= static_cast<double>(n);
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += (a[i] - ma) * (b[i] - mb);
    aa += (a[i] - ma) * (a[i] - ma);
    bb += (b[i] - mb) * (b[i] - mb);
  }
  return ab / std::sqrt(aa * bb + 1e-30);
}

TEST_F(CliProfile, CountsTheModelsFiringShares) {
  const std::string out = *dir_ + "/p.gguf";
  auto r =
      run_loom("profile -m " + model() + " -f " + text_file() + " -o " + out + " --ctx 128 --json",
               "", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = loom::test::parse_json(r.out);
  ASSERT_EQ(j.at("layers").size(), static_cast<size_t>(kLayers)) << r.out;
  const auto tokens = j.at("tokens").get<uint64_t>();
  EXPECT_GT(tokens, 500u);  // several 128-token windows

  auto prof = loom::GgufFile::open(out);
  ASSERT_TRUE(prof.ok()) << prof.status().to_string();
  auto n = prof->get_u64("loom.profile.tokens");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, tokens);
  auto m = loom::GgufFile::open(model());
  ASSERT_TRUE(m.ok());
  for (int il = 0; il < kLayers; ++il) {
    SCOPED_TRACE(il);
    const std::string name = "blk." + std::to_string(il) + ".ffn_freq";
    const loom::GgufTensorInfo* p = prof->find_tensor(name);
    const loom::GgufTensorInfo* s = m->find_tensor(name);
    ASSERT_NE(p, nullptr);
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(p->type, LOOM_TYPE_F32);
    ASSERT_EQ(p->n_elements(), kFf);
    const auto* pf = static_cast<const float*>(p->data);
    const auto* sf = static_cast<const float*>(s->data);
    double mean = 0;
    for (int k = 0; k < kFf; ++k) {
      ASSERT_GE(pf[k], 0.0f);
      ASSERT_LE(pf[k], 1.0f);
      // Whole counts over the tokens.
      const double c = static_cast<double>(pf[k]) * static_cast<double>(tokens);
      ASSERT_NEAR(c, std::round(c), 1e-3 * static_cast<double>(tokens));
      mean += pf[k];
    }
    mean /= kFf;
    // The tool made ~90% of the neurons inactive per token.
    EXPECT_GT(mean, 0.03);
    EXPECT_LT(mean, 0.25);
    EXPECT_NEAR(j.at("layers").at(il).at("sparsity").get<double>(), 1.0 - mean, 1e-3);
    // Which neurons are hot is the model's (its per-neuron biases), not the
    // text's: the tool's own sample (random tokens) ranks them alike.
    EXPECT_GT(correlation(pf, sf, kFf), 0.8);
  }
}

TEST_F(CliProfile, PlacementByTheProfileGivesTheDenseTokens) {
  const std::string out = *dir_ + "/p2.gguf";
  auto r = run_loom("profile -m " + model() + " -p \"" + text().substr(0, 400) + "\" -o " + out, "",
                    true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("layer 1: sparsity"), std::string::npos) << r.out;
  const std::string args = "run -m " + model() + " -p \"Once upon a time\" -n 24 --json";
  auto dense = run_loom(args + " --sparse off", "", false);
  ASSERT_EQ(dense.exit_code, 0) << dense.out;
  // Budget: ~20% of the neurons' rows (gate, up, down_t: 64 f32 each; the
  // predictor's output row of 32 f32 and a bias).
  const int budget = (3 * 64 * 4 + 32 * 4 + 4) * kLayers * kFf / 5;
  auto split =
      run_loom(args + " --device sim0,cpu --plugin-path " + std::string(LOOM_TEST_SIM_DIR) +
                   " --sparse-budget " + std::to_string(budget) + " --sparse-profile " + out,
               "LOOM_SIM_DEVICES=1 LOOM_LOG=llm:info", true);
  ASSERT_EQ(split.exit_code, 0) << split.out;
  EXPECT_NE(split.out.find("bytes of FFN rows on sim0"), std::string::npos) << split.out;
  const size_t brace = split.out.rfind("\n{");
  ASSERT_NE(brace, std::string::npos) << split.out;
  EXPECT_EQ(loom::test::parse_json(split.out.substr(brace + 1)).at("text"),
            loom::test::parse_json(dense.out).at("text"));
  // The same with asynchronous sim streams (the hot share queued on sim0
  // while the cpu computes the cold one), random delays on sim0's work.
  auto async =
      run_loom(args + " --device sim0,cpu --plugin-path " + std::string(LOOM_TEST_SIM_DIR) +
                   " --sparse-budget " + std::to_string(budget) + " --sparse-profile " + out,
               "LOOM_SIM_DEVICES=1 LOOM_SIM_ASYNC=1 LOOM_SIM_JITTER_US=200", false);
  ASSERT_EQ(async.exit_code, 0) << async.out;
  EXPECT_EQ(loom::test::parse_json(async.out).at("text"),
            loom::test::parse_json(dense.out).at("text"));
}

TEST_F(CliProfile, BadInputIsAnErrorNamingWhy) {
  auto none = run_loom("profile -m " + model(), "", true);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("-p TEXT or -f FILE"), std::string::npos) << none.out;
  auto silu = run_loom("profile -m " + stories_model() + " -p \"Once upon a time there was\" -o " +
                           *dir_ + "/s.gguf",
                       "", true);
  EXPECT_EQ(silu.exit_code, 1);
  EXPECT_NE(silu.out.find("not relu"), std::string::npos) << silu.out;
  auto gone = run_loom("run -m " + model() + " -n 2 --device sim0,cpu --plugin-path " +
                           std::string(LOOM_TEST_SIM_DIR) +
                           " --sparse-budget 1000 --sparse-profile " + *dir_ + "/nope.gguf",
                       "LOOM_SIM_DEVICES=1", true);
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.out.find("profile " + *dir_ + "/nope.gguf"), std::string::npos) << gone.out;
  auto missing =
      run_loom("run -m " + model() + " -n 2 --sparse-profile " + *dir_ + "/nope.gguf", "", true);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("only with a sparse budget"), std::string::npos) << missing.out;
}

}  // namespace
