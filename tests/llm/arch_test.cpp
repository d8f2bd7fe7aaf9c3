// The architectures loom runs, on tiny random models (tiny_arch.hpp): loom's
// logits for every position of a prompt (batched prefill that starts past
// position 0, then single-token decode steps) against the double-precision
// reference forward pass of reference_forward.hpp, for llama, llama-3
// (rope_freqs, linear rope scaling, partial rotation), YaRN (with and
// without rope_freqs, default and given keys), mistral-style llama,
// qwen2 (Q/K/V biases, neox RoPE, tied output) and qwen3 (per-head Q/K
// norms, neox, a head size that is not n_embd / n_head). Each case also
// checks that the reference without the case's feature differs from it by
// far more than the tolerance, so a loader or graph that ignored the
// feature would fail. Then the loader's errors: every required tensor and
// key of each architecture, unknown architectures, rope scaling types loom
// does not run.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "arch_fixture.hpp"

namespace loom::llm {
namespace {

ArchSpec llama() { return ArchSpec{}; }

ArchSpec llama3() {
  ArchSpec s;
  s.rope_freqs = true;
  s.freq_base = 500000.0f;
  s.scaling_type = "linear";
  s.scaling_factor = 4.0f;
  s.n_rot = 6;  // partial: dims 6, 7 of each head pass through
  s.seed = 2;
  return s;
}

ArchSpec mistral() {
  ArchSpec s;
  s.n_head_kv = 1;  // 4 query heads per kv head
  s.sliding_window = 4;  // ignored: the prompt is longer, attention still spans it all
  s.seed = 3;
  return s;
}

ArchSpec qwen2() {
  ArchSpec s;
  s.arch = "qwen2";
  s.neox = true;
  s.qkv_bias = true;
  s.tied = true;
  s.freq_base = 1000000.0f;
  s.seed = 4;
  return s;
}

ArchSpec qwen3() {
  ArchSpec s;
  s.arch = "qwen3";
  s.neox = true;
  s.qk_norm = true;
  s.head_dim = 16;  // Q is 4 x 16 = 64 wide, n_embd 32
  s.eps = 1e-6f;
  s.seed = 5;
  return s;
}

ArchSpec phi3() {
  ArchSpec s;
  s.arch = "phi3";
  s.neox = true;
  s.fused = true;
  s.n_head_kv = 4;  // Phi-3 mini: no GQA (the fused rows work with it too: phi3_gqa)
  s.seed = 6;
  return s;
}

ArchSpec phi3_gqa() {
  ArchSpec s = phi3();
  s.n_head_kv = 2;
  s.seed = 7;
  return s;
}

// Gemma 3: 6 layers so that layer 5 is global and 0-4 are local, a window
// of 4 positions (the 10-token prompt is longer), a RoPE base of 1e6 on the
// global layer against 10000 on the local ones.
ArchSpec gemma3() {
  return gemma3_spec(4, 8);
}

// Gemma 2: 4 layers, 0 and 2 local (a window of 4), 1 and 3 global, RoPE
// 10000 on both, scores and logits soft-capped at values these random
// weights reach.
ArchSpec gemma2() {
  return gemma2_spec(4, 9);
}

// YaRN on qwen3's 16-wide heads (8 rotated pairs): with base 10000 and an
// original context of 64 the ramp runs over pairs 0-3 (1, 2/3, 1/3, 0), so
// pairs keep their angle, mix, and interpolate.
ArchSpec qwen3_yarn() {
  ArchSpec s = qwen3();
  s.freq_base = 10000.0f;
  s.scaling_type = "yarn";
  s.scaling_factor = 4.0f;
  s.yarn_orig_ctx = 64;
  s.seed = 10;
  return s;
}

// YaRN with llama-3's rope_freqs (both divide the angles) and every key
// given: attn_factor, beta_fast, beta_slow.
ArchSpec llama3_yarn() {
  ArchSpec s = llama3();
  s.n_rot = 0;  // YaRN's magnitude needs every dim rotated
  s.head_dim = 16;
  s.scaling_type = "yarn";
  s.scaling_factor = 8.0f;
  s.yarn_orig_ctx = 4096;
  s.rope_attn_factor = 0.9f;
  s.yarn_beta_fast = 16.0f;
  s.yarn_beta_slow = 2.0f;
  s.seed = 11;
  return s;
}

// Phi-3's LongRoPE (128k files): rope_factors_long / _short and the
// magnitude rope.scaling.attn_factor, no scaling type. The tests' context
// (64) is past an original context of 32: the long factors.
ArchSpec phi3_longrope() {
  ArchSpec s = phi3();
  s.longrope = true;
  s.rope_attn_factor = 1.19f;
  s.yarn_orig_ctx = 32;
  s.seed = 12;
  return s;
}

TEST_F(Architectures, LlamaMatchesTheReference) {
  const TinyArchModel m(llama());
  check(llama(), {{"with neox RoPE", mutate(m, [](TinyArchModel* c) { c->spec.neox = true; })}});
}

TEST_F(Architectures, Llama3RopeFreqsAndLinearScalingMatchTheReference) {
  const TinyArchModel m(llama3());
  check(llama3(), {{"without rope_freqs", mutate(m, [](TinyArchModel* c) { drop(c, "rope_freqs"); })},
                   {"without rope scaling", mutate(m, [](TinyArchModel* c) { c->spec.scaling_factor = 0.0f; })}});
}

TEST_F(Architectures, MistralStyleLlamaIgnoresTheSlidingWindow) { check(mistral(), {}); }

TEST_F(Architectures, Qwen2BiasesNeoxAndTiedOutputMatchTheReference) {
  const TinyArchModel m(qwen2());
  check(qwen2(), {{"without biases", mutate(m, [](TinyArchModel* c) { drop(c, ".bias"); })},
                  {"with normal RoPE", mutate(m, [](TinyArchModel* c) { c->spec.neox = false; })}});
}

TEST_F(Architectures, Qwen3QkNormsAndWideHeadsMatchTheReference) {
  const TinyArchModel m(qwen3());
  const auto no_qk_norm = [](TinyArchModel* c) {
    drop(c, "attn_q_norm");
    drop(c, "attn_k_norm");
  };
  check(qwen3(), {{"without Q/K norms", mutate(m, no_qk_norm)},
                  {"with normal RoPE", mutate(m, [](TinyArchModel* c) { c->spec.neox = false; })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ((*model)->hparams().q_dim(), 64);
  EXPECT_EQ((*model)->hparams().kv_dim(), 32);
}

// Phi-3: Q, K, V from one fused product and the gate and up from another,
// split by views; the reference reads the separate matrices. A mutant with
// the gate and up halves swapped (the order the views must get right) and
// one with normal RoPE are far from it.
TEST_F(Architectures, Phi3FusedProjectionsMatchTheReference) {
  for (const ArchSpec& spec : {phi3(), phi3_gqa()}) {
    const TinyArchModel m(spec);
    const auto swap_gate_up = [](TinyArchModel* c) {
      for (int64_t il = 0; il < c->spec.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        std::swap(c->tensors[p + "ffn_gate.weight"], c->tensors[p + "ffn_up.weight"]);
      }
    };
    check(spec, {{"with gate and up swapped", mutate(m, swap_gate_up)},
                 {"with normal RoPE", mutate(m, [](TinyArchModel* c) { c->spec.neox = false; })}});
    auto model = load(m);
    ASSERT_TRUE(model.ok());
    EXPECT_NE((*model)->layers[0].wqkv, nullptr);
    EXPECT_EQ((*model)->layers[0].wq, nullptr);
    EXPECT_NE((*model)->layers[0].ffn_gate_up, nullptr);
    EXPECT_EQ((*model)->layers[0].ffn_gate, nullptr);
  }
}

// Gemma 3 against the reference; mutants without the window, with every
// layer global, without the post norms, with SiLU for GELU, without the
// embedding scale are each far from it.
TEST_F(Architectures, Gemma3SlidingWindowNormsAndGeluMatchTheReference) {
  const TinyArchModel m(gemma3());
  check(gemma3(), {{"without the sliding window", mutate(m, [](TinyArchModel* c) { c->spec.sliding_window = 0; })},
                   {"without the post norms", mutate(m, [](TinyArchModel* c) {
                      drop(c, "post_attention_norm");
                      drop(c, "post_ffw_norm");
                    })},
                   {"with SiLU and no embedding scale", mutate(m, [](TinyArchModel* c) { c->spec.gemma = false; })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ((*model)->hparams().n_swa, 4);
  EXPECT_TRUE((*model)->hparams().is_swa(4));
  EXPECT_FALSE((*model)->hparams().is_swa(5));
}

// The sliding window in sequence batches (loom serve's path): the prompt in
// slot 2 of 3 and its first 7 tokens in slot 0, read together, then decoded
// together; every logits row matches the reference at its position.
TEST_F(Architectures, Gemma2SoftCappingAndAlternateWindowsMatchTheReference) {
  const TinyArchModel m(gemma2());
  check(gemma2(), {{"without attention soft-capping", mutate(m, [](TinyArchModel* c) { c->spec.attn_softcap = 0; })},
                   {"without final soft-capping", mutate(m, [](TinyArchModel* c) { c->spec.final_softcap = 0; })},
                   {"with every layer global", mutate(m, [](TinyArchModel* c) { c->spec.swa_period = 0; })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_FLOAT_EQ((*model)->hparams().attn_softcap, 2.0f);
  EXPECT_FLOAT_EQ((*model)->hparams().final_softcap, 8.0f);
  EXPECT_FLOAT_EQ((*model)->hparams().rope_freq_base_swa, 10000.0f);
  // Without the keys, llama.cpp's defaults.
  auto defaults = load(m, m.gguf({}, {"attn_logit_softcapping", "final_logit_softcapping"}));
  ASSERT_TRUE(defaults.ok()) << defaults.status().to_string();
  EXPECT_FLOAT_EQ((*defaults)->hparams().attn_softcap, 50.0f);
  EXPECT_FLOAT_EQ((*defaults)->hparams().final_softcap, 30.0f);
}

TEST_F(Architectures, Gemma3WindowHoldsInSequenceBatches) {
  const TinyArchModel m(gemma3());
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const std::vector<std::vector<double>> ref = ReferenceForward(m).logits(prompt());
  // Both decode to positions 9 and 6: past the window of 4.
  for (bool fused : {true, false}) check_seq_batches(model->get(), ref, fused, 32, 4);
}

TEST_F(Architectures, YarnMatchesTheReference) {
  const TinyArchModel m(qwen3_yarn());
  check(qwen3_yarn(),
        {{"with linear scaling", mutate(m, [](TinyArchModel* c) { c->spec.scaling_type = "linear"; })},
         {"without YaRN's magnitude (mscale 1)",
          mutate(m, [](TinyArchModel* c) { c->spec.rope_attn_factor = 1.0f / (1.0f + 0.1f * std::log(4.0f)); })},
         {"with an original context of 16",
          mutate(m, [](TinyArchModel* c) { c->spec.yarn_orig_ctx = 16; })}});
  const TinyArchModel l(llama3_yarn());
  check(llama3_yarn(),
        {{"without rope_freqs", mutate(l, [](TinyArchModel* c) { drop(c, "rope_freqs"); })},
         {"with beta_fast and beta_slow at their defaults", mutate(l, [](TinyArchModel* c) {
            c->spec.yarn_beta_fast = 0.0f;
            c->spec.yarn_beta_slow = 0.0f;
          })},
         {"with attn_factor 1", mutate(l, [](TinyArchModel* c) { c->spec.rope_attn_factor = 0.0f; })}});
}

TEST_F(Architectures, Phi3LongRopeMatchesTheReference) {
  const TinyArchModel m(phi3_longrope());
  check(phi3_longrope(),
        {{"with the short factors", mutate(m, [](TinyArchModel* c) { c->spec.yarn_orig_ctx = 64; })},
         {"without the magnitude", mutate(m, [](TinyArchModel* c) { c->spec.rope_attn_factor = 0.0f; })},
         {"without LongRoPE's factors", mutate(m, [](TinyArchModel* c) { drop(c, "rope_factors"); })}});
  // Within the original context: the short factors.
  ArchSpec within = phi3_longrope();
  within.yarn_orig_ctx = 64;
  const TinyArchModel w(within);
  check(within, {{"with the long factors", mutate(w, [](TinyArchModel* c) { c->spec.yarn_orig_ctx = 32; })}});
  // One of the two alone is named.
  auto model = load(m, m.gguf({"rope_factors_short.weight"}));
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("'rope_factors_short.weight' missing beside its LongRoPE twin"),
            std::string::npos)
      << model.status().message();
}

// A RoPE magnitude on a partly rotated head (Phi-4-mini: LongRoPE on 96 of
// 128 dims; YaRN on such heads): only the rotated dims carry it, as ggml's
// scaled cos/sin do, so it cannot fold into the scores' scale; Q's rotated
// dims are scaled by its square instead. Mutants with the magnitude on every
// dim (the folded form) or none are far off.
TEST_F(Architectures, RopeMagnitudeOnAPartlyRotatedHeadMatchesTheReference) {
  ArchSpec phi4mini = phi3_longrope();
  phi4mini.head_dim = 16;
  phi4mini.n_rot = 12;  // three quarters, as Phi-4-mini's partial_rotary_factor
  phi4mini.seed = 13;
  ArchSpec yarn = llama3_yarn();
  yarn.n_rot = 8;
  for (const ArchSpec& spec : {phi4mini, yarn}) {
    const TinyArchModel m(spec);
    // The magnitude as it reaches the scores, and what cancels it in the rotation.
    const bool is_yarn = spec.scaling_type == "yarn";
    const float growth = is_yarn ? 1.0f + 0.1f * std::log(spec.scaling_factor) : 1.0f;
    const float mag = spec.rope_attn_factor * growth;
    check(spec, {{"with the magnitude folded into every dim's score", mutate(m, [&](TinyArchModel* c) {
                    c->spec.attention_scale = mag * mag / std::sqrt(static_cast<float>(c->spec.hd()));
                    c->spec.rope_attn_factor = 1.0f / growth;
                  })},
                 {"with attn_factor 1", mutate(m, [](TinyArchModel* c) { c->spec.rope_attn_factor = 0.0f; })}});
    auto model = load(m);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_NE((*model)->hparams().rope_mscale, 1.0f) << spec.arch;
  }
}

// YaRN where local layers have a RoPE base of their own (gemma3): refused,
// naming the key.
TEST_F(Architectures, YarnLoomDoesNotRunIsNamed) {
  ArchSpec gemma = gemma3();
  gemma.scaling_type = "yarn";
  gemma.scaling_factor = 4.0f;
  for (const ArchSpec& s : {gemma}) {
    const TinyArchModel m(s);
    auto model = load(m);
    ASSERT_FALSE(model.ok()) << s.arch;
    EXPECT_EQ(model.status().code(), StatusCode::kUnimplemented);
    EXPECT_TRUE(model.status().message().find(s.arch + ".rope.scaling.type = yarn") != std::string::npos ||
                model.status().message().find(s.arch + ".rope.scaling (yarn") != std::string::npos)
        << model.status().message();
  }
}

TEST_F(Architectures, ScalingTypeNoneIgnoresTheFactor) {
  ArchSpec s = qwen3();
  s.scaling_type = "none";
  s.scaling_factor = 8.0f;
  const TinyArchModel m(s);
  check(s, {{"with freq_scale 1/8", mutate(m, [](TinyArchModel* c) { c->spec.scaling_type = "linear"; })}});
}

// Every layer on vulkan0 (when this machine has one; lavapipe counts): its
// ROPE runs the frequency factors itself (no extra splits to the cpu) and
// the logits match the reference. GPU sin/cos and f32 sums: a looser bound.
TEST_F(Architectures, OnVulkan0EveryArchitectureMatchesTheReference) {
  registry::Device* vk = reg_->device("vulkan0");
  if (vk == nullptr) GTEST_SKIP() << "no vulkan0 here";
  LoadOptions where;
  where.devices = {vk, dev_};
  where.n_gpu_layers = 2;
  for (const ArchSpec& spec : {llama3(), qwen2(), qwen3(), phi3_gqa(), gemma2(), gemma3(), qwen3_yarn(), llama3_yarn(),
                               phi3_longrope()}) {
    check(spec, {}, &where, 2e-4);
  }
  // The same llama-3 model with and without rope_freqs: as many splits.
  const TinyArchModel m(llama3());
  size_t splits[2] = {0, 0};
  for (int without = 0; without < 2; ++without) {
    auto model = load(m, m.gguf(without ? std::set<std::string>{"rope_freqs.weight"} : std::set<std::string>{}),
                      &where);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    auto s = LlamaSession::create(model->get(), {});
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    std::vector<float> logits;
    ASSERT_TRUE((*s)->eval({1, 2, 3}, false, &logits).ok());
    splits[without] = (*s)->splits_last();
  }
  EXPECT_EQ(splits[0], splits[1]) << "ROPE with rope_freqs left vulkan0";
}

// Layers shared out over a simulated device (MUL_MAT, norms, adds, softmax:
// ROPE, SET_ROWS, ATTENTION, GELU, TANH stay on the cpu) and the cpu: the
// scheduler's splits and copies keep every architecture's logits.
TEST_F(Architectures, SplitOverASimulatedDeviceEveryArchitectureMatchesTheReference) {
  auto reg = sim_and_cpu();
  if (reg == nullptr) GTEST_SKIP() << "sim plugin not loaded";
  LoadOptions where;
  where.devices = {reg->device("sim0"), reg->device("cpu")};
  where.tensor_split = {1, 1};
  for (const ArchSpec& spec : {llama3(), qwen2(), qwen3(), phi3_gqa(), gemma2(), gemma3(), qwen3_yarn(), llama3_yarn(),
                               phi3_longrope()}) {
    check(spec, {}, &where);
    auto model = load(TinyArchModel(spec), TinyArchModel(spec).gguf(), &where);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ((*model)->layer_device(0), reg->device("sim0")) << spec.arch;
    EXPECT_EQ((*model)->layer_device(spec.n_layer - 1), reg->device("cpu")) << spec.arch;
  }
}

// -------------------------------------------------------------- errors

TEST_F(Architectures, EveryRequiredTensorOfEachArchitectureIsNamedWhenMissing) {
  for (const ArchSpec& spec : {llama3(), qwen2(), qwen3(), phi3(), gemma2(), gemma3()}) {
    const TinyArchModel m(spec);
    for (const auto& [name, t] : m.file_tensors()) {
      SCOPED_TRACE(spec.arch + ": without " + name);
      auto model = load(m, m.gguf({name}));
      if (name == "output.weight" || name == "rope_freqs.weight") {
        // Optional: the output head is then the embedding; RoPE runs without factors.
        ASSERT_TRUE(model.ok()) << model.status().to_string();
        if (name == "output.weight") {
          EXPECT_EQ((*model)->output, (*model)->tok_embd);
        } else {
          EXPECT_EQ((*model)->rope_freqs, nullptr);
        }
        continue;
      }
      ASSERT_FALSE(model.ok());
      EXPECT_EQ(model.status().code(), StatusCode::kNotFound) << model.status().to_string();
      EXPECT_NE(model.status().message().find("missing tensor '" + name + "'"), std::string::npos)
          << model.status().message();
    }
  }
}

TEST_F(Architectures, EveryRequiredKeyOfEachArchitectureIsNamedWhenMissing) {
  for (const ArchSpec& spec : {llama(), qwen2(), qwen3(), phi3()}) {
    const TinyArchModel m(spec);
    for (const char* key : {"embedding_length", "block_count", "attention.head_count", "feed_forward_length"}) {
      SCOPED_TRACE(spec.arch + ": without " + key);
      auto model = load(m, m.gguf({}, {key}));
      ASSERT_FALSE(model.ok());
      EXPECT_NE(model.status().message().find("missing metadata key " + spec.arch + "." + key), std::string::npos)
          << model.status().message();
    }
    auto no_arch = load(m, m.gguf({}, {"general.architecture"}));
    ASSERT_FALSE(no_arch.ok());
    EXPECT_NE(no_arch.status().message().find("general.architecture"), std::string::npos)
        << no_arch.status().message();
  }
}

TEST_F(Architectures, OptionalKeysHaveTheirDefaults) {
  // head_count_kv (= head_count), context_length, rope.dimension_count (= head dim).
  ArchSpec s = qwen2();
  s.n_head_kv = s.n_head;
  const TinyArchModel m(s);
  auto model = load(m, m.gguf({}, {"attention.head_count_kv", "context_length"}));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->hparams().n_head_kv, 4);
  EXPECT_EQ((*model)->hparams().n_ctx_train, 2048);
  EXPECT_EQ((*model)->hparams().n_rot, 8);
}

TEST_F(Architectures, UnknownArchitectureListsTheSupportedOnes) {
  ArchSpec s = llama();
  s.arch = "gemma4";
  const TinyArchModel m(s);
  auto model = load(m);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(model.status().message().find("unsupported architecture 'gemma4'"), std::string::npos)
      << model.status().message();
  EXPECT_NE(model.status().message().find(
                "llama, qwen2, qwen3, qwen3moe, phi3, gemma, gemma2, gemma3, smollm3, granite, granitemoe, qwen2vl, "
                "exaone, ernie4_5, internlm2, command-r, olmo2, gpt2, gptneox, phi2, starcoder2, stablelm, cohere2, "
                "qwen2moe, olmoe, glm4, minicpm, exaone4, bloom, mpt, falcon, starcoder, olmo, nemotron, arcee, "
                "seed_oss, baichuan, qwen3vl, qwen3vlmoe"),
            std::string::npos)
      << model.status().message();
}

TEST_F(Architectures, RopeScalingLoomDoesNotRunIsNamed) {
  for (const char* type : {"longrope"}) {
    ArchSpec s = qwen2();
    s.scaling_type = type;
    s.scaling_factor = 4.0f;
    const TinyArchModel m(s);
    auto model = load(m);
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(model.status().message().find(std::string("qwen2.rope.scaling.type = ") + type), std::string::npos)
        << model.status().message();
  }
  ArchSpec s = llama();
  s.scaling_type = "spiral";
  const TinyArchModel m(s);
  auto model = load(m);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("llama.rope.scaling.type = spiral: unknown"), std::string::npos)
      << model.status().message();
}

TEST_F(Architectures, OldScaleLinearKeyIsRead) {
  const TinyArchModel m(llama());
  auto model = load(m, m.gguf({}, {}, {}, {{"rope.scale_linear", 2.0f}}));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_FLOAT_EQ((*model)->hparams().rope_freq_scale, 0.5f);
}

TEST_F(Architectures, HeadSizesThatDifferAreRefused) {
  const TinyArchModel m(qwen3());
  auto model = load(m, m.gguf({}, {"attention.value_length"}, {{"attention.value_length", 8}}));
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(model.status().message().find("qwen3.attention.value_length = 8"), std::string::npos)
      << model.status().message();
}

TEST_F(Architectures, MisshapenOptionalTensorsAreNamed) {
  for (const char* name : {"blk.1.attn_k.bias", "rope_freqs.weight"}) {
    ArchSpec s = qwen2();
    if (std::string(name) == "rope_freqs.weight") s = llama3();
    TinyArchModel m(s);
    test::TinyTensor& t = m.tensors.at(name);
    t.ne[0] += 1;
    t.v.push_back(1.0f);
    auto model = load(m);
    ASSERT_FALSE(model.ok()) << name;
    EXPECT_NE(model.status().message().find(std::string("tensor '") + name + "' has shape"), std::string::npos)
        << model.status().message();
  }
}

}  // namespace
}  // namespace loom::llm
