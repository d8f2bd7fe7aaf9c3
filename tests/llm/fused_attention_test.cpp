// The llama graph's two attention forms (fused ATTENTION node vs MUL_MAT +
// SOFT_MAX + MUL_MAT) on stories260K: the same greedy tokens and the
// published text, close logits for a batched prompt, on cpu and on vulkan0
// (when the Vulkan plugin and a device are here; lavapipe counts).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/generate.hpp"
#include "llm/session/llama_session.hpp"
#include "llm_test_util.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"

namespace loom::llm {
namespace {

using test::kPublished;
using test::stories_path;

// Whether dev runs an ATTENTION node of the model's shapes.
bool runs_attention(const registry::Device& dev, const LlamaHparams& h) {
  Context ctx;
  auto q = ctx.new_tensor(LOOM_TYPE_F32, {h.head_dim(), h.n_head, 1}, "q");
  auto k = ctx.new_tensor(LOOM_TYPE_F32, {h.head_dim(), 256, h.n_head_kv}, "k");
  auto v = ctx.new_tensor(LOOM_TYPE_F32, {h.head_dim(), 256, h.n_head_kv}, "v");
  auto vis = ctx.new_tensor(LOOM_TYPE_I32, {1}, "vis");
  if (!q.ok() || !k.ok() || !v.ok() || !vis.ok()) return false;
  auto node = op::attention(ctx, *q, *k, *v, *vis, 0.5f);
  return node.ok() && dev.supports_op(*node);
}

class FusedAttention : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    path_ = stories_path();
    if (!std::ifstream(path_).good()) {
      GTEST_SKIP() << path_ << " not found (set LOOM_MODELS_DIR to the folder holding stories260K.gguf)";
    }
    registry::Options o;
    o.paths = {LOOM_TEST_PLUGIN_DIR};
    o.use_env = false;
    reg_ = registry::Registry::load(o);
    dev_ = reg_->device(GetParam());
    if (dev_ == nullptr) GTEST_SKIP() << "no device " << GetParam() << " here";
    auto m = LlamaModel::load(path_, dev_);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    auto t = Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::make_unique<Tokenizer>(std::move(t).value());
  }

  std::unique_ptr<LlamaSession> session(bool fused) {
    SessionOptions o;
    o.fused_attention = fused;
    auto s = LlamaSession::create(model_.get(), o);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::string path_;
  std::unique_ptr<registry::Registry> reg_;
  registry::Device* dev_ = nullptr;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_P(FusedAttention, SameGreedyTokensAndThePublishedText) {
  std::vector<TokenId> tokens[2];
  for (bool fused : {false, true}) {
    auto s = session(fused);
    ASSERT_NE(s, nullptr);
    GenerateOptions opt;
    opt.n_predict = 100;
    auto r = generate(*s, *tok_, "", opt);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->text.rfind(kPublished, 0), 0u) << (fused ? "fused: " : "unfused: ") << r->text;
    tokens[fused] = r->generated_tokens;
  }
  EXPECT_EQ(tokens[0], tokens[1]);
}

// The plan shows which form ran: the fused node where the device takes it.
TEST_P(FusedAttention, PlanUsesTheFusedNodeWhereSupported) {
  const bool expect_fused = runs_attention(*dev_, model_->hparams());
  // Both plugins run the node (plugins/vulkan/README.md "ATTENTION").
  EXPECT_TRUE(expect_fused) << GetParam() << " should run ATTENTION";
  for (bool fused : {false, true}) {
    auto s = session(fused);
    ASSERT_NE(s, nullptr);
    auto dot = s->plan_dot(3);
    ASSERT_TRUE(dot.ok()) << dot.status().to_string();
    const bool has_fused = dot->find("attn_fused.0") != std::string::npos;
    const bool has_softmax = dot->find("kq_soft_max.0") != std::string::npos;
    EXPECT_EQ(has_fused, fused && expect_fused) << *dot;
    EXPECT_EQ(has_softmax, !(fused && expect_fused)) << *dot;
  }
}

TEST_P(FusedAttention, BatchedPromptLogitsAgree) {
  const std::vector<TokenId> prompt = tok_->encode("Once upon a time, there was a little dog named Max.", true);
  std::vector<float> logits[2];
  for (bool fused : {false, true}) {
    auto s = session(fused);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->eval(prompt, true, &logits[fused]).ok());
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  float max_abs = 0.0f, max_diff = 0.0f;
  for (size_t i = 0; i < logits[0].size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(logits[0][i]));
    max_diff = std::max(max_diff, std::fabs(logits[0][i] - logits[1][i]));
  }
  // Both forms are f32 with different summation orders through 5 layers.
  EXPECT_LE(max_diff, 1e-4f * max_abs) << "max |logit| " << max_abs;
}

INSTANTIATE_TEST_SUITE_P(Devices, FusedAttention, ::testing::Values("cpu", "vulkan0"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace loom::llm
