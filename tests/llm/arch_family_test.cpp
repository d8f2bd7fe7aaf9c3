// More of the llama family on tiny random models against the double-
// precision reference (reference_forward.hpp): SmolLM3's unrotated (NoPE)
// layers, Granite's four multipliers (dense and its mixture of experts;
// MiniCPM's with their defaults), the first Gemma (no post-norms), OLMo 2
// (no input norms, Q/K norms over the whole projection), Qwen2-VL's text
// model (M-RoPE sections), EXAONE 4.0 (olmo2's layout, per-head Q/K norms,
// the 32B's windows), EXAONE, ERNIE 4.5 and InternLM2 (llama's graph,
// their own RoPE), OLMo 1 (weightless LayerNorms, clamped Q/K/V), Arcee
// (ReLU^2), Command R / Aya (LayerNorms, parallel blocks) and Command
// R7B (windowed RoPE layers, a global NoPE one); each with mutants (the reference without
// one feature) that are far off, so a graph that skipped the feature would
// fail. Then what every file gets: attention biases read wherever present
// (as llama.cpp reads a llama's), and any tensor the graph would not read
// refused by name, since running without it computes another model (a
// vision tower's v.* and mm.* excepted: loom runs the text model).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "arch_fixture.hpp"

namespace loom::llm {
namespace {

class ArchFamilies : public Architectures {};

// Four layers: layer 3 is the NoPE one ((3 + 1) % 4 == 0); tied output.
ArchSpec smollm3() {
  ArchSpec s;
  s.arch = "smollm3";
  s.n_layer = 4;
  s.nope_period = 4;
  s.tied = true;
  s.seed = 31;
  return s;
}

// Granite's multipliers at values these weights make visible (Granite 3's
// own are 12, 0.22, 1/128 and 8 for 4096-wide layers).
ArchSpec granite() {
  ArchSpec s;
  s.arch = "granite";
  s.embedding_scale = 3.0f;
  s.residual_scale = 0.5f;
  s.attention_scale = 0.5f;
  s.logit_scale = 2.5f;
  s.tied = true;
  s.seed = 32;
  return s;
}

ArchSpec granitemoe() {
  ArchSpec s = granite();
  s.arch = "granitemoe";
  s.n_expert = 4;
  s.n_expert_used = 2;
  s.expert_ffn = 16;
  s.seed = 33;
  return s;
}

// The first Gemma: embeddings times sqrt(n_embd), GELU-gated FFN, neox
// RoPE, wide heads, no post-norms, window or soft-caps.
ArchSpec gemma() {
  ArchSpec s;
  s.arch = "gemma";
  s.gemma = true;
  s.neox = true;
  s.tied = true;
  s.head_dim = 16;
  s.eps = 1e-6f;
  s.seed = 34;
  return s;
}

// OLMo 2: no input norms, post-norms on both blocks, Q/K norms over the
// whole projection (GQA: K's norm spans 2 heads), neox RoPE, an output head.
ArchSpec olmo2() {
  ArchSpec s;
  s.arch = "olmo2";
  s.neox = true;
  s.qk_norm = true;
  s.qk_norm_whole = true;
  s.pre_norms = false;
  s.post_norms = true;
  s.eps = 1e-6f;
  s.seed = 39;
  return s;
}

TEST_F(ArchFamilies, Olmo2NormsMatchTheReference) {
  const TinyArchModel m(olmo2());
  check(olmo2(), {{"with per-head Q/K norms", mutate(m, [](TinyArchModel* c) {
                     // The same weights applied head by head (the first head's slice).
                     c->spec.qk_norm_whole = false;
                     for (auto& [name, t] : c->tensors) {
                       if (name.find("_norm.weight") != std::string::npos && name.find("attn_") != std::string::npos) {
                         t.v.resize(static_cast<size_t>(c->spec.hd()));
                         t.ne = {static_cast<uint64_t>(c->spec.hd())};
                       }
                     }
                   })},
                  {"without the post-norms", mutate(m, [](TinyArchModel* c) {
                     drop(c, "post_attention_norm");
                     drop(c, "post_ffw_norm");
                   })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->layers[0].attn_norm, nullptr);
  EXPECT_EQ((*model)->layers[0].q_norm->ne[0], 32);
  EXPECT_EQ((*model)->layers[0].k_norm->ne[0], 16);
  // OLMo 3's windowed layers are not implemented: refused by name.
  auto windowed = load(m, m.gguf({}, {}, {{"attention.sliding_window", 4}}));
  ASSERT_FALSE(windowed.ok());
  EXPECT_EQ(windowed.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(windowed.status().message().find("olmo2.attention.sliding_window = 4"), std::string::npos)
      << windowed.status().message();
}

// Qwen2-VL's text model: qwen2 (biases, neox, tied) whose M-RoPE sections
// cover the 4 rotated pairs of its 8-wide heads.
ArchSpec qwen2vl() {
  ArchSpec s;
  s.arch = "qwen2vl";
  s.neox = true;
  s.qkv_bias = true;
  s.tied = true;
  s.mrope_sections = {1, 2, 1, 0};
  s.eps = 1e-6f;
  s.seed = 40;
  return s;
}

TEST_F(ArchFamilies, Qwen2VlTextRotatesAsNeoxButTheExtraPosition) {
  const TinyArchModel m(qwen2vl());
  check(qwen2vl(), {{"with normal RoPE", mutate(m, [](TinyArchModel* c) { c->spec.neox = false; })},
                    {"without biases", mutate(m, [](TinyArchModel* c) { drop(c, ".bias"); })}});
  // Sections that leave a pair to the extra position (0 for text): that
  // pair does not rotate (llama.cpp's text positions [p, p, p, 0]).
  ArchSpec partial = qwen2vl();
  partial.mrope_sections = {1, 1, 1, 1};
  const TinyArchModel p(partial);
  check(partial, {{"rotating every pair", mutate(p, [](TinyArchModel* c) { c->spec.mrope_sections = {1, 2, 1, 0}; })}});
  auto missing = load(m, m.gguf({}, {"rope.dimension_sections"}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing metadata key qwen2vl.rope.dimension_sections"), std::string::npos)
      << missing.status().message();
}

// Qwen3-VL's text model: qwen3 with interleaved M-RoPE; with 16-wide heads
// (8 pairs) and sections [4, 1, 2, 1], ggml's assignment leaves pairs 4 and
// 7 (k % 3 == 1 but k >= 3 * 1) to the extra position, which does not
// rotate for text (contiguous sections would leave pair 7 only); the MoE
// variant likewise.
ArchSpec qwen3vl(bool moe) {
  ArchSpec s;
  s.arch = moe ? "qwen3vlmoe" : "qwen3vl";
  s.neox = true;
  s.qk_norm = true;
  s.head_dim = 16;
  s.mrope_sections = {4, 1, 2, 1};
  s.mrope_interleaved = true;
  if (moe) {
    s.n_expert = 4;
    s.n_expert_used = 2;
    s.expert_ffn = 16;
  }
  s.eps = 1e-6f;
  s.seed = moe ? 55 : 54;
  return s;
}

TEST_F(ArchFamilies, Qwen3VlInterleavedMropeMatchesTheReference) {
  for (bool moe : {false, true}) {
    const TinyArchModel m(qwen3vl(moe));
    check(qwen3vl(moe),
          {{"with contiguous sections", mutate(m, [](TinyArchModel* c) { c->spec.mrope_interleaved = false; })},
           {"rotating every pair", mutate(m, [](TinyArchModel* c) {
              c->spec.mrope_sections = {4, 2, 2, 0};
            })}});
  }
  EXPECT_TRUE(qwen3vl(false).mrope_extra_pair(4));
  EXPECT_TRUE(qwen3vl(false).mrope_extra_pair(7));
  EXPECT_FALSE(qwen3vl(false).mrope_extra_pair(6));
}

// EXAONE (neox RoPE, llama-3 style factors) and ERNIE 4.5 (normal RoPE,
// Q/K/V biases here): llama's graph, each with its own rotation.
TEST_F(ArchFamilies, ExaoneErnieAndInternLm2MatchTheReference) {
  ArchSpec exaone;
  exaone.arch = "exaone";
  exaone.neox = true;
  exaone.rope_freqs = true;
  exaone.seed = 41;
  const TinyArchModel e(exaone);
  check(exaone, {{"with normal RoPE", mutate(e, [](TinyArchModel* c) { c->spec.neox = false; })},
                 {"without rope_freqs", mutate(e, [](TinyArchModel* c) { drop(c, "rope_freqs"); })}});
  ArchSpec ernie;
  ernie.arch = "ernie4_5";
  ernie.qkv_bias = true;
  ernie.tied = true;
  ernie.seed = 42;
  const TinyArchModel r(ernie);
  check(ernie, {{"with neox RoPE", mutate(r, [](TinyArchModel* c) { c->spec.neox = true; })}});
  // InternLM2: llama's graph under its own name.
  ArchSpec internlm2;
  internlm2.arch = "internlm2";
  internlm2.seed = 47;
  const TinyArchModel i(internlm2);
  check(internlm2, {{"with neox RoPE", mutate(i, [](TinyArchModel* c) { c->spec.neox = true; })}});
}

// Command R / Aya: LayerNorms, attention and FFN in parallel from one norm,
// logits times logit_scale, tied output; Command R+ adds per-head LayerNorms
// of Q and K with a weight per head.
ArchSpec command_r(bool qk_norms) {
  ArchSpec s;
  s.arch = "command-r";
  s.layer_norm = true;
  s.parallel_blocks = true;
  s.logit_scale = 0.5f;
  s.logit_scale_multiplies = true;
  s.qk_norm = qk_norms;
  s.tied = true;
  s.seed = qk_norms ? 44 : 43;
  return s;
}

TEST_F(ArchFamilies, CommandRLayerNormsAndParallelBlocksMatchTheReference) {
  for (bool qk : {false, true}) {
    const ArchSpec spec = command_r(qk);
    const TinyArchModel m(spec);
    std::vector<std::pair<std::string, TinyArchModel>> mutants = {
        {"with RMS norms", mutate(m, [](TinyArchModel* c) { c->spec.layer_norm = false; })},
        {"with the logits divided", mutate(m, [](TinyArchModel* c) { c->spec.logit_scale_multiplies = false; })}};
    if (qk) {
      mutants.emplace_back("with head 0's Q/K norm weights for every head", mutate(m, [](TinyArchModel* c) {
                             for (auto& [name, t] : c->tensors) {
                               if (name.find("attn_q_norm") == std::string::npos &&
                                   name.find("attn_k_norm") == std::string::npos) {
                                 continue;
                               }
                               for (size_t i = t.ne[0]; i < t.v.size(); ++i) t.v[i] = t.v[i % t.ne[0]];
                             }
                           }));
    }
    check(spec, mutants);
    auto model = load(m);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ((*model)->layers[0].ffn_norm, nullptr);
    EXPECT_EQ((*model)->layers[0].q_norm != nullptr, qk);
    EXPECT_FLOAT_EQ((*model)->hparams().logit_factor, 0.5f);
  }
  const TinyArchModel m(command_r(false));
  auto no_scale = load(m, m.gguf({}, {"logit_scale"}));
  ASSERT_FALSE(no_scale.ok());
  EXPECT_NE(no_scale.status().message().find("missing metadata key command-r.logit_scale"), std::string::npos)
      << no_scale.status().message();
}

// Command R7B: command-r whose layers 0-2 of every 4 attend through a
// window with RoPE and layer 3 globally without it.
ArchSpec cohere2() {
  ArchSpec s = command_r(false);
  s.arch = "cohere2";
  s.n_layer = 4;
  s.sliding_window = 3;
  s.swa_period = 4;
  s.swa_rope_base = 0.0f;
  s.nope_period = 4;
  s.seed = 45;
  return s;
}

// EXAONE 4.0: olmo2's layout (no input norms, post-norms) with per-head Q/K
// norms; only a 64-layer file (the 32B) has windows: layers 0-2 of every 4
// windowed with RoPE, layer 3 global without.
ArchSpec exaone4(int64_t n_layer) {
  ArchSpec s;
  s.arch = "exaone4";
  s.neox = true;
  s.qk_norm = true;
  s.pre_norms = false;
  s.post_norms = true;
  s.n_layer = n_layer;
  if (n_layer == 64) {
    s.sliding_window = 3;
    s.swa_period = 4;
    s.swa_rope_base = 0.0f;
    s.nope_period = 4;
  }
  s.seed = 48;
  return s;
}

TEST_F(ArchFamilies, Exaone4MatchesTheReference) {
  const TinyArchModel small(exaone4(2));
  check(exaone4(2), {{"with input norms (the post-norms' weights)", mutate(small, [](TinyArchModel* c) {
                        c->spec.pre_norms = true;
                        for (int64_t il = 0; il < c->spec.n_layer; ++il) {
                          const std::string p = "blk." + std::to_string(il) + ".";
                          c->tensors[p + "attn_norm.weight"] = c->tensors[p + "post_attention_norm.weight"];
                          c->tensors[p + "ffn_norm.weight"] = c->tensors[p + "post_ffw_norm.weight"];
                        }
                      })}});
  // A window key in a file of another size is not applied (llama.cpp's rule).
  auto keyed = load(small, small.gguf({}, {}, {{"attention.sliding_window", 3}}));
  ASSERT_TRUE(keyed.ok()) << keyed.status().to_string();
  EXPECT_FALSE((*keyed)->hparams().is_swa(0));
  EXPECT_TRUE((*keyed)->hparams().rotates(1));

  const TinyArchModel big(exaone4(64));
  check(exaone4(64), {{"without the window", mutate(big, [](TinyArchModel* c) { c->spec.swa_period = 0; })},
                      {"rotating the global layers", mutate(big, [](TinyArchModel* c) { c->spec.nope_period = 0; })}});
  auto no_key = load(big, big.gguf({}, {"attention.sliding_window"}));
  ASSERT_TRUE(no_key.ok()) << no_key.status().to_string();
  EXPECT_EQ((*no_key)->hparams().n_swa, 4096);
  EXPECT_TRUE((*no_key)->hparams().is_swa(62));
  EXPECT_FALSE((*no_key)->hparams().rotates(63));
}

TEST_F(ArchFamilies, Cohere2WindowsAndNopeGlobalLayersMatchTheReference) {
  const ArchSpec s = cohere2();
  const TinyArchModel m(s);
  check(s, {{"without the window", mutate(m, [](TinyArchModel* c) { c->spec.swa_period = 0; })},
            {"rotating the global layer", mutate(m, [](TinyArchModel* c) { c->spec.nope_period = 0; })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_TRUE((*model)->hparams().is_swa(2));
  EXPECT_FALSE((*model)->hparams().is_swa(3));
  EXPECT_FALSE((*model)->hparams().rotates(3));
  auto no_window = load(m, m.gguf({}, {"attention.sliding_window"}));
  ASSERT_FALSE(no_window.ok());
  EXPECT_NE(no_window.status().message().find("cohere2.attention.sliding_window"), std::string::npos)
      << no_window.status().message();
}

TEST_F(ArchFamilies, SmolLm3NopeLayersMatchTheReference) {
  const TinyArchModel m(smollm3());
  check(smollm3(), {{"with every layer rotated", mutate(m, [](TinyArchModel* c) { c->spec.nope_period = 0; })},
                    {"with layer 1 unrotated instead", mutate(m, [](TinyArchModel* c) { c->spec.nope_period = 2; })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_TRUE((*model)->hparams().rotates(2));
  EXPECT_FALSE((*model)->hparams().rotates(3));
}

TEST_F(ArchFamilies, GraniteMultipliersMatchTheReference) {
  const TinyArchModel m(granite());
  check(granite(), {{"without the embedding scale", mutate(m, [](TinyArchModel* c) { c->spec.embedding_scale = 0; })},
                    {"without the residual scale", mutate(m, [](TinyArchModel* c) { c->spec.residual_scale = 0; })},
                    {"with 1/sqrt(head dim) scores", mutate(m, [](TinyArchModel* c) { c->spec.attention_scale = 0; })},
                    {"without the logit scale", mutate(m, [](TinyArchModel* c) { c->spec.logit_scale = 0; })}});
  // Each optional multiplier may be absent (no scaling); logit_scale may not.
  auto plain = load(m, m.gguf({}, {"embedding_scale", "residual_scale", "attention.scale"}));
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ((*plain)->hparams().residual_scale, 0.0f);
  EXPECT_FLOAT_EQ((*plain)->hparams().logit_factor, 1.0f / 2.5f);
  EXPECT_EQ((*plain)->hparams().attn_scale, 0.0f);
  auto no_logit = load(m, m.gguf({}, {"logit_scale"}));
  ASSERT_FALSE(no_logit.ok());
  EXPECT_EQ(no_logit.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_logit.status().message().find("missing metadata key granite.logit_scale"), std::string::npos)
      << no_logit.status().message();
  auto zero = load(m, m.gguf({}, {"residual_scale"}, {}, {{"residual_scale", 0.0f}}));
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("granite.residual_scale = 0"), std::string::npos) << zero.status().message();
}

TEST_F(ArchFamilies, GraniteWithRopeOffRotatesNoLayer) {
  ArchSpec s = granite();
  s.rope_finetuned = 0;
  const TinyArchModel m(s);
  check(s, {{"with RoPE", mutate(m, [](TinyArchModel* c) { c->spec.rope_finetuned = 1; })}});
  ArchSpec on = granite();
  on.rope_finetuned = 1;
  check(on, {});
}

// MiniCPM: Granite's multipliers (its graph in llama.cpp), each key
// optional; a file without them gets llama.cpp's defaults for older MiniCPM
// files (embedding 12, residual 1.4 / sqrt(n_layer), logit scale 256 /
// n_embd), and RoPE whatever rope.scaling.finetuned says.
TEST_F(ArchFamilies, MiniCpmMultipliersAndTheirDefaultsMatchTheReference) {
  ArchSpec s = granite();
  s.arch = "minicpm";
  s.attention_scale = 0.0f;
  s.seed = 46;
  const TinyArchModel keyed(s);
  check(s, {{"without the residual scale", mutate(keyed, [](TinyArchModel* c) { c->spec.residual_scale = 0; })}});

  ArchSpec d = s;
  d.embedding_scale = 12.0f;
  d.residual_scale = 1.4f / std::sqrt(static_cast<float>(d.n_layer));
  d.logit_scale = 256.0f / static_cast<float>(d.n_embd);
  d.rope_finetuned = 0;  // (written, and ignored by minicpm; the reference below rotates)
  const TinyArchModel m(d);
  auto model = load(m, m.gguf({}, {"embedding_scale", "residual_scale", "logit_scale"}));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_FLOAT_EQ((*model)->hparams().embd_scale, 12.0f);
  EXPECT_FLOAT_EQ((*model)->hparams().logit_factor, 32.0f / 256.0f);
  EXPECT_TRUE((*model)->hparams().rotates(0));
  d.rope_finetuned = -1;
  const std::vector<std::vector<double>> ref = ReferenceForward(TinyArchModel(d)).logits(prompt());
  const double err = max_abs_diff(loom_logits(model->get(), 5, true), ref);
  EXPECT_LT(err, kTol * 10) << "defaults";
  std::cout << "[ arch ] minicpm with the default multipliers: max |loom - reference| " << err << "\n";
}

// OLMo 1: LayerNorms without weights (no norm tensors at all), Q/K/V
// clamped where the file says (OLMo 1.7: 8; here a bound the weights cross).
ArchSpec olmo() {
  ArchSpec s;
  s.arch = "olmo";
  s.layer_norm = true;
  s.weightless_norms = true;
  s.clamp_kqv = 0.6f;
  s.seed = 49;
  return s;
}

TEST_F(ArchFamilies, OlmoWeightlessNormsAndClampMatchTheReference) {
  const ArchSpec s = olmo();
  const TinyArchModel m(s);
  check(s, {{"unclamped", mutate(m, [](TinyArchModel* c) { c->spec.clamp_kqv = 0.0f; })},
            {"with RMS norms", mutate(m, [](TinyArchModel* c) { c->spec.layer_norm = false; })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->output_norm, nullptr);
  EXPECT_FLOAT_EQ((*model)->hparams().clamp_kqv, 0.6f);
}

// Arcee (AFM-4.5B): llama with a ReLU^2 FFN without a gate.
ArchSpec arcee() {
  ArchSpec s;
  s.arch = "arcee";
  s.ffn_sequential = true;
  s.relu_sqr = true;
  s.seed = 50;
  return s;
}

TEST_F(ArchFamilies, ArceeReluSquaredMatchesTheReference) {
  const ArchSpec s = arcee();
  const TinyArchModel m(s);
  check(s, {{"with SiLU", mutate(m, [](TinyArchModel* c) { c->spec.relu_sqr = false; })}});
}

// Seed-OSS: llama with neox RoPE and Q/K/V biases whose FFN norm the file
// names post_attention_norm (applied before the FFN, not after the attention).
TEST_F(ArchFamilies, SeedOssFfnNormUnderItsOtherNameMatchesTheReference) {
  ArchSpec s;
  s.arch = "seed_oss";
  s.neox = true;
  s.qkv_bias = true;
  s.ffn_norm_as_post_attention = true;
  s.seed = 51;
  const TinyArchModel m(s);
  check(s, {{"with normal RoPE", mutate(m, [](TinyArchModel* c) { c->spec.neox = false; })},
            {"without the FFN norm", mutate(m, [](TinyArchModel* c) {
               for (auto& [name, t] : c->tensors) {
                 if (name.find("ffn_norm") != std::string::npos) std::fill(t.v.begin(), t.v.end(), 1.0f);
               }
             })}});
  // Read as the FFN's input norm, not as a post-norm of the attention.
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_NE((*model)->layers[0].ffn_norm, nullptr);
  EXPECT_EQ((*model)->layers[0].post_attn_norm, nullptr);
}

// Baichuan: llama's layout; positions by the file's size as llama.cpp has
// them: RoPE with 32 layers (the 7B), ALiBi (max bias 8) with 40 (the 13B),
// any other size refused by name.
TEST_F(ArchFamilies, BaichuanRopeOrAlibiBySizeMatchesTheReference) {
  ArchSpec r;
  r.arch = "baichuan";
  r.n_layer = 32;
  r.n_embd = 16;
  r.n_head = 2;
  r.n_head_kv = 2;
  r.n_ff = 16;
  r.seed = 52;
  const TinyArchModel m7(r);
  check(r, {{"with neox RoPE", mutate(m7, [](TinyArchModel* c) { c->spec.neox = true; })}});
  ArchSpec a = r;
  a.n_layer = 40;
  a.n_head = 4;
  a.n_head_kv = 4;
  a.alibi_max_bias = 8.0f;
  a.seed = 53;
  const TinyArchModel m13(a);
  check(a, {{"with RoPE instead", mutate(m13, [](TinyArchModel* c) { c->spec.alibi_max_bias = 0.0f; })}});
  ArchSpec other = r;
  other.n_layer = 2;
  auto refused = load(TinyArchModel(other));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(refused.status().message().find("baichuan.block_count = 2"), std::string::npos)
      << refused.status().message();
}

TEST_F(ArchFamilies, GraniteMoeMatchesTheReference) {
  const TinyArchModel m(granitemoe());
  check(granitemoe(), {{"without the residual scale", mutate(m, [](TinyArchModel* c) { c->spec.residual_scale = 0; })},
                       {"with 3 experts a token", mutate(m, [](TinyArchModel* c) { c->spec.n_expert_used = 3; })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->hparams().n_expert, 4);
}

TEST_F(ArchFamilies, FirstGemmaWithoutPostNormsMatchesTheReference) {
  const TinyArchModel m(gemma());
  check(gemma(), {{"with SiLU and no embedding scale", mutate(m, [](TinyArchModel* c) { c->spec.gemma = false; })},
                  {"with normal RoPE", mutate(m, [](TinyArchModel* c) { c->spec.neox = false; })}});
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->layers[0].post_attn_norm, nullptr);
  // Post-norms in a gemma file are not read: refused by name.
  ArchSpec with_post = gemma();
  with_post.post_norms = true;
  const TinyArchModel p(with_post);
  auto refused = load(p);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(refused.status().message().find("post_attention_norm.weight"), std::string::npos)
      << refused.status().message();
}

// A llama file with Q, K, V and output biases (llama.cpp reads them when
// present): all four are added; without them the reference is far off.
TEST_F(ArchFamilies, AttentionBiasesOfAnyFileAreAdded) {
  ArchSpec s;
  s.qkv_bias = true;
  s.out_bias = true;
  s.seed = 35;
  const TinyArchModel m(s);
  check(s, {{"without the output bias", mutate(m, [](TinyArchModel* c) { drop(c, "attn_output.bias"); })},
            {"without the Q/K/V biases", mutate(m, [](TinyArchModel* c) {
               drop(c, "attn_q.bias");
               drop(c, "attn_k.bias");
               drop(c, "attn_v.bias");
             })}});
}

// A tensor loom would not read (a post-norm where the architecture has
// none, rope factors where it applies none): UNIMPLEMENTED naming it, where
// the model used to load and compute something else.
TEST_F(ArchFamilies, TensorsTheGraphWouldNotReadAreRefused) {
  ArchSpec s;
  s.seed = 36;
  TinyArchModel m(s);
  m.tensors["blk.1.post_ffw_norm.weight"] =
      test::TinyTensor{{static_cast<uint64_t>(s.n_embd)}, std::vector<float>(static_cast<size_t>(s.n_embd), 0.5f)};
  auto model = load(m);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(model.status().message().find("tensor 'blk.1.post_ffw_norm.weight' is not part of loom's llama model"),
            std::string::npos)
      << model.status().message();

  ArchSpec q;
  q.arch = "qwen2";
  q.neox = true;
  q.qkv_bias = true;
  q.rope_freqs = true;  // llama-3's factors in a qwen2 file: qwen2 never applies them
  q.seed = 37;
  auto qwen = load(TinyArchModel(q));
  ASSERT_FALSE(qwen.ok());
  EXPECT_NE(qwen.status().message().find("'rope_freqs.weight' is not part of loom's qwen2 model"), std::string::npos)
      << qwen.status().message();
}

// A file that carries a vision tower beside the text model (v.*, mm.*: some
// distributions' single-file Gemma 3) runs its text model; the tower's
// tensors stay in the file.
TEST_F(ArchFamilies, VisionTowerTensorsAreLeftAside) {
  ArchSpec s;
  s.seed = 38;
  TinyArchModel m(s);
  m.tensors["v.blk.0.attn_q.weight"] = test::TinyTensor{{4, 4}, std::vector<float>(16, 0.25f)};
  m.tensors["mm.input_projection.weight"] = test::TinyTensor{{4, 32}, std::vector<float>(128, 0.25f)};
  check(s, {});
  // Not placed on a device either: the weights counted are the text model's.
  auto with = load(m);
  auto without = load(TinyArchModel(s));
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ((*with)->weights_bytes(), (*without)->weights_bytes());
}

// Two layers on vulkan0 (lavapipe counts; GPU sin/cos and sums: a looser
// bound) and the rest on the cpu, then the layers shared with a simulated
// device: each family's logits hold across devices and splits.
TEST_F(ArchFamilies, OnVulkan0AndSplitTheFamiliesMatchTheReference) {
  ArchSpec llama_biases;
  llama_biases.qkv_bias = true;
  llama_biases.out_bias = true;
  check_on_vulkan0_and_split({smollm3(), granite(), granitemoe(), gemma(), olmo2(), qwen2vl(), command_r(true),
                              llama_biases, cohere2(), olmo(), arcee(), qwen3vl(false)});
}

}  // namespace
}  // namespace loom::llm
