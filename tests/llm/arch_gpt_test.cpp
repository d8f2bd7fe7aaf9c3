// GPT-2 and its heirs on tiny random models against the double-precision
// reference (reference_forward.hpp): GPT-2 (learned positions, no RoPE),
// GPT-NeoX / Pythia (fused Q/K/V with a bias, partial RoPE, parallel layers
// with their own FFN norm, or sequential ones by the file's key), Phi-2
// (one norm feeding parallel blocks, an output bias), StarCoder 2 and
// StableLM (LayerNorms with biases; StableLM 2 12B's per-head Q/K norms and
// parallel layers without ffn_norm), BLOOM and MPT (ALiBi; BLOOM's normed
// embedding; MPT's clamped Q/K/V), Falcon (multi-query, parallel blocks,
// 40B's second norm), StarCoder 1 and Nemotron (ReLU^2); GLM-4's fused layout with post-norms. Each family's
// distinctive features have mutants (the reference without one feature) that are far off, so a graph that skipped the
// feature would fail; then the loader's errors for what these files need (a context past the learned positions, a
// missing position table).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "arch_fixture.hpp"

namespace loom::llm {
namespace {

class GptFamilies : public Architectures {};

// What the GPT family shares: LayerNorms with biases, an ungated GELU FFN
// with biases, attention biases, neox RoPE.
ArchSpec gpt_base(const std::string& arch, uint32_t seed) {
  ArchSpec s;
  s.arch = arch;
  s.layer_norm = true;
  s.norm_bias = true;
  s.ffn_sequential = true;
  s.ffn_bias = true;
  s.gelu = true;
  s.qkv_bias = true;
  s.out_bias = true;
  s.neox = true;
  s.seed = seed;
  return s;
}

// A mutant of a parallel-block model made sequential: each layer's FFN
// norm takes its attention norm's weights (and bias).
TinyArchModel sequential(const TinyArchModel& m) {
  return mutate(m, [](TinyArchModel* c) {
    c->spec.parallel_blocks = false;
    for (int64_t il = 0; il < c->spec.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      c->tensors[p + "ffn_norm.weight"] = c->tensors[p + "attn_norm.weight"];
      if (c->tensors.count(p + "attn_norm.bias")) c->tensors[p + "ffn_norm.bias"] = c->tensors[p + "attn_norm.bias"];
    }
  });
}

// GPT-2: Q, K and V fused, every head its own K/V head, positions from a
// table, the head tied to the embedding.
ArchSpec gpt2() {
  ArchSpec s = gpt_base("gpt2", 51);
  s.n_head_kv = s.n_head;
  s.fused = true;
  s.pos_embd = true;
  s.tied = true;
  return s;
}

// Pythia: fused Q/K/V, a quarter of each 16-wide head rotated, parallel
// layers (use_parallel_residual), an untied head.
ArchSpec gptneox(int use_parallel_residual) {
  ArchSpec s = gpt_base("gptneox", 52);
  s.n_head = 2;
  s.n_head_kv = 2;
  s.head_dim = 16;
  s.n_rot = 4;
  s.fused = true;
  s.use_parallel_residual = use_parallel_residual;
  s.parallel_residual = use_parallel_residual != 0;
  return s;
}

// Phi-2: separate Q/K/V with biases, partial RoPE, one LayerNorm feeding
// the attention and the FFN side by side, an output head with a bias.
ArchSpec phi2() {
  ArchSpec s = gpt_base("phi2", 53);
  s.n_head_kv = s.n_head;
  s.n_rot = 4;
  s.parallel_blocks = true;
  s.output_bias = true;
  return s;
}

// StarCoder 2: grouped-query attention with biases, full neox RoPE.
ArchSpec starcoder2() { return gpt_base("starcoder2", 54); }

// StableLM 2 1.6B: Q/K/V biases, a quarter of the head rotated, a SwiGLU
// FFN without biases, no attention output bias.
ArchSpec stablelm() {
  ArchSpec s = gpt_base("stablelm", 55);
  s.ffn_sequential = false;
  s.ffn_bias = false;
  s.gelu = false;
  s.out_bias = false;
  s.n_rot = 2;
  return s;
}

// StableLM 2 12B: per-head Q/K LayerNorms (a weight per head), no ffn_norm:
// parallel blocks from the attention's norm.
ArchSpec stablelm12b() {
  ArchSpec s = stablelm();
  s.qkv_bias = false;
  s.qk_norm = true;
  s.parallel_blocks = true;
  s.seed = 56;
  return s;
}

TEST_F(GptFamilies, Gpt2MatchesTheReference) {
  const TinyArchModel m(gpt2());
  check(gpt2(), {{"without the learned positions", mutate(m,
                                                          [](TinyArchModel* c) {
                                                            c->spec.pos_embd = false;
                                                            c->spec.rope_finetuned = 0;  // (still no RoPE)
                                                          })},
                 {"without the norms' biases", mutate(m, [](TinyArchModel* c) { drop(c, "norm.bias"); })},
                 {"without the FFN's biases", mutate(m, [](TinyArchModel* c) { drop(c, "ffn_up.bias"); })},
                 {"with SiLU", mutate(m, [](TinyArchModel* c) { c->spec.gelu = false; })},
                 // (K's bias moves every score of a query alike: the softmax ignores it.)
                 {"without V's bias", mutate(m, [](TinyArchModel* c) { drop(c, "attn_v.bias"); })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_NE((*model)->pos_embd, nullptr);
  EXPECT_NE((*model)->layers[0].wqkv, nullptr);
  EXPECT_NE((*model)->layers[0].bqkv, nullptr);
  EXPECT_EQ((*model)->layers[0].ffn_gate, nullptr);
  EXPECT_FALSE((*model)->layers[0].parallel);
}

TEST_F(GptFamilies, Gpt2ContextIsBoundedByItsLearnedPositions) {
  const TinyArchModel m(gpt2());
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  SessionOptions so;
  so.n_ctx = m.spec.n_ctx + 1;
  auto s = LlamaSession::create(model->get(), so);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("context of 65 positions exceeds the 64 the model has learned"),
            std::string::npos)
      << s.status().message();
  so.n_ctx = m.spec.n_ctx;
  EXPECT_TRUE(LlamaSession::create(model->get(), so).ok());
  // The table is required.
  auto missing = load(m, m.gguf({"position_embd.weight"}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing tensor 'position_embd.weight'"), std::string::npos)
      << missing.status().message();
}

TEST_F(GptFamilies, GptNeoxParallelAndSequentialLayersMatchTheReference) {
  const TinyArchModel par(gptneox(1));
  check(gptneox(1),
        {{"with sequential layers", mutate(par, [](TinyArchModel* c) { c->spec.parallel_residual = false; })},
         {"with normal RoPE", mutate(par, [](TinyArchModel* c) { c->spec.neox = false; })},
         {"rotating the whole head", mutate(par, [](TinyArchModel* c) { c->spec.n_rot = 16; })}});
  const TinyArchModel seq(gptneox(0));
  check(gptneox(0),
        {{"with parallel layers", mutate(seq, [](TinyArchModel* c) { c->spec.parallel_residual = true; })}});
  // No key: parallel, GPT-NeoX's default.
  auto model = load(par, par.gguf({}, {"use_parallel_residual"}));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_TRUE((*model)->layers[1].parallel);
  EXPECT_NE((*model)->layers[1].ffn_norm, nullptr);
  auto sequential = load(seq);
  ASSERT_TRUE(sequential.ok()) << sequential.status().to_string();
  EXPECT_FALSE((*sequential)->layers[1].parallel);
}

TEST_F(GptFamilies, Phi2MatchesTheReference) {
  const TinyArchModel m(phi2());
  check(phi2(), {{"without the output bias", mutate(m, [](TinyArchModel* c) { drop(c, "output.bias"); })},
                 {"with sequential blocks", sequential(m)}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_NE((*model)->output_b, nullptr);
  EXPECT_TRUE((*model)->layers[0].parallel);
  EXPECT_EQ((*model)->layers[0].ffn_norm, nullptr);
  // The same model with Q, K, V and their biases fused: one product.
  ArchSpec fused = phi2();
  fused.fused = true;
  check(fused, {});
}

TEST_F(GptFamilies, StarCoder2MatchesTheReference) {
  const TinyArchModel m(starcoder2());
  check(starcoder2(),
        {{"without the output projection's bias", mutate(m, [](TinyArchModel* c) { drop(c, "attn_output.bias"); })},
         {"with RMS norms", mutate(m, [](TinyArchModel* c) {
            c->spec.layer_norm = false;
            drop(c, "norm.bias");
          })}});
}

TEST_F(GptFamilies, StableLmMatchesTheReference) {
  const TinyArchModel m(stablelm());
  check(stablelm(), {{"rotating the whole head", mutate(m, [](TinyArchModel* c) { c->spec.n_rot = 8; })},
                     {"with a GELU FFN", mutate(m, [](TinyArchModel* c) { c->spec.gelu = true; })}});
  const TinyArchModel big(stablelm12b());
  check(stablelm12b(), {{"without the Q/K norms", mutate(big, [](TinyArchModel* c) { drop(c, "attn_q_norm"); })},
                        {"with sequential blocks", sequential(big)}});
  auto model = load(big);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_TRUE((*model)->layers[0].parallel);
  EXPECT_NE((*model)->layers[0].q_norm, nullptr);
}

// BLOOM: ALiBi (max bias 8; 6 heads, so the slopes' second series is
// used), a LayerNorm of the embeddings, fused Q/K/V with a bias, tied.
ArchSpec bloom() {
  ArchSpec s = gpt_base("bloom", 59);
  s.n_head = 6;
  s.n_head_kv = 6;
  s.n_embd = 48;
  s.fused = true;
  s.tied = true;
  s.alibi_max_bias = 8.0f;
  s.embd_norm = true;
  return s;
}

// MPT: ALiBi with the file's max bias, no biases anywhere.
ArchSpec mpt() {
  ArchSpec s = gpt_base("mpt", 60);
  s.n_head_kv = s.n_head;
  s.fused = true;
  s.tied = true;
  s.norm_bias = false;
  s.ffn_bias = false;
  s.qkv_bias = false;
  s.out_bias = false;
  s.alibi_max_bias = 4.0f;
  s.alibi_key = true;
  return s;
}

TEST_F(GptFamilies, BloomAlibiAndEmbeddingNormMatchTheReference) {
  const TinyArchModel m(bloom());
  check(bloom(), {{"without ALiBi", mutate(m,
                                           [](TinyArchModel* c) {
                                             c->spec.alibi_max_bias = 0.0f;
                                             c->spec.rope_finetuned = 0;  // (and no RoPE)
                                           })},
                  {"with half ALiBi's max bias", mutate(m, [](TinyArchModel* c) { c->spec.alibi_max_bias = 4.0f; })},
                  {"without the embedding norm", mutate(m, [](TinyArchModel* c) { c->spec.embd_norm = false; })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_FLOAT_EQ((*model)->hparams().alibi_max_bias, 8.0f);
  // ggml's slopes for 6 heads: 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3.
  for (const auto& [h, slope] : {std::pair<int64_t, float>{0, 0.25f}, {3, 1.0f / 256}, {4, 0.5f}, {5, 0.125f}}) {
    EXPECT_FLOAT_EQ((*model)->hparams().alibi_slope(h), slope) << h;
  }
  EXPECT_NE((*model)->tok_norm, nullptr);
}

// ALiBi in a sequence batch (loom serve's steps): each sequence's distances
// are its own positions, in its own slot's rows.
TEST_F(GptFamilies, BloomAlibiHoldsInSequenceBatches) {
  const TinyArchModel m(bloom());
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  check_seq_batches(model->get(), ReferenceForward(m).logits(prompt()), false, 16, 3);
}

TEST_F(GptFamilies, MptAlibiMatchesTheReference) {
  const TinyArchModel m(mpt());
  check(mpt(), {{"with bloom's max bias", mutate(m, [](TinyArchModel* c) { c->spec.alibi_max_bias = 8.0f; })}});
  auto no_key = load(m, m.gguf({}, {"attention.max_alibi_bias"}));
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.status().message().find("missing metadata key mpt.attention.max_alibi_bias"), std::string::npos)
      << no_key.status().message();
  // clamp_kqv: the fused projection clamped (at a bound these weights cross).
  ArchSpec c = mpt();
  c.clamp_kqv = 0.5f;
  const TinyArchModel mc(c);
  check(c, {{"unclamped", mutate(mc, [](TinyArchModel* x) { x->spec.clamp_kqv = 0.0f; })}});
}

// StarCoder (1): GPT-2's layout with multi-query attention.
ArchSpec starcoder() {
  ArchSpec s = gpt2();
  s.arch = "starcoder";
  s.n_head_kv = 1;
  s.seed = 63;
  return s;
}

TEST_F(GptFamilies, StarCoderMatchesTheReference) {
  const ArchSpec s = starcoder();
  const TinyArchModel m(s);
  check(s, {{"without the learned positions", mutate(m, [](TinyArchModel* c) {
               c->spec.pos_embd = false;
               c->spec.rope_finetuned = 0;
             })}});
}

// Nemotron: LayerNorms with biases, separate Q/K/V, half of each head
// rotated (neox), a ReLU^2 FFN without a gate, an untied head.
ArchSpec nemotron() {
  ArchSpec s = gpt_base("nemotron", 64);
  s.relu_sqr = true;
  s.gelu = false;
  s.qkv_bias = false;
  s.n_rot = 4;
  return s;
}

TEST_F(GptFamilies, NemotronReluSquaredMatchesTheReference) {
  const ArchSpec s = nemotron();
  const TinyArchModel m(s);
  check(s, {{"with GELU", mutate(m, [](TinyArchModel* c) {
               c->spec.relu_sqr = false;
               c->spec.gelu = true;
             })}});
}

// Falcon: multi-query attention (one K/V head), parallel blocks from one
// LayerNorm, no biases but the norms'; 40B's attention reads its own norm.
ArchSpec falcon(bool norm_2) {
  ArchSpec s = gpt_base("falcon", norm_2 ? 62 : 61);
  s.n_head_kv = 1;
  s.fused = true;
  s.parallel_blocks = true;
  s.attn_norm_2 = norm_2;
  s.ffn_bias = false;
  s.qkv_bias = false;
  s.out_bias = false;
  return s;
}

TEST_F(GptFamilies, FalconParallelBlocksAndItsSecondNormMatchTheReference) {
  const TinyArchModel m7(falcon(false));
  check(falcon(false), {{"with sequential blocks", sequential(m7)}});
  const TinyArchModel m40(falcon(true));
  check(falcon(true),
        {{"with one norm for both blocks", mutate(m40, [](TinyArchModel* c) { drop(c, "attn_norm_2"); })}});
  auto model = load(m40);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_NE((*model)->layers[1].attn_norm_2, nullptr);
  EXPECT_EQ((*model)->hparams().n_head_kv, 1);
}

// GLM-4 (0414): RMS norms before and after both blocks, Q/K/V and gate/up
// fused, Q/K/V biases, normal RoPE over half of each head. (Not of GPT-2's
// line, but of its fused layout.)
ArchSpec glm4() {
  ArchSpec s;
  s.arch = "glm4";
  s.post_norms = true;
  s.fused = true;
  s.qkv_bias = true;
  s.n_rot = 4;
  s.seed = 58;
  return s;
}

TEST_F(GptFamilies, Glm4MatchesTheReference) {
  const TinyArchModel m(glm4());
  check(glm4(), {{"without the post-norms", mutate(m,
                                                   [](TinyArchModel* c) {
                                                     drop(c, "post_attention_norm");
                                                     drop(c, "post_ffw_norm");
                                                   })},
                 {"with neox RoPE", mutate(m, [](TinyArchModel* c) { c->spec.neox = true; })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_NE((*model)->layers[0].ffn_gate_up, nullptr);
  EXPECT_NE((*model)->layers[0].post_attn_norm, nullptr);
  // GLM-4V's M-RoPE sections: refused by name, not ignored.
  TinyArchModel v = m;
  v.spec.mrope_sections = {1, 1, 0, 0};
  auto vision = load(v);
  ASSERT_FALSE(vision.ok());
  EXPECT_EQ(vision.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(vision.status().message().find("glm4.rope.dimension_sections"), std::string::npos)
      << vision.status().message();
}

// Each tensor of each family left out: a bias, StableLM's ffn_norm and
// the output head (then tied to the embedding) are optional; anything else is named as missing (a
// fused Q/K/V as the separate Q it would otherwise read).
TEST_F(GptFamilies, EveryRequiredTensorIsNamedWhenMissing) {
  for (const ArchSpec& spec : {gpt2(), gptneox(1), phi2(), starcoder2(), stablelm(), bloom()}) {
    const TinyArchModel m(spec);
    for (const auto& [name, t] : m.file_tensors()) {
      SCOPED_TRACE(spec.arch + ": without " + name);
      auto model = load(m, m.gguf({name}));
      const bool optional = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
      if (optional || name == "output.weight" ||
          (spec.arch == "stablelm" && name.find("ffn_norm") != std::string::npos)) {
        EXPECT_TRUE(model.ok()) << model.status().to_string();
        continue;
      }
      ASSERT_FALSE(model.ok());
      EXPECT_EQ(model.status().code(), StatusCode::kNotFound) << model.status().to_string();
      const size_t qkv = name.find("attn_qkv");
      const std::string named = qkv == std::string::npos ? name : name.substr(0, qkv) + "attn_q.weight";
      EXPECT_NE(model.status().message().find("missing tensor '" + named + "'"), std::string::npos)
          << model.status().message();
    }
  }
}

// Biases of the FFN and the norms are read wherever a file has them (as
// llama.cpp reads a llama's optional MLP biases): a llama with them.
TEST_F(GptFamilies, FfnAndNormBiasesOfAnyFileAreAdded) {
  ArchSpec s;
  s.ffn_bias = true;
  s.norm_bias = true;
  s.seed = 57;
  const TinyArchModel m(s);
  check(s, {{"without the FFN's biases", mutate(m, [](TinyArchModel* c) { drop(c, "ffn_down.bias"); })},
            {"without the norms' biases", mutate(m, [](TinyArchModel* c) { drop(c, "norm.bias"); })}});
}

// On vulkan0 beside the cpu, and split with a simulated device.
TEST_F(GptFamilies, OnVulkan0AndSplitTheFamiliesMatchTheReference) {
  check_on_vulkan0_and_split({gpt2(), gptneox(1), phi2(), starcoder2(), stablelm12b(), glm4(), bloom(), mpt(),
                              falcon(true), starcoder(), nemotron()});
}

}  // namespace
}  // namespace loom::llm
