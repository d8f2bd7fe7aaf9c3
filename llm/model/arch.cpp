#include "llm/model/arch.hpp"

#include "loom/plugin.h"

namespace loom::llm {
namespace {

// A row with every trait off but the name and the RoPE mode; the builders
// below set the rest by name (the table's older rows set them by position).
constexpr ArchTraits base(const char* name, int rope_mode) {
  return ArchTraits{name, rope_mode, false, false, false, false, false, false, 0, 0.0f, false, false};
}

// GPT-2 and its heirs: LayerNorms (with biases), neox RoPE over the first
// rope.dimension_count dims of each head, a GELU FFN without a gate.
constexpr ArchTraits gpt_family(const char* name) {
  ArchTraits a = base(name, LOOM_ROPE_MODE_NEOX);
  a.layer_norm = true;
  a.ffn_sequential = true;
  return a;
}
constexpr ArchTraits gpt2(const char* name) {
  ArchTraits a = gpt_family(name);
  a.pos_embd = true;  // (no RoPE)
  return a;
}
constexpr ArchTraits gptneox() {
  ArchTraits a = gpt_family("gptneox");
  a.parallel_residual_key = true;
  return a;
}
constexpr ArchTraits phi2() {
  ArchTraits a = gpt_family("phi2");
  a.parallel_blocks = true;  // one norm feeds both blocks
  return a;
}
// StableLM (2 1.6B, 3B, Zephyr; 2 12B with per-head Q/K LayerNorms and
// parallel blocks): LayerNorms, partial neox RoPE, a SwiGLU FFN.
constexpr ArchTraits stablelm() {
  ArchTraits a = base("stablelm", LOOM_ROPE_MODE_NEOX);
  a.layer_norm = true;
  a.ffn_norm_optional = true;
  return a;
}

// Command R7B (cohere2): command-r with three sliding-window layers to one
// global, RoPE (the global base) on the local layers only.
constexpr ArchTraits cohere2() {
  ArchTraits a = base("cohere2", LOOM_ROPE_MODE_NORMAL);
  a.swa_period = 4;
  a.nope_period = 4;
  a.layer_norm = true;
  a.parallel_blocks = true;
  a.logit_multiplier = true;
  return a;
}

// Qwen1.5-MoE / Qwen2-57B-A14B: qwen2 (biases, neox) whose FFN is 60-64
// experts, their probabilities not renormalised, and a gated shared expert.
constexpr ArchTraits qwen2moe() {
  ArchTraits a = base("qwen2moe", LOOM_ROPE_MODE_NEOX);
  a.experts = true;
  a.expert_weights_raw = true;
  a.shared_expert = true;
  return a;
}
// OLMoE (AllenAI, 1B-7B): Q/K RMS norms over the whole projection, 64
// experts, top-8, probabilities not renormalised.
constexpr ArchTraits olmoe() {
  ArchTraits a = base("olmoe", LOOM_ROPE_MODE_NEOX);
  a.qk_norm = true;
  a.experts = true;
  a.qk_norm_whole = true;
  a.expert_weights_raw = true;
  return a;
}

// GLM-4 (0414: 9B, 32B; GLM-Z1): pre- and post-norms around both blocks,
// gate and up fused in ffn_up, normal RoPE over part of each head.
constexpr ArchTraits glm4() {
  ArchTraits a = base("glm4", LOOM_ROPE_MODE_NORMAL);
  a.fused_gate_up = true;
  a.post_norms = true;
  a.sections_refused = true;
  return a;
}

// MiniCPM (1B, 2B; OpenBMB): llama with Granite's multipliers, which older
// files leave to their defaults.
constexpr ArchTraits minicpm() {
  ArchTraits a = base("minicpm", LOOM_ROPE_MODE_NORMAL);
  a.granite = true;
  a.granite_defaults = true;
  return a;
}

// EXAONE 4.0 (1.2B; 32B): no input norms, post-norms (olmo2's layout) with
// per-head Q/K norms; the 32B's three windowed RoPE layers to one global
// NoPE layer (a window of 4096 unless the file says).
constexpr ArchTraits exaone4() {
  ArchTraits a = base("exaone4", LOOM_ROPE_MODE_NEOX);
  a.rope_freqs = true;
  a.qk_norm = true;
  a.swa_period = 4;
  a.post_norms = true;
  a.pre_norms = false;
  a.nope_period = 4;
  a.swa_layer_count = 64;
  a.swa_default = 4096;
  return a;
}

// BLOOM (BigScience, 560m-7b1; BLOOMZ): LayerNorms with biases, a
// normed embedding, fused Q/K/V, ALiBi with a max bias of 8, GELU FFN.
constexpr ArchTraits bloom() {
  ArchTraits a = gpt_family("bloom");
  a.alibi_max_bias = 8.0f;
  a.embd_norm = true;
  return a;
}
// MPT (MosaicML 7B, 30B): the GPT layout with ALiBi (its max bias from the file).
constexpr ArchTraits mpt() {
  ArchTraits a = gpt_family("mpt");
  a.alibi_key = true;
  return a;
}

// Falcon (7B, 40B, 180B; not Falcon 3, which is llama): the GPT layout,
// multi-query attention, attention and FFN side by side from one norm
// (40B and 180B: the attention from its own, attn_norm_2), no biases.
constexpr ArchTraits falcon() {
  ArchTraits a = gpt_family("falcon");
  a.parallel_blocks = true;
  return a;
}

// OLMo 1 (AllenAI 1B, 7B): llama's layout with LayerNorms that have no
// weights, Q/K/V clamped where the file says.
constexpr ArchTraits olmo() {
  ArchTraits a = base("olmo", LOOM_ROPE_MODE_NORMAL);
  a.layer_norm = true;
  a.weightless_norms = true;
  return a;
}
// Nemotron (Minitron 4B / 8B, Nemotron-4): LayerNorms with biases (the
// converter folds Nemotron's weight + 1), partial neox RoPE, a ReLU^2 FFN
// without a gate.
constexpr ArchTraits nemotron() {
  ArchTraits a = gpt_family("nemotron");
  a.relu_sqr = true;
  return a;
}
// Arcee (AFM-4.5B): llama with a ReLU^2 FFN without a gate.
constexpr ArchTraits arcee() {
  ArchTraits a = base("arcee", LOOM_ROPE_MODE_NORMAL);
  a.rope_freqs = true;
  a.ffn_sequential = true;
  a.relu_sqr = true;
  return a;
}

// Seed-OSS (ByteDance, 36B): llama with neox RoPE and Q/K/V biases, its
// FFN norm stored as post_attention_norm.
constexpr ArchTraits seed_oss() {
  ArchTraits a = base("seed_oss", LOOM_ROPE_MODE_NEOX);
  a.ffn_norm_post_attention_name = true;
  return a;
}

// Baichuan / Baichuan 2 (7B: RoPE; 13B: ALiBi): llama's layout (the
// converter splits W_pack into Q, K, V).
constexpr ArchTraits baichuan() {
  ArchTraits a = base("baichuan", LOOM_ROPE_MODE_NORMAL);
  a.rope_layer_count = 32;
  a.alibi_layer_count = 40;
  a.alibi_max_bias = 8.0f;
  return a;
}

// Qwen3-VL's text model (dense and MoE): qwen3 / qwen3moe with interleaved
// M-RoPE; deepstack features come from the vision tower only (none for
// text, so nothing is added).
constexpr ArchTraits qwen3vl(const char* name, bool experts) {
  ArchTraits a = base(name, LOOM_ROPE_MODE_NEOX);
  a.qk_norm = true;
  a.experts = experts;
  a.mrope = true;
  a.mrope_interleaved = true;
  return a;
}

// mistral files say "llama" (their sliding window key is ignored, see
// llama_hparams.cpp): nothing of their own here.
constexpr ArchTraits kArchs[] = {
    // name     rope mode              rope_freqs qkv_bias qk_norm fused_qkv fused_gate_up gemma swa_period
    //   swa_rope_base softcap experts [post_norms nope_period granite pre_norms qk_norm_whole window_refused mrope
    //   layer_norm parallel_blocks logit_multiplier]
    // (llama: Mixtral's files, with expert_count, are mixtures of experts.)
    {"llama", LOOM_ROPE_MODE_NORMAL, true, false, false, false, false, false, 0, 0.0f, false, false},
    {"qwen2", LOOM_ROPE_MODE_NEOX, false, true, false, false, false, false, 0, 0.0f, false, false},
    {"qwen3", LOOM_ROPE_MODE_NEOX, false, false, true, false, false, false, 0, 0.0f, false, false},
    // Qwen3-MoE (30B-A3B, 235B-A22B): qwen3 with 128 experts, top-8.
    {"qwen3moe", LOOM_ROPE_MODE_NEOX, false, false, true, false, false, false, 0, 0.0f, false, true},
    // Phi-3 (mini, medium; 4k contexts): longrope files (128k) are refused by
    // the rope reader, naming the key. Its sliding_window key is ignored, as
    // llama.cpp does.
    {"phi3", LOOM_ROPE_MODE_NEOX, false, false, false, true, true, false, 0, 0.0f, false, false},
    // The first Gemma (2B, 7B, CodeGemma): no post-norms, no window, no caps.
    {"gemma", LOOM_ROPE_MODE_NEOX, false, false, false, false, false, true, 0, 0.0f, false, false},
    // Gemma 2: soft-capped attention and output logits, every other layer
    // local (global RoPE on both), no Q/K norms.
    {"gemma2", LOOM_ROPE_MODE_NEOX, false, false, false, false, false, true, 2, 0.0f, true, false, true},
    // Gemma 3 (text): Q/K norms, five local (sliding-window) layers to one global.
    {"gemma3", LOOM_ROPE_MODE_NEOX, false, false, true, false, false, true, 6, 10000.0f, false, false, true},
    // SmolLM3: llama with every fourth layer unrotated (NoPE).
    {"smollm3", LOOM_ROPE_MODE_NORMAL, false, false, false, false, false, false, 0, 0.0f, false, false, false, 4},
    // IBM Granite 3 (dense) and Granite 3 MoE: llama with four multipliers.
    {"granite", LOOM_ROPE_MODE_NORMAL, true, false, false, false, false, false, 0, 0.0f, false, false, false, 0,
     true},
    {"granitemoe", LOOM_ROPE_MODE_NORMAL, true, false, false, false, false, false, 0, 0.0f, false, true, false, 0,
     true},
    // Qwen2-VL / Qwen2.5-VL's text model: qwen2 with M-RoPE sections, which
    // for text rotate as neox does (the vision tower is another file).
    {"qwen2vl", LOOM_ROPE_MODE_NEOX, false, true, false, false, false, false, 0, 0.0f, false, false, false, 0, false,
     true, false, false, true},
    // EXAONE 3 / 3.5 (LG): llama's layout with neox RoPE (llama-3 style
    // rope_freqs where the file has them).
    {"exaone", LOOM_ROPE_MODE_NEOX, true, false, false, false, false, false, 0, 0.0f, false, false},
    // ERNIE 4.5's dense models (Baidu, 0.3B): llama's graph; biases where present.
    {"ernie4_5", LOOM_ROPE_MODE_NORMAL, false, false, false, false, false, false, 0, 0.0f, false, false},
    // InternLM2 / 2.5 (Shanghai AI Lab): llama's graph (the converter splits its fused wqkv).
    {"internlm2", LOOM_ROPE_MODE_NORMAL, false, false, false, false, false, false, 0, 0.0f, false, false},
    // Cohere's Command R (35B) and Aya 23 / Aya Expanse: LayerNorms, parallel
    // attention and FFN, logits times logit_scale, tied output.
    {"command-r", LOOM_ROPE_MODE_NORMAL, false, false, false, false, false, false, 0, 0.0f, false, false, false, 0,
     false, true, false, false, false, true, true, true},
    // OLMo 2 (1B-32B): no input norms, post-norms on both blocks' outputs,
    // Q/K norms over the whole projection.
    {"olmo2", LOOM_ROPE_MODE_NEOX, false, false, true, false, false, false, 0, 0.0f, false, false, true, 0, false,
     false, true, true},
    // GPT-2 (OpenAI's 124M-1.5B; learned positions), GPT-NeoX / Pythia,
    // Phi-2 (and Phi-1.5), StarCoder 2.
    gpt2("gpt2"),
    gptneox(),
    phi2(),
    gpt_family("starcoder2"),
    stablelm(),
    cohere2(),
    qwen2moe(),
    olmoe(),
    glm4(),
    minicpm(),
    exaone4(),
    bloom(),
    mpt(),
    falcon(),
    // StarCoder (1), SantaCoder, tiny_starcoder: GPT-2's layout with
    // multi-query attention.
    gpt2("starcoder"),
    olmo(),
    nemotron(),
    arcee(),
    seed_oss(),
    baichuan(),
    qwen3vl("qwen3vl", false),
    qwen3vl("qwen3vlmoe", true),
};

}  // namespace

const ArchTraits* find_arch(std::string_view name) {
  for (const ArchTraits& a : kArchs) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

std::string supported_archs() {
  std::string s;
  for (const ArchTraits& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

}  // namespace loom::llm
