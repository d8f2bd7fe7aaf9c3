// llama on the scheduler: decode graphs reuse one plan (the attended KV
// length is padded, so only input values change), and stories260K greedy
// from BOS gives the same tokens on cpu, blas,cpu and sim0,cpu with layers
// 0-2 (weights and, where sim0 could write it, the KV cache) on sim0.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/generate.hpp"
#include "llm/session/llama_session.hpp"
#include "llm_test_util.hpp"
#include "loom/registry/registry.hpp"
#include "registry/registry_test_util.hpp"

namespace loom::llm {
namespace {

using test::kPublished;
using test::stories_path;

using test::kSimOps;
using test::ScopedEnv;

// Ops the simulated device runs in these tests (no ROPE, SET_ROWS, SWIGLU:
// those stay on the cpu, so the plan has several splits per layer).

// A registry of cpu, sim (one device, limited ops, own memory) and blas
// when built; the sim variables are read at load and restored after.
class MultiDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::ifstream(stories_path()).good()) {
      GTEST_SKIP() << stories_path() << " not found (set LOOM_MODELS_DIR to the folder holding stories260K.gguf)";
    }
    ScopedEnv n("LOOM_SIM_DEVICES", std::optional<std::string>("1"));
    ScopedEnv ops("LOOM_SIM_OPS_0", std::optional<std::string>(kSimOps));
    ScopedEnv host("LOOM_SIM_HOST_0", std::nullopt);
    reg_ = registry::Registry::load(test::only({std::string(LOOM_TEST_SIM_DIR) + "/libloom-sim.so",
                                                std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-cpu.so",
                                                std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-blas.so"}));
    ASSERT_NE(reg_->device("cpu"), nullptr) << test::describe(*reg_);
  }

  // Greedy tokens from BOS over `devices` with n_gpu_layers, and the plans
  // the session built while generating (not counting the worst-case ones
  // its creation reserved with); fails the test on any error.
  void run(const std::vector<std::string>& names, int64_t n_gpu_layers, int32_t n_predict,
           std::vector<TokenId>* tokens, std::string* text, size_t* plans = nullptr,
           const LlamaModel** model_out = nullptr) {
    LoadOptions lo;
    for (const std::string& n : names) {
      registry::Device* d = reg_->device(n);
      ASSERT_NE(d, nullptr) << n;
      lo.devices.push_back(d);
    }
    lo.n_gpu_layers = n_gpu_layers;
    auto m = LlamaModel::load(stories_path(), lo);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    auto t = Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    auto s = LlamaSession::create(model_.get(), {});
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    const size_t reserve_plans = (*s)->scheduler().plans_built();
    GenerateOptions opt;
    opt.n_predict = n_predict;
    auto r = generate(**s, *t, "", opt);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    *tokens = r->generated_tokens;
    *text = r->text;
    if (plans) *plans = (*s)->scheduler().plans_built() - reserve_plans;
    if (model_out) *model_out = model_.get();
  }

  std::unique_ptr<registry::Registry> reg_;
  std::unique_ptr<LlamaModel> model_;
};

TEST_F(MultiDevice, DecodeStepsReuseOnePlan) {
  std::vector<TokenId> tokens;
  std::string text;
  size_t plans = 0;
  // BOS and 100 decode steps: all one token, attended KV length padded to
  // 256, so one shape bucket and one plan.
  run({"cpu"}, 0, 100, &tokens, &text, &plans);
  ASSERT_EQ(tokens.size(), 100u);
  EXPECT_EQ(text.rfind(kPublished, 0), 0u) << text;
  EXPECT_EQ(plans, 1u);
}

TEST_F(MultiDevice, UnpaddedKvReplansEveryStep) {
  // Without padding every step has a new KV length, hence a new shape: the
  // count shows the fingerprint follows shapes, not values.
  auto m = LlamaModel::load(stories_path(), reg_->device("cpu"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  SessionOptions so;
  so.kv_pad = 1;
  auto s = LlamaSession::create(m->get(), so);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  // Creation planned the worst-case graphs for its reserve.
  const size_t reserved = (*s)->scheduler().plans_built();
  std::vector<float> logits;
  for (TokenId t : {1, 400, 261, 378, 299}) ASSERT_TRUE((*s)->eval({t}, false, &logits).ok());
  EXPECT_EQ((*s)->scheduler().plans_built(), reserved + 5);
  // Padded: the five steps share one plan; position 256 starts a second
  // bucket (a longer attended KV length).
  (*s).reset();  // one session per model at a time
  SessionOptions padded;
  auto p = LlamaSession::create(m->get(), padded);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  std::vector<std::vector<float>> reused;
  for (TokenId t : {1, 400, 261, 378, 299}) {
    ASSERT_TRUE((*p)->eval({t}, false, &logits).ok());
    reused.push_back(logits);
  }
  EXPECT_EQ((*p)->scheduler().plans_built(), reserved + 1);
  // ... and one step graph, rebuilt neither per token nor per plan.
  EXPECT_EQ((*p)->steps_built(), 1u);
  {
    // The kept graph computes what freshly built ones do: a session whose
    // steps alternate shapes (a 2-token batch between) rebuilds every time.
    (*p).reset();  // one session per model at a time
    auto q = LlamaSession::create(m->get(), padded);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    ASSERT_TRUE((*q)->eval({1}, false, &logits).ok());
    EXPECT_EQ(logits, reused[0]);
    ASSERT_TRUE((*q)->eval({400, 261}, true, &logits).ok());
    std::vector<float> last(logits.end() - static_cast<std::ptrdiff_t>(reused[2].size()), logits.end());
    for (size_t i = 0; i < last.size(); ++i) EXPECT_NEAR(last[i], reused[2][i], 1e-4f) << "logit " << i;
    EXPECT_EQ((*q)->steps_built(), 2u);
    (*q).reset();
    p = LlamaSession::create(m->get(), padded);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    for (TokenId t : {1, 400, 261, 378, 299}) ASSERT_TRUE((*p)->eval({t}, false, &logits).ok());
  }
  if ((*p)->n_ctx() > 256) {
    std::vector<TokenId> fill(251, 300);
    ASSERT_TRUE((*p)->eval(fill, false, &logits).ok());  // batches of 32: new shapes
    const size_t before = (*p)->scheduler().plans_built();
    ASSERT_TRUE((*p)->eval({400}, false, &logits).ok());  // position 256: next bucket
    ASSERT_TRUE((*p)->eval({400}, false, &logits).ok());
    EXPECT_EQ((*p)->scheduler().plans_built(), before + 1);
  }
}

TEST_F(MultiDevice, BlasAndCpuGiveTheCpuTokens) {
  if (!reg_->device("blas")) GTEST_SKIP() << "blas plugin not built";
  std::vector<TokenId> want, got;
  std::string want_text, got_text;
  run({"cpu"}, 0, 100, &want, &want_text);
  run({"blas", "cpu"}, 0, 100, &got, &got_text);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got_text.rfind(kPublished, 0), 0u) << got_text;
  EXPECT_TRUE(model_->zero_copy());  // blas reads host memory: no weight copies
  EXPECT_EQ(model_->offload_device(), nullptr);
}

TEST_F(MultiDevice, LayersSpreadOverSimAndCpuGiveTheCpuTokens) {
  if (!reg_->device("sim0")) GTEST_SKIP() << "sim plugin not loaded:\n" << test::describe(*reg_);
  std::vector<TokenId> want, got;
  std::string want_text, got_text;
  run({"cpu"}, 0, 100, &want, &want_text);
  const LlamaModel* m = nullptr;
  size_t plans = 0;
  run({"sim0", "cpu"}, 3, 100, &got, &got_text, &plans, &m);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got_text.rfind(kPublished, 0), 0u) << got_text;
  EXPECT_EQ(plans, 1u);
  // Layers 0-2 on sim0 (copied to its own memory), 3-4 and the rest on cpu.
  registry::Device* sim = reg_->device("sim0");
  EXPECT_EQ(m->offload_device(), sim);
  EXPECT_EQ(m->n_gpu_layers(), 3);
  EXPECT_EQ(m->layer_device(2), sim);
  EXPECT_EQ(m->layer_device(3), reg_->device("cpu"));
  EXPECT_TRUE(sim->supports_buffer_type(test::q_weight(m->layers[0])->buffer->buffer_type));
  EXPECT_FALSE(reg_->device("cpu")->supports_buffer_type(test::q_weight(m->layers[0])->buffer->buffer_type));
  EXPECT_TRUE(reg_->device("cpu")->supports_buffer_type(test::q_weight(m->layers[3])->buffer->buffer_type));
  EXPECT_GT(m->offloaded_bytes(), 0u);
}

TEST_F(MultiDevice, MoreGpuLayersThanTheModelHasIsClamped) {
  if (!reg_->device("sim0")) GTEST_SKIP() << "sim plugin not loaded";
  std::vector<TokenId> want, got;
  std::string want_text, got_text;
  run({"cpu"}, 0, 20, &want, &want_text);
  run({"sim0", "cpu"}, 99, 20, &got, &got_text);
  EXPECT_EQ(got, want);
  EXPECT_EQ(model_->n_gpu_layers(), 5);
}

TEST_F(MultiDevice, LoadProgressCountsCopiedWeights) {
  if (!reg_->device("sim0")) GTEST_SKIP() << "sim plugin not loaded";
  LoadOptions lo;
  lo.devices = {reg_->device("sim0"), reg_->device("cpu")};
  lo.n_gpu_layers = 2;
  std::vector<size_t> done;
  size_t total = 0;
  lo.progress = [&](size_t d, size_t t, const std::string& dev) {
    EXPECT_EQ(dev, "sim0");  // the cpu takes its weights without a copy
    done.push_back(d);
    total = t;
  };
  auto m = LlamaModel::load(stories_path(), lo);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ASSERT_FALSE(done.empty());
  for (size_t i = 1; i < done.size(); ++i) EXPECT_GT(done[i], done[i - 1]);
  EXPECT_EQ(done.back(), total);
  EXPECT_EQ(total, (*m)->offloaded_bytes());
}

TEST_F(MultiDevice, OutOfDeviceMemoryOnLoadSaysHowMuch) {
  // A fresh registry whose sim0 holds 100000 bytes: five layers of weights
  // (about 1 MB) do not fit.
  reg_.reset();
  ScopedEnv n("LOOM_SIM_DEVICES", std::optional<std::string>("1"));
  ScopedEnv mem("LOOM_SIM_MEMORY_0", std::optional<std::string>("100000"));
  auto reg = registry::Registry::load(test::only({std::string(LOOM_TEST_SIM_DIR) + "/libloom-sim.so",
                                                  std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-cpu.so"}));
  ASSERT_NE(reg->device("sim0"), nullptr) << test::describe(*reg);
  LoadOptions lo;
  lo.devices = {reg->device("sim0"), reg->device("cpu")};
  lo.n_gpu_layers = 5;
  auto m = LlamaModel::load(stories_path(), lo);
  ASSERT_FALSE(m.ok());
  const std::string msg = m.status().message();
  EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted) << msg;
  EXPECT_NE(msg.find("weights of 5 layers need "), std::string::npos) << msg;
  EXPECT_NE(msg.find("100000 of 100000 bytes free"), std::string::npos) << msg;
  EXPECT_NE(msg.find("try fewer --n-gpu-layers"), std::string::npos) << msg;
  // The same devices still load the model with no layers offloaded.
  lo.n_gpu_layers = 0;
  EXPECT_TRUE(LlamaModel::load(stories_path(), lo).ok());
}

}  // namespace
}  // namespace loom::llm
