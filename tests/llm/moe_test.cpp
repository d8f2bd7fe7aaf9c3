// Mixtures of experts (ABI 1.5's MUL_MAT_ID, TOP_K): a Mixtral-style llama
// file (llama.expert_count) and a qwen3moe file (per-head Q/K norms, its
// own expert FFN width) on tiny random models against the double-precision
// reference (reference_forward.hpp: softmax routing, top-k, renormalised
// weights); each with a mutant (another top-k) whose reference is far off,
// so a graph that routed wrongly would fail. Then the experts kept on the
// cpu by a name override while the rest of each layer runs on another
// device (`-ot 'ffn_.*_exps=cpu'`) and the fit counting their bytes there, on
// vulkan0 where there is one, and the loader's errors. qwen2moe (raw
// weights, a shared expert behind a sigmoid gate) and olmoe (raw weights,
// whole-projection Q/K norms) against the same reference.
#include <string>
#include <vector>

#include "arch_fixture.hpp"
#include "llm_test_util.hpp"
#include "llm/placement/fit.hpp"

namespace loom::llm {
namespace {

// Four experts, two per token, of the dense FFN's width (Mixtral's keys).
ArchSpec mixtral() {
  ArchSpec s;
  s.n_expert = 4;
  s.n_expert_used = 2;
  s.n_ff = 24;
  s.seed = 21;
  return s;
}

// Eight experts of 16, three per token; qwen3's Q/K norms and wide heads.
ArchSpec qwen3moe() {
  ArchSpec s;
  s.arch = "qwen3moe";
  s.neox = true;
  s.qk_norm = true;
  s.head_dim = 16;
  s.n_ff = 40;  // the dense key: not what the experts use
  s.n_expert = 8;
  s.n_expert_used = 3;
  s.expert_ffn = 16;
  s.freq_base = 1000000.0f;
  s.eps = 1e-6f;
  s.seed = 22;
  return s;
}

class MixtureOfExperts : public Architectures {};

TinyArchModel with_top(const TinyArchModel& m, int64_t k) {
  return mutate(m, [k](TinyArchModel* c) { c->spec.n_expert_used = k; });
}

TEST_F(MixtureOfExperts, MixtralStyleLlamaMatchesTheReference) {
  const TinyArchModel m(mixtral());
  check(mixtral(), {{"with top-1 routing", with_top(m, 1)}, {"with top-3 routing", with_top(m, 3)}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->hparams().n_expert, 4);
  EXPECT_EQ((*model)->hparams().n_expert_used, 2);
  EXPECT_EQ((*model)->hparams().n_ff_exp, 24);
  EXPECT_EQ((*model)->layers[0].ffn_gate, nullptr);
}

TEST_F(MixtureOfExperts, Qwen3MoeMatchesTheReference) {
  const TinyArchModel m(qwen3moe());
  check(qwen3moe(), {{"with top-2 routing", with_top(m, 2)},
                     {"without Q/K norms", mutate(m, [](TinyArchModel* c) {
                       drop(c, "attn_q_norm");
                       drop(c, "attn_k_norm");
                     })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->hparams().n_ff_exp, 16);
}

// Qwen1.5-MoE: qwen2's biases, 8 experts of 16, top-2 weighed by their
// raw probabilities, and a shared expert of 24 behind its sigmoid gate.
ArchSpec qwen2moe() {
  ArchSpec s;
  s.arch = "qwen2moe";
  s.neox = true;
  s.qkv_bias = true;
  s.n_expert = 8;
  s.n_expert_used = 2;
  s.expert_ffn = 16;
  s.expert_weights_raw = true;
  s.shared_ffn = 24;
  s.seed = 23;
  return s;
}

// OLMoE: Q/K norms over the whole projection (no GQA), 8 experts, top-3, raw.
ArchSpec olmoe() {
  ArchSpec s;
  s.arch = "olmoe";
  s.neox = true;
  s.qk_norm = true;
  s.qk_norm_whole = true;
  s.n_head_kv = s.n_head;
  s.n_expert = 8;
  s.n_expert_used = 3;
  s.n_ff = 16;
  s.expert_weights_raw = true;
  s.seed = 24;
  return s;
}

TEST_F(MixtureOfExperts, Qwen2MoeSharedExpertMatchesTheReference) {
  const TinyArchModel m(qwen2moe());
  check(qwen2moe(),
        {{"with renormalised weights", mutate(m, [](TinyArchModel* c) { c->spec.expert_weights_raw = false; })},
         {"without the shared expert", mutate(m, [](TinyArchModel* c) { drop(c, "_shexp"); })},
         {"with the shared expert's gate at 1/2", mutate(m, [](TinyArchModel* c) {
            for (auto& [name, t] : c->tensors) {
              if (name.find("ffn_gate_inp_shexp") != std::string::npos) std::fill(t.v.begin(), t.v.end(), 0.0f);
            }
          })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->hparams().n_ff_shexp, 24);
  EXPECT_TRUE((*model)->hparams().expert_weights_raw);
  EXPECT_NE((*model)->layers[1].ffn_down_shexp, nullptr);
  // Without the width key the shared expert is as wide as the dense FFN key says.
  auto no_key = load(m, m.gguf({}, {"expert_shared_feed_forward_length"}));
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.status().message().find("ffn_gate_shexp.weight' has shape"), std::string::npos)
      << no_key.status().message();
  auto missing = load(m, m.gguf({"blk.0.ffn_up_shexp.weight"}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing tensor 'blk.0.ffn_up_shexp.weight'"), std::string::npos)
      << missing.status().message();
}

TEST_F(MixtureOfExperts, OlmoeMatchesTheReference) {
  const TinyArchModel m(olmoe());
  check(olmoe(),
        {{"with renormalised weights", mutate(m, [](TinyArchModel* c) { c->spec.expert_weights_raw = false; })},
         {"with top-2 routing", with_top(m, 2)}});
}

TEST_F(MixtureOfExperts, EveryExpertRoutedAloneMatchesTheReference) {
  // Top-1 of 4: a token's FFN is one expert's, its weight exactly 1.
  ArchSpec s = mixtral();
  s.n_expert_used = 1;
  const TinyArchModel m(s);
  check(s, {{"with top-2 routing", with_top(m, 2)}});
}

// The experts on the cpu by name, everything else of each layer on sim0 (a
// device without MUL_MAT_ID or TOP_K): the logits still match, the
// experts' bytes are the cpu's, and both devices run part of every step.
TEST_F(MixtureOfExperts, ExpertsOverriddenToTheCpuBesideAnotherDevice) {
  auto reg = sim_and_cpu();
  if (reg == nullptr) GTEST_SKIP() << "sim plugin not loaded";
  registry::Device* sim = reg->device("sim0");
  registry::Device* cpu = reg->device("cpu");
  LoadOptions where;
  where.devices = {sim, cpu};
  where.tensor_split = {1, 0};  // every layer on sim0 ...
  where.overrides = {{"ffn_.*_exps", cpu}};  // ... but the experts (a match anywhere in the name, as llama.cpp's -ot)
  const ArchSpec spec = qwen3moe();
  const TinyArchModel m(spec);
  check(spec, {}, &where);
  auto model = load(m, m.gguf(), &where);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  for (const LlamaLayer& l : (*model)->layers) {
    EXPECT_EQ((*model)->weight_device(l.ffn_up_exps), cpu);
    EXPECT_EQ((*model)->weight_device(l.ffn_down_exps), cpu);
    EXPECT_EQ((*model)->weight_device(l.ffn_gate_inp), sim);
    EXPECT_EQ((*model)->weight_device(test::q_weight(l)), sim);
  }
  EXPECT_EQ((*model)->placement(), "sim0: layers 0-1, output; cpu: 6 overridden tensors");
  // The fit counts the experts' bytes where they are: 2 layers x 3 stacked
  // tensors of 8 experts x 32 x 16 f32 values on the cpu, beside the token
  // embedding (40 x 32), which the host device always keeps.
  FitRequest req;
  req.devices = where.devices;
  req.tensor_split = where.tensor_split;
  req.overrides = where.overrides;
  auto plan = fit_model(path_, req);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->devices.size(), 2u);
  EXPECT_EQ(plan->devices[1].weights, (2u * 3u * 8u * 32u * 16u + 40u * 32u) * 4u) << plan->report();
  EXPECT_EQ(plan->devices[0].layers, 2) << plan->report();
}

// Every layer on vulkan0 (lavapipe counts) with the cpu beside it.
TEST_F(MixtureOfExperts, OnVulkan0MatchesTheReference) {
  registry::Device* vk = reg_->device("vulkan0");
  if (vk == nullptr) GTEST_SKIP() << "no vulkan0 here";
  LoadOptions where;
  where.devices = {vk, dev_};
  where.n_gpu_layers = 2;
  for (const ArchSpec& spec : {mixtral(), qwen3moe(), qwen2moe(), olmoe()}) check(spec, {}, &where, 2e-4);
}

// ---------------------------------------------------------------- errors

TEST_F(MixtureOfExperts, EveryExpertTensorAndKeyIsNamedWhenMissing) {
  for (const ArchSpec& spec : {mixtral(), qwen3moe()}) {
    const TinyArchModel m(spec);
    for (const char* t : {"ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
      const std::string name = "blk.1." + std::string(t) + ".weight";
      auto model = load(m, m.gguf({name}));
      ASSERT_FALSE(model.ok()) << name;
      EXPECT_NE(model.status().message().find("missing tensor '" + name + "'"), std::string::npos)
          << model.status().message();
    }
    auto no_used = load(m, m.gguf({}, {"expert_used_count"}));
    ASSERT_FALSE(no_used.ok());
    EXPECT_NE(no_used.status().message().find("missing metadata key " + spec.arch + ".expert_used_count"),
              std::string::npos)
        << no_used.status().message();
  }
  // qwen3moe needs its experts; more used than there are is out of bounds.
  const TinyArchModel q(qwen3moe());
  auto no_count = load(q, q.gguf({}, {"expert_count"}));
  ASSERT_FALSE(no_count.ok());
  EXPECT_NE(no_count.status().message().find("missing metadata key qwen3moe.expert_count"), std::string::npos)
      << no_count.status().message();
  auto too_many = load(q, q.gguf({}, {"expert_used_count"}, {{"expert_used_count", 9}}));
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("qwen3moe.expert_used_count = 9: above loom's limit of 8"),
            std::string::npos)
      << too_many.status().message();
}

TEST_F(MixtureOfExperts, ExpertsOfAnotherShapeAreNamed) {
  ArchSpec s = mixtral();
  const TinyArchModel m(s);
  // The file claims 5 experts; the tensors hold 4.
  auto model = load(m, m.gguf({}, {"expert_count"}, {{"expert_count", 5}}));
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("tensor 'blk.0.ffn_gate_inp.weight' has shape"), std::string::npos)
      << model.status().message();
}

TEST_F(MixtureOfExperts, ExpertsStoredOneTensorEachAreNamed) {
  TinyArchModel m(mixtral());
  m.tensors["blk.0.ffn_gate.0.weight"] = m.tensors.at("blk.0.ffn_norm.weight");
  auto model = load(m, m.gguf({"blk.0.ffn_gate_exps.weight"}));
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(model.status().message().find("stored one tensor each ('blk.0.ffn_gate.0.weight'"), std::string::npos)
      << model.status().message();
}

TEST_F(MixtureOfExperts, ACountOfOneOrZeroIsADenseLlama) {
  for (uint32_t count : {0u, 1u}) {
    const TinyArchModel m(ArchSpec{});
    auto model = load(m, m.gguf({}, {}, {{"expert_count", count}}));
    ASSERT_TRUE(model.ok()) << count << ": " << model.status().to_string();
    EXPECT_EQ((*model)->hparams().n_expert, 0);
  }
}

}  // namespace
}  // namespace loom::llm
