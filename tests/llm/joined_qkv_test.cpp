// Q, K and V joined into one product at load (LlamaModel::plan_joined_qkv:
// a layer's three projections of one type and K, without biases or Q/K
// norms, become one wqkv, the form files with attn_qkv already have, where
// the weights are copied anyway): the joined model runs one MUL_MAT where
// the separate one ran three and gives the separate model's tokens and
// logits; LOOM_QKV_JOIN=0 keeps them apart; weights the kernels read from
// the file's mapping in place are not joined. stories260K on a simulated
// device with memory of its own (every layer there) and on the cpu; a
// Q5_0 model on the cpu (its own weight layout: copied anyway).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/llama_session.hpp"
#include "llm_test_util.hpp"
#include "loom/registry/registry.hpp"
#include "registry/registry_test_util.hpp"

namespace loom::llm {
namespace {

using test::kSimOps;
using test::ScopedEnv;
using test::stories_path;

class JoinedQkv : public ::testing::Test {
 protected:
  void SetUp() override {
    ScopedEnv n("LOOM_SIM_DEVICES", std::optional<std::string>("1"));
    ScopedEnv ops("LOOM_SIM_OPS_0", std::optional<std::string>(kSimOps));
    ScopedEnv host("LOOM_SIM_HOST_0", std::nullopt);
    reg_ = registry::Registry::load(test::only({std::string(LOOM_TEST_SIM_DIR) + "/libloom-sim.so",
                                                std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-cpu.so"}));
    ASSERT_NE(reg_->device("cpu"), nullptr) << test::describe(*reg_);
  }

  // The model on `names` (every layer on the first) with LOOM_QKV_JOIN
  // unset (join where it can) or "0".
  std::unique_ptr<LlamaModel> load(const std::string& path, const std::vector<std::string>& names, bool join) {
    ScopedEnv env("LOOM_QKV_JOIN", join ? std::nullopt : std::optional<std::string>("0"));
    LoadOptions lo;
    for (const std::string& n : names) lo.devices.push_back(reg_->device(n));
    lo.n_gpu_layers = names.size() > 1 ? 1000 : 0;
    auto m = LlamaModel::load(path, lo);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    return m.ok() ? std::move(m).value() : nullptr;
  }

  // Prompt logits and 24 greedy tokens of both loads; whether each joined.
  void compare(const std::string& path, const std::vector<std::string>& names, bool expect_joined) {
    std::vector<float> logits[2];
    std::vector<TokenId> greedy[2];
    for (bool join : {false, true}) {
      SCOPED_TRACE(join ? "join" : "LOOM_QKV_JOIN=0");
      std::unique_ptr<LlamaModel> m = load(path, names, join);
      ASSERT_NE(m, nullptr);
      for (const LlamaLayer& l : m->layers) {
        EXPECT_EQ(l.wqkv != nullptr, join && expect_joined);
        EXPECT_EQ(l.wq == nullptr, join && expect_joined);
      }
      if (join && expect_joined) {
        const LlamaHparams& h = m->hparams();
        EXPECT_EQ(m->layers[0].wqkv->ne[1], h.q_dim() + 2 * h.kv_dim());
        EXPECT_EQ(m->weight_device(m->layers[0].wqkv), reg_->device(names[0]));
      }
      auto t = Tokenizer::from_gguf(m->file());
      ASSERT_TRUE(t.ok()) << t.status().to_string();
      auto s = LlamaSession::create(m.get(), SessionOptions{});
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      auto dot = (*s)->plan_dot(3);
      ASSERT_TRUE(dot.ok()) << dot.status().to_string();
      EXPECT_EQ(dot->find("attn_qkv.weight (joined)") != std::string::npos, join && expect_joined);
      const std::vector<TokenId> prompt = t->encode("Once upon a time, there was a little dog named Max.", true);
      ASSERT_TRUE((*s)->eval(prompt, true, &logits[join]).ok());
      TokenId next = static_cast<TokenId>(std::max_element(logits[join].end() - m->hparams().n_vocab, logits[join].end()) -
                                          (logits[join].end() - m->hparams().n_vocab));
      for (int k = 0; k < 24; ++k) {
        greedy[join].push_back(next);
        std::vector<float> row;
        ASSERT_TRUE((*s)->eval({next}, false, &row).ok());
        next = static_cast<TokenId>(std::max_element(row.begin(), row.end()) - row.begin());
      }
    }
    EXPECT_EQ(greedy[0], greedy[1]);
    ASSERT_EQ(logits[0].size(), logits[1].size());
    float max_abs = 0.0f, max_diff = 0.0f;
    for (size_t i = 0; i < logits[0].size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(logits[0][i]));
      max_diff = std::max(max_diff, std::fabs(logits[0][i] - logits[1][i]));
    }
    // The same rows of the same products, in one node or three.
    EXPECT_LE(max_diff, 1e-5f * max_abs) << "max |logit| " << max_abs;
  }

  std::unique_ptr<registry::Registry> reg_;
};

TEST_F(JoinedQkv, OnADeviceWithItsOwnMemory) {
  if (!std::ifstream(stories_path()).good()) GTEST_SKIP() << stories_path() << " not found (set LOOM_MODELS_DIR)";
  ASSERT_NE(reg_->device("sim0"), nullptr) << test::describe(*reg_);
  compare(stories_path(), {"sim0", "cpu"}, true);
}

TEST_F(JoinedQkv, NotWhereTheFileMappingIsReadInPlace) {
  if (!std::ifstream(stories_path()).good()) GTEST_SKIP() << stories_path() << " not found (set LOOM_MODELS_DIR)";
  compare(stories_path(), {"cpu"}, false);  // F32 matrices: the cpu reads the file's mapping
}

TEST_F(JoinedQkv, InTheCpusOwnWeightLayout) {
  const std::string path = test::models_dir() + "/quant/synth256-q5_0.gguf";
  if (!std::ifstream(path).good()) GTEST_SKIP() << path << " not found (set LOOM_MODELS_DIR)";
  // Every cpu variant of the build (the best this machine runs wins).
  registry::Options o;
  o.paths = {LOOM_TEST_PLUGIN_DIR};
  o.use_env = false;
  o.search_library_dir = false;
  o.search_install_dir = false;
  reg_ = registry::Registry::load(o);
  ASSERT_NE(reg_->device("cpu"), nullptr) << test::describe(*reg_);
  Context probe;
  Tensor* w = probe.new_tensor(LOOM_TYPE_Q5_0, {256, 256}, "w").value();
  if (reg_->device("cpu")->weight_buffer_type(w) == nullptr) {
    GTEST_SKIP() << "this cpu build offers no weight layout (baseline)";
  }
  compare(path, {"cpu"}, true);
}

}  // namespace
}  // namespace loom::llm
