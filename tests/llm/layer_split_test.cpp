// A model split by layers over several devices (LoadOptions::tensor_split),
// tensors pinned by name pattern (LoadOptions::overrides): stories260K
// greedy from BOS gives the cpu's tokens on sim0,sim1,cpu and
// vulkan0,sim0,cpu, each layer's weights and KV cache on its device, the
// output head with the last layer; bad splits and overrides are errors that
// name what is wrong.
#include <gtest/gtest.h>

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
using test::kSimOps;
using test::ScopedEnv;
using test::stories_path;

// Ops the simulated devices run (ROPE, SET_ROWS, SWIGLU stay on the cpu).

class LayerSplit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::ifstream(stories_path()).good()) {
      GTEST_SKIP() << stories_path() << " not found (set LOOM_MODELS_DIR to the folder holding stories260K.gguf)";
    }
    ScopedEnv n("LOOM_SIM_DEVICES", std::optional<std::string>("2"));
    ScopedEnv ops0("LOOM_SIM_OPS_0", std::optional<std::string>(kSimOps));
    ScopedEnv ops1("LOOM_SIM_OPS_1", std::optional<std::string>(kSimOps));
    ScopedEnv host0("LOOM_SIM_HOST_0", std::nullopt);
    ScopedEnv host1("LOOM_SIM_HOST_1", std::nullopt);
    reg_ = registry::Registry::load(test::only({std::string(LOOM_TEST_SIM_DIR) + "/libloom-sim.so",
                                                std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-cpu.so",
                                                std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-vulkan.so"}));
    ASSERT_NE(reg_->device("cpu"), nullptr) << test::describe(*reg_);
    if (!reg_->device("sim0") || !reg_->device("sim1")) GTEST_SKIP() << "sim plugin not loaded:\n" << test::describe(*reg_);
  }

  std::vector<registry::Device*> devices(const std::vector<std::string>& names) {
    std::vector<registry::Device*> out;
    for (const std::string& n : names) out.push_back(reg_->device(n));
    return out;
  }

  // Greedy tokens from BOS with load options `lo`; fails the test on error.
  std::vector<TokenId> greedy(const LoadOptions& lo, int32_t n_predict, std::string* text) {
    auto m = LlamaModel::load(stories_path(), lo);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    if (!m.ok()) return {};
    model_ = std::move(m).value();
    auto s = LlamaSession::create(model_.get(), {});
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return {};
    session_ = std::move(s).value();
    GenerateOptions opt;
    opt.n_predict = n_predict;
    auto r = generate(*session_, *model_->tokenizer(), "", opt);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (!r.ok()) return {};
    *text = r->text;
    return r->generated_tokens;
  }

  std::vector<TokenId> cpu_tokens(int32_t n_predict) {
    LoadOptions lo;
    lo.devices = devices({"cpu"});
    std::string text;
    return greedy(lo, n_predict, &text);
  }

  std::unique_ptr<registry::Registry> reg_;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<LlamaSession> session_;
};

TEST_F(LayerSplit, ThreeDevicesGiveTheCpuTokens) {
  const std::vector<TokenId> want = cpu_tokens(100);
  session_.reset();
  LoadOptions lo;
  lo.devices = devices({"sim0", "sim1", "cpu"});
  lo.tensor_split = {2, 2, 1};  // 5 layers: 0-1, 2-3, 4
  std::string text;
  EXPECT_EQ(greedy(lo, 100, &text), want);
  EXPECT_EQ(text.rfind(kPublished, 0), 0u) << text;
  registry::Device *s0 = reg_->device("sim0"), *s1 = reg_->device("sim1"), *cpu = reg_->device("cpu");
  const registry::Device* want_dev[] = {s0, s0, s1, s1, cpu};
  for (int64_t il = 0; il < 5; ++il) {
    EXPECT_EQ(model_->layer_device(il), want_dev[il]) << "layer " << il;
    EXPECT_EQ(model_->weight_device(test::q_weight(model_->layers[static_cast<size_t>(il)])), want_dev[il]) << "layer " << il;
    // Each device's weights live in its own memory.
    EXPECT_TRUE(want_dev[il]->supports_buffer_type(model_->layers[static_cast<size_t>(il)].ffn_down->buffer->buffer_type));
  }
  EXPECT_EQ(model_->n_gpu_layers(), 4);
  EXPECT_EQ(model_->output_device(), cpu);
  EXPECT_EQ(model_->placement(), "sim0: layers 0-1; sim1: layers 2-3; cpu: layer 4, output");
  // The sims here cannot write a cache (no SET_ROWS): their layers' caches
  // stay on the host (vulkan0 below keeps its own).
  for (int64_t il = 0; il < 5; ++il) EXPECT_EQ(session_->kv_device(il), cpu) << il;
  // Work ran on all three devices.
  std::vector<bool> used(3, false);
  for (const SchedSplit& sp : session_->scheduler().splits()) used[sp.device] = true;
  EXPECT_TRUE(used[0] && used[1] && used[2]);
}

TEST_F(LayerSplit, TheOutputHeadGoesWithTheLastLayer) {
  const std::vector<TokenId> want = cpu_tokens(40);
  session_.reset();
  LoadOptions lo;
  lo.devices = devices({"sim0", "sim1", "cpu"});
  lo.tensor_split = {1, 1, 0};  // 0-2 (2.5 rounds to 3), 3-4, nothing on the cpu
  std::string text;
  EXPECT_EQ(greedy(lo, 40, &text), want);
  EXPECT_EQ(model_->layer_device(2), reg_->device("sim0"));
  EXPECT_EQ(model_->layer_device(3), reg_->device("sim1"));
  EXPECT_EQ(model_->output_device(), reg_->device("sim1"));
  EXPECT_EQ(model_->weight_device(model_->output_norm), reg_->device("sim1"));
  // The embedding table stays on the host (GET_ROWS of a few rows).
  EXPECT_EQ(model_->weight_device(model_->tok_embd), reg_->device("cpu"));
  EXPECT_EQ(model_->placement(), "sim0: layers 0-2; sim1: layers 3-4, output");
}

TEST_F(LayerSplit, VulkanSimAndCpuGiveTheCpuTokens) {
  if (!reg_->device("vulkan0")) GTEST_SKIP() << "vulkan0 not available:\n" << test::describe(*reg_);
  const std::vector<TokenId> want = cpu_tokens(40);
  session_.reset();
  LoadOptions lo;
  lo.devices = devices({"vulkan0", "sim0", "cpu"});
  lo.tensor_split = {2, 2, 1};
  std::string text;
  EXPECT_EQ(greedy(lo, 40, &text), want);
  EXPECT_EQ(model_->layer_device(0), reg_->device("vulkan0"));
  EXPECT_EQ(model_->layer_device(2), reg_->device("sim0"));
  EXPECT_EQ(model_->layer_device(4), reg_->device("cpu"));
  EXPECT_EQ(session_->kv_device(1), reg_->device("vulkan0"));  // vulkan writes its layers' cache
  EXPECT_EQ(session_->kv_device(2), reg_->device("cpu"));      // the sim cannot
  std::vector<bool> used(3, false);
  for (const SchedSplit& sp : session_->scheduler().splits()) used[sp.device] = true;
  EXPECT_TRUE(used[0] && used[1] && used[2]);
}

TEST_F(LayerSplit, OverridesPinTensorsByName) {
  const std::vector<TokenId> want = cpu_tokens(40);
  session_.reset();
  LoadOptions lo;
  lo.devices = devices({"sim0", "cpu"});
  lo.tensor_split = {1, 0};  // every layer on sim0 ...
  lo.overrides = {{"blk\\.[0-9]+\\.ffn_(gate|up|down)\\.weight", reg_->device("cpu")},  // ... but the FFN
                  {"blk\\.1\\..*", reg_->device("cpu")}};  // and all of layer 1: 15 + 6 tensors
  std::string text;
  EXPECT_EQ(greedy(lo, 40, &text), want);
  registry::Device *sim = reg_->device("sim0"), *cpu = reg_->device("cpu");
  for (size_t il = 0; il < 5; ++il) {
    const LlamaLayer& l = model_->layers[il];
    EXPECT_EQ(model_->weight_device(l.ffn_up), cpu) << il;
    EXPECT_EQ(model_->weight_device(l.ffn_down), cpu) << il;
    EXPECT_EQ(model_->weight_device(test::q_weight(l)), il == 1 ? cpu : sim) << il;
  }
  EXPECT_EQ(model_->placement(), "sim0: layers 0-4, output; cpu: 21 overridden tensors");
}

TEST_F(LayerSplit, BadSplitsAndOverridesAreNamed) {
  auto fails_with = [&](const LoadOptions& lo, const std::string& want) {
    auto m = LlamaModel::load(stories_path(), lo);
    ASSERT_FALSE(m.ok()) << want;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(want), std::string::npos) << m.status().message();
  };
  LoadOptions lo;
  lo.devices = devices({"sim0", "cpu"});
  lo.tensor_split = {1, 1, 1};
  fails_with(lo, "tensor split has 3 proportions for 2 devices");
  lo.tensor_split = {1, -1};
  fails_with(lo, "is not a finite number >= 0");
  lo.tensor_split = {0, 0};
  fails_with(lo, "tensor split proportions are all 0");
  lo.tensor_split = {};
  lo.overrides = {{"blk\\.(", reg_->device("cpu")}};
  fails_with(lo, "tensor override pattern 'blk\\.(' is not a regular expression");
  lo.overrides = {{"output.*", reg_->device("sim1")}};
  fails_with(lo, "names device 'sim1', which is not in the device list");
}

}  // namespace
}  // namespace loom::llm
