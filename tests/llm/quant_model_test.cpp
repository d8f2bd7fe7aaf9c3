// Real quantized GGUF files (../shared/models/quant/: one random-weight
// llama, dim 256, quantized by a widely used GGUF tool to every common type;
// three also dequantized back to F32 by it). Every file loads and generates
// on the cpu; where the tool's F32 twin exists, greedy tokens from BOS agree
// with the twin's for the first steps and the logits' relative error is
// reported.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "llm/generate.hpp"
#include "llm/llama_model.hpp"
#include "llm/llama_session.hpp"
#include "llm_test_util.hpp"
#include "loom/registry.hpp"

namespace loom::llm {
namespace {

namespace fs = std::filesystem;

std::string quant_file(const std::string& type) { return test::models_dir() + "/quant/synth256-" + type + ".gguf"; }

class QuantModels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(quant_file("q4_k_m"))) GTEST_SKIP() << quant_file("q4_k_m") << " not found (set LOOM_MODELS_DIR)";
    registry::Options o;
    o.paths = {LOOM_TEST_PLUGIN_DIR};
    o.use_env = false;
    reg_ = registry::Registry::load(o);
    ASSERT_NE(reg_->device("cpu"), nullptr);
  }

  std::unique_ptr<LlamaModel> load(const std::string& path, const std::vector<std::string>& devices = {"cpu"}) {
    LoadOptions lo;
    for (const auto& d : devices) lo.devices.push_back(reg_->device(d));
    auto m = LlamaModel::load(path, lo);
    EXPECT_TRUE(m.ok()) << path << ": " << m.status().to_string();
    return m.ok() ? std::move(m).value() : nullptr;
  }

  // Greedy steps from BOS: the token chosen at each step and the logits of
  // the first step.
  static std::vector<TokenId> greedy(LlamaModel* m, int n, std::vector<float>* first_logits) {
    auto s = LlamaSession::create(m, {});
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return {};
    std::vector<TokenId> out;
    std::vector<TokenId> in = {1};  // BOS of the stories vocabulary these files carry
    for (int i = 0; i < n; ++i) {
      std::vector<float> logits;
      const Status st = (*s)->eval(in, false, &logits);
      EXPECT_TRUE(st.ok()) << st.to_string();
      if (!st.ok()) break;
      if (i == 0 && first_logits) *first_logits = logits;
      TokenId best = 0;
      for (size_t k = 1; k < logits.size(); ++k) {
        if (logits[k] > logits[static_cast<size_t>(best)]) best = static_cast<TokenId>(k);
      }
      out.push_back(best);
      in = {best};
    }
    return out;
  }

  std::unique_ptr<registry::Registry> reg_;
};

TEST_F(QuantModels, EveryTypeLoadsAndGenerates) {
  for (const char* t : {"bf16", "q4_1", "q5_0", "q5_1", "iq4_nl", "q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k"}) {
    SCOPED_TRACE(t);
    if (!fs::exists(quant_file(t))) continue;
    auto m = load(quant_file(t));
    ASSERT_NE(m, nullptr);
    const std::vector<TokenId> toks = greedy(m.get(), 4, nullptr);
    ASSERT_EQ(toks.size(), 4u);
    for (TokenId id : toks) EXPECT_LT(id, m->hparams().n_vocab);
  }
}

TEST_F(QuantModels, GreedyTokensFollowTheToolsF32Twin) {
  for (const char* t : {"iq4_nl", "q2_k", "q3_k_m"}) {
    SCOPED_TRACE(t);
    const std::string twin = test::models_dir() + "/quant/synth256-" + t + ".deq-f32.gguf";
    if (!fs::exists(twin)) continue;
    auto q = load(quant_file(t));
    auto f = load(twin);
    ASSERT_NE(q, nullptr);
    ASSERT_NE(f, nullptr);
    std::vector<float> lq, lf;
    const std::vector<TokenId> tq = greedy(q.get(), 8, &lq);
    const std::vector<TokenId> tf = greedy(f.get(), 8, &lf);
    EXPECT_EQ(tq, tf);
    ASSERT_EQ(lq.size(), lf.size());
    double num = 0, den = 0;
    for (size_t i = 0; i < lq.size(); ++i) {
      num += (double(lq[i]) - lf[i]) * (double(lq[i]) - lf[i]);
      den += double(lf[i]) * lf[i];
    }
    const double rel = std::sqrt(num / den);
    std::cout << "[ quant ] " << t << " vs its F32 twin: first-step logits relative L2 error " << rel << "\n";
    EXPECT_LT(rel, 0.05);
  }
}

// A device without kernels for the ABI 1.2 types (vulkan today) declines
// those nodes; with the cpu beside it the scheduler puts them there and the
// tokens are the cpu's. Never garbage.
TEST_F(QuantModels, DevicesWithoutTheTypeLeaveItToTheCpu) {
  if (reg_->device("vulkan0") == nullptr) GTEST_SKIP() << "no vulkan0 (the vulkan plugin is not built or finds no device)";
  auto cpu = load(quant_file("q4_k_m"));
  auto mixed = load(quant_file("q4_k_m"), {"vulkan0", "cpu"});
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(greedy(mixed.get(), 6, nullptr), greedy(cpu.get(), 6, nullptr));
}

}  // namespace
}  // namespace loom::llm
