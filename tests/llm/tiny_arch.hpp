// Test helper: tiny random models of each architecture loom runs (llama,
// llama-3 with rope_freqs and rope scaling, mistral-style llama, qwen2,
// qwen3, phi3 with its fused projections, gemma3 with its sliding window,
// gemma2 with soft-capping, Mixtral-style llama and qwen3moe with their experts), kept in memory as float arrays (for the reference forward pass of
// reference_forward.hpp) and written as F32 GGUF files with the independent
// GgufBuilder. Knobs drop any tensor or metadata key, or add keys, for the
// loader's error paths.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf_writer.hpp"
#include "tiny_llama.hpp"

namespace loom::test {

struct ArchSpec {
  std::string arch = "llama";  // general.architecture
  int64_t n_vocab = 40;
  int64_t n_embd = 32;
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t head_dim = 0;  // 0: n_embd / n_head, no attention.key_length key
  int64_t n_ff = 48;
  int64_t n_ctx = 64;
  int64_t n_rot = 0;     // 0: head dim, no rope.dimension_count key
  bool neox = false;     // RoPE pairs (i, i + n_rot/2) instead of (2i, 2i+1)
  bool qkv_bias = false;  // blk.N.attn_{q,k,v}.bias
  bool qk_norm = false;   // blk.N.attn_{q,k}_norm.weight
  bool rope_freqs = false;  // rope_freqs.weight
  // Phi-3's LongRoPE: rope_factors_long / _short.weight (the long ones when
  // the context, n_ctx, exceeds the original one, yarn_orig_ctx).
  bool longrope = false;
  bool tied = false;      // no output.weight
  float freq_base = 10000.0f;
  std::string scaling_type;  // rope.scaling.type; "" leaves the key out
  float scaling_factor = 0.0f;  // rope.scaling.factor; 0 leaves the key out
  // YaRN's keys (scaling_type "yarn"; 0 leaves a key out: the defaults are
  // the context length, 1, 32 and 1). The original context and attn_factor
  // (RoPE's magnitude) hold for every type.
  int64_t yarn_orig_ctx = 0;     // rope.scaling.original_context_length
  float rope_attn_factor = 0.0f;  // rope.scaling.attn_factor
  float yarn_beta_fast = 0.0f;    // rope.scaling.yarn_beta_fast
  float yarn_beta_slow = 0.0f;    // rope.scaling.yarn_beta_slow
  float eps = 1e-5f;
  int64_t sliding_window = 0;  // attention.sliding_window (mistral); 0 leaves the key out
  // phi3: the file holds blk.N.attn_qkv (Q, K, V rows) and a fused
  // blk.N.ffn_up (gate rows, then up rows) instead of the separate tensors
  // (which the model keeps in memory for the reference).
  bool fused = false;
  // gemma3: embeddings times sqrt(n_embd), post-attention and post-FFN norms,
  // a GELU-gated FFN; with sliding_window, every layer but each swa_period-th
  // attends to the last sliding_window positions with RoPE base 10000.
  bool gemma = false;
  bool post_norms = false;  // gemma2 / gemma3's post-attention and post-FFN norms (not the first Gemma's)
  int swa_period = 0;
  float swa_rope_base = 10000.0f;  // the local layers' RoPE base (gemma3); 0: the global one (gemma2)
  // gemma2's soft-capping (0 leaves the key out): scores and logits c tanh(x / c).
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
  // A mixture of experts (n_expert > 0): blk.N.ffn_gate_inp and the stacked
  // blk.N.ffn_{gate,up,down}_exps instead of the dense FFN; each token's
  // n_expert_used experts by the router's softmax, weights renormalised.
  // expert_ffn > 0 writes <arch>.expert_feed_forward_length (qwen3moe) and
  // sizes the experts by it, else by n_ff (Mixtral).
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t expert_ffn = 0;
  int64_t ff_exp() const { return expert_ffn > 0 ? expert_ffn : n_ff; }
  // qwen2moe / olmoe: the chosen experts weigh by their probabilities as
  // they are (not renormalised); qwen2moe's shared expert of width
  // shared_ffn (> 0: blk.N.ffn_{gate_inp,gate,up,down}_shexp and the key
  // expert_shared_feed_forward_length).
  bool expert_weights_raw = false;
  int64_t shared_ffn = 0;
  // NoPE layers (smollm3: 4): layer il is not rotated when (il + 1) % nope_period == 0.
  int nope_period = 0;
  // Granite's multipliers (0 leaves the key out; logit_scale is required by
  // granite files): <arch>.embedding_scale, residual_scale, attention.scale,
  // logit_scale. rope_finetuned 0 / 1 writes rope.scaling.finetuned
  // (false: no layer rotates); -1 leaves it out.
  float embedding_scale = 0.0f;
  float residual_scale = 0.0f;
  float attention_scale = 0.0f;
  float logit_scale = 0.0f;
  int rope_finetuned = -1;
  bool out_bias = false;  // blk.N.attn_output.bias
  // olmo2: no attn_norm / ffn_norm (the blocks read the residual stream as
  // is) and Q/K norms over the whole projection ([q_dim], [kv_dim]).
  bool pre_norms = true;
  bool qk_norm_whole = false;
  // qwen2vl / qwen3vl: rope.dimension_sections (empty leaves the key out),
  // contiguous or interleaved (qwen3vl); a text token's pairs on the extra
  // (fourth) position do not rotate.
  std::vector<int32_t> mrope_sections;
  bool mrope_interleaved = false;
  // Whether rotated pair k takes the extra position (ggml's assignment).
  bool mrope_extra_pair(int64_t k) const {
    if (mrope_sections.size() != 4) return false;
    const int64_t s0 = mrope_sections[0], s1 = mrope_sections[1], s2 = mrope_sections[2];
    const int64_t sector = k % (s0 + s1 + s2 + mrope_sections[3]);
    if (mrope_interleaved) {
      const bool h = sector % 3 == 1 && sector < 3 * s1, w = sector % 3 == 2 && sector < 3 * s2,
                 t = sector % 3 == 0 && sector < 3 * s0;
      return !(h || w || t);
    }
    return sector >= s0 + s1 + s2;
  }
  // command-r: LayerNorms (attention.layer_norm_epsilon written instead of
  // the RMS key), attention and FFN in parallel from one norm (no
  // ffn_norm), logit_scale multiplying the logits; with qk_norm, per-head
  // LayerNorms of Q and K with a weight per head ([hd, n_head]).
  bool layer_norm = false;
  bool parallel_blocks = false;
  bool logit_scale_multiplies = false;
  // The GPT family (gpt2, gptneox, phi2, starcoder2, stablelm):
  // LayerNorm biases (attn_norm, ffn_norm, output_norm .bias); an FFN
  // without a gate, down(gelu(up x)), with ffn_up / ffn_down biases; GELU
  // (tanh approximation) as the activation; learned positions
  // (position_embd.weight [n_embd, n_ctx], no RoPE: gpt2); output.bias;
  // gptneox's parallel layers, whose FFN reads its own ffn_norm of the
  // layer's input (use_parallel_residual: -1 leaves the key out).
  bool norm_bias = false;
  bool ffn_sequential = false;
  bool ffn_bias = false;
  bool gelu = false;
  bool pos_embd = false;
  bool output_bias = false;
  bool parallel_residual = false;
  int use_parallel_residual = -1;
  // bloom / mpt: ALiBi with this max bias instead of RoPE (alibi_key writes
  // attention.max_alibi_bias: mpt); bloom's LayerNorm of the token
  // embeddings (token_embd_norm.weight / .bias).
  float alibi_max_bias = 0.0f;
  bool alibi_key = false;
  bool embd_norm = false;
  bool attn_norm_2 = false;       // falcon 40B: blk.N.attn_norm_2 (+ .bias with norm_bias), the attention's own norm
  bool relu_sqr = false;          // nemotron, arcee: the FFN's activation is relu(x)^2
  bool weightless_norms = false;  // olmo: LayerNorms without weights (no norm tensors in the file)
  float clamp_kqv = 0.0f;         // attention.clamp_kqv (0 leaves the key out): Q, K, V clamped to [-c, c]
  // seed_oss: the file stores each ffn_norm as post_attention_norm (the
  // model in memory keeps the name ffn_norm).
  bool ffn_norm_as_post_attention = false;
  // ggml's ALiBi slope of head h.
  double alibi_slope(int64_t h) const {
    int64_t p2 = 1;
    while (p2 * 2 <= n_head) p2 *= 2;
    const double m0 = std::pow(2.0, -static_cast<double>(alibi_max_bias) / static_cast<double>(p2));
    const double m1 = std::pow(2.0, -static_cast<double>(alibi_max_bias) / 2.0 / static_cast<double>(p2));
    return h < p2 ? std::pow(m0, static_cast<double>(h + 1)) : std::pow(m1, static_cast<double>(2 * (h - p2) + 1));
  }
  bool rotates(int64_t il) const {
    if (rope_finetuned == 0 || pos_embd || alibi_max_bias > 0.0f) return false;
    return nope_period <= 0 || (il + 1) % nope_period != 0;
  }
  bool is_swa(int64_t il) const { return sliding_window > 0 && swa_period > 0 && (il + 1) % swa_period != 0; }
  uint32_t seed = 1;
  bool tokenizer = false;  // a llama (SPM) tokenizer of n_vocab tokens (tiny_llama.hpp's)

  int64_t hd() const { return head_dim > 0 ? head_dim : n_embd / n_head; }
  int64_t rot() const { return n_rot > 0 ? n_rot : hd(); }
  // RoPE's freq_scale as the file asks for it (llama.cpp's reading).
  double freq_scale() const {
    return scaling_type == "none" || scaling_factor == 0.0f ? 1.0 : 1.0 / scaling_factor;
  }
};

// The tests' Gemma shapes: gemma2 with 4 layers (0 and 2 local, 1 and 3
// global, one RoPE base, scores and logits soft-capped at values random
// weights reach); gemma3 with 6 layers (0-4 local, 5 global; Q/K norms, a
// RoPE base of 1e6 on the global layer against 10000 on the local ones).
// `window`: the local layers' sliding window.
inline ArchSpec gemma2_spec(int64_t window, uint32_t seed) {
  ArchSpec s;
  s.arch = "gemma2";
  s.gemma = true;
  s.post_norms = true;
  s.neox = true;
  s.tied = true;
  s.n_layer = 4;
  s.head_dim = 16;
  s.sliding_window = window;
  s.swa_period = 2;
  s.swa_rope_base = 0.0f;
  s.attn_softcap = 2.0f;
  s.final_softcap = 8.0f;
  s.eps = 1e-6f;
  s.seed = seed;
  return s;
}
inline ArchSpec gemma3_spec(int64_t window, uint32_t seed) {
  ArchSpec s;
  s.arch = "gemma3";
  s.gemma = true;
  s.post_norms = true;
  s.neox = true;
  s.qk_norm = true;
  s.tied = true;
  s.n_layer = 6;
  s.head_dim = 16;
  s.sliding_window = window;
  s.swa_period = 6;
  s.freq_base = 1000000.0f;
  s.eps = 1e-6f;
  s.seed = seed;
  return s;
}

// A tensor: ggml extents (ne[0] innermost) and its values in row-major order.
struct TinyTensor {
  std::vector<uint64_t> ne;
  std::vector<float> v;
};

struct TinyArchModel {
  ArchSpec spec;
  std::map<std::string, TinyTensor> tensors;

  // Draws every tensor the spec's architecture has from spec.seed.
  explicit TinyArchModel(const ArchSpec& s) : spec(s) {
    std::mt19937 rng(s.seed);
    const auto e = static_cast<uint64_t>(s.n_embd), qd = static_cast<uint64_t>(s.hd() * s.n_head),
               kvd = static_cast<uint64_t>(s.hd() * s.n_head_kv), ff = static_cast<uint64_t>(s.n_ff),
               hd = static_cast<uint64_t>(s.hd());
    add(rng, "token_embd.weight", {e, static_cast<uint64_t>(s.n_vocab)}, 0.0f, 4.0f);
    if (!s.weightless_norms) add(rng, "output_norm.weight", {e}, 1.0f, 0.2f);
    if (s.norm_bias) add(rng, "output_norm.bias", {e}, 0.0f, 0.3f);
    if (!s.tied) add(rng, "output.weight", {e, static_cast<uint64_t>(s.n_vocab)}, 0.0f, 1.0f);
    if (s.output_bias) add(rng, "output.bias", {static_cast<uint64_t>(s.n_vocab)}, 0.0f, 1.0f);
    if (s.pos_embd) add(rng, "position_embd.weight", {e, static_cast<uint64_t>(s.n_ctx)}, 0.0f, 1.0f);
    if (s.embd_norm) {
      add(rng, "token_embd_norm.weight", {e}, 1.0f, 0.2f);
      add(rng, "token_embd_norm.bias", {e}, 0.0f, 0.3f);
    }
    if (s.rope_freqs) {
      // llama-3's divisors grow from 1 to about 8 along the frequencies.
      TinyTensor t{{static_cast<uint64_t>(s.rot() / 2)}, {}};
      std::uniform_real_distribution<float> u(1.0f, 8.0f);
      for (uint64_t i = 0; i < t.ne[0]; ++i) t.v.push_back(u(rng));
      tensors["rope_freqs.weight"] = t;
    }
    if (s.longrope) {
      for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
        TinyTensor t{{static_cast<uint64_t>(s.rot() / 2)}, {}};
        std::uniform_real_distribution<float> u(1.0f, 6.0f);
        for (uint64_t i = 0; i < t.ne[0]; ++i) t.v.push_back(u(rng));
        tensors[name] = t;
      }
    }
    for (int64_t il = 0; il < s.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      if (s.pre_norms && !s.weightless_norms) add(rng, p + "attn_norm.weight", {e}, 1.0f, 0.2f);
      if (s.pre_norms && s.norm_bias) add(rng, p + "attn_norm.bias", {e}, 0.0f, 0.3f);
      if (s.attn_norm_2) {
        add(rng, p + "attn_norm_2.weight", {e}, 1.0f, 0.2f);
        if (s.norm_bias) add(rng, p + "attn_norm_2.bias", {e}, 0.0f, 0.3f);
      }
      add(rng, p + "attn_q.weight", {e, qd}, 0.0f, 1.5f);
      add(rng, p + "attn_k.weight", {e, kvd}, 0.0f, 1.5f);
      add(rng, p + "attn_v.weight", {e, kvd}, 0.0f, 1.0f);
      add(rng, p + "attn_output.weight", {qd, e}, 0.0f, 1.0f);
      if (s.out_bias) add(rng, p + "attn_output.bias", {e}, 0.0f, 0.5f);
      if (s.qkv_bias) {
        add(rng, p + "attn_q.bias", {qd}, 0.0f, 0.5f);
        add(rng, p + "attn_k.bias", {kvd}, 0.0f, 0.5f);
        add(rng, p + "attn_v.bias", {kvd}, 0.0f, 0.5f);
      }
      if (s.qk_norm && s.layer_norm) {
        add(rng, p + "attn_q_norm.weight", {hd, static_cast<uint64_t>(s.n_head)}, 1.0f, 0.3f);
        add(rng, p + "attn_k_norm.weight", {hd, static_cast<uint64_t>(s.n_head_kv)}, 1.0f, 0.3f);
      } else if (s.qk_norm) {
        add(rng, p + "attn_q_norm.weight", {s.qk_norm_whole ? qd : hd}, 1.0f, 0.3f);
        add(rng, p + "attn_k_norm.weight", {s.qk_norm_whole ? kvd : hd}, 1.0f, 0.3f);
      }
      if (s.post_norms) {
        add(rng, p + "post_attention_norm.weight", {e}, 1.0f, 0.2f);
        add(rng, p + "post_ffw_norm.weight", {e}, 1.0f, 0.2f);
      }
      if (s.pre_norms && !s.parallel_blocks && !s.weightless_norms) add(rng, p + "ffn_norm.weight", {e}, 1.0f, 0.2f);
      if (s.pre_norms && !s.parallel_blocks && s.norm_bias) add(rng, p + "ffn_norm.bias", {e}, 0.0f, 0.3f);
      if (s.n_expert > 0) {
        const auto ne = static_cast<uint64_t>(s.n_expert), fe = static_cast<uint64_t>(s.ff_exp());
        add(rng, p + "ffn_gate_inp.weight", {e, ne}, 0.0f, 2.0f);
        add(rng, p + "ffn_gate_exps.weight", {e, fe, ne}, 0.0f, 1.0f);
        add(rng, p + "ffn_up_exps.weight", {e, fe, ne}, 0.0f, 1.0f);
        add(rng, p + "ffn_down_exps.weight", {fe, e, ne}, 0.0f, 1.0f);
        if (s.shared_ffn > 0) {
          const auto fs = static_cast<uint64_t>(s.shared_ffn);
          add(rng, p + "ffn_gate_inp_shexp.weight", {e}, 0.0f, 0.5f);
          add(rng, p + "ffn_gate_shexp.weight", {e, fs}, 0.0f, 1.0f);
          add(rng, p + "ffn_up_shexp.weight", {e, fs}, 0.0f, 1.0f);
          add(rng, p + "ffn_down_shexp.weight", {fs, e}, 0.0f, 1.0f);
        }
        continue;
      }
      if (!s.ffn_sequential) add(rng, p + "ffn_gate.weight", {e, ff}, 0.0f, 1.0f);
      add(rng, p + "ffn_up.weight", {e, ff}, 0.0f, 1.0f);
      add(rng, p + "ffn_down.weight", {ff, e}, 0.0f, 1.0f);
      if (s.ffn_bias) {
        add(rng, p + "ffn_up.bias", {ff}, 0.0f, 0.5f);
        add(rng, p + "ffn_down.bias", {e}, 0.0f, 0.5f);
      }
    }
  }

  // Metadata keys as written: "<arch>.<key>" -> integer or float value.
  std::map<std::string, uint32_t> int_keys() const {
    std::map<std::string, uint32_t> k = {
        {"embedding_length", static_cast<uint32_t>(spec.n_embd)},
        {"block_count", static_cast<uint32_t>(spec.n_layer)},
        {"attention.head_count", static_cast<uint32_t>(spec.n_head)},
        {"attention.head_count_kv", static_cast<uint32_t>(spec.n_head_kv)},
        {"feed_forward_length", static_cast<uint32_t>(spec.n_ff)},
        {"context_length", static_cast<uint32_t>(spec.n_ctx)},
    };
    if (spec.head_dim > 0) {
      k["attention.key_length"] = static_cast<uint32_t>(spec.head_dim);
      k["attention.value_length"] = static_cast<uint32_t>(spec.head_dim);
    }
    if (spec.n_rot > 0) k["rope.dimension_count"] = static_cast<uint32_t>(spec.n_rot);
    if (spec.sliding_window > 0) k["attention.sliding_window"] = static_cast<uint32_t>(spec.sliding_window);
    if (spec.n_expert > 0) {
      k["expert_count"] = static_cast<uint32_t>(spec.n_expert);
      k["expert_used_count"] = static_cast<uint32_t>(spec.n_expert_used);
      if (spec.expert_ffn > 0) k["expert_feed_forward_length"] = static_cast<uint32_t>(spec.expert_ffn);
      if (spec.shared_ffn > 0) k["expert_shared_feed_forward_length"] = static_cast<uint32_t>(spec.shared_ffn);
    }
    return k;
  }

  // The GGUF image. skip_tensors / skip_keys (without the "<arch>." prefix)
  // are left out; extra_int / extra_f32 keys (same form) are added.
  std::vector<uint8_t> gguf(const std::set<std::string>& skip_tensors = {},
                            const std::set<std::string>& skip_keys = {},
                            const std::map<std::string, uint32_t>& extra_int = {},
                            const std::map<std::string, float>& extra_f32 = {}) const {
    using loom::testing::GgufBuilder;
    GgufBuilder b;
    const std::string& a = spec.arch;
    if (!skip_keys.count("general.architecture")) b.kv_str("general.architecture", a);
    for (const auto& [k, v] : int_keys()) {
      if (!skip_keys.count(k)) b.kv(a + "." + k, loom::testing::kU32, v);
    }
    for (const auto& [k, v] : extra_int) b.kv(a + "." + k, loom::testing::kU32, v);
    for (const auto& [k, v] : extra_f32) b.kv(a + "." + k, loom::testing::kF32, v);
    b.kv(a + ".rope.freq_base", loom::testing::kF32, spec.freq_base);
    b.kv(a + (spec.layer_norm ? ".attention.layer_norm_epsilon" : ".attention.layer_norm_rms_epsilon"),
         loom::testing::kF32, spec.eps);
    if (!spec.scaling_type.empty()) b.kv_str(a + ".rope.scaling.type", spec.scaling_type);
    if (spec.scaling_factor != 0.0f) b.kv(a + ".rope.scaling.factor", loom::testing::kF32, spec.scaling_factor);
    if (spec.yarn_orig_ctx > 0) {
      b.kv(a + ".rope.scaling.original_context_length", loom::testing::kU32, static_cast<uint32_t>(spec.yarn_orig_ctx));
    }
    for (const auto& [key, v] : {std::pair<const char*, float>{"rope.scaling.attn_factor", spec.rope_attn_factor},
                                 {"rope.scaling.yarn_beta_fast", spec.yarn_beta_fast},
                                 {"rope.scaling.yarn_beta_slow", spec.yarn_beta_slow}}) {
      if (v != 0.0f) b.kv(a + "." + key, loom::testing::kF32, v);
    }
    if (spec.attn_softcap > 0.0f && !skip_keys.count("attn_logit_softcapping")) {
      b.kv(a + ".attn_logit_softcapping", loom::testing::kF32, spec.attn_softcap);
    }
    if (spec.final_softcap > 0.0f && !skip_keys.count("final_logit_softcapping")) {
      b.kv(a + ".final_logit_softcapping", loom::testing::kF32, spec.final_softcap);
    }
    for (const auto& [key, v] : {std::pair<const char*, float>{"embedding_scale", spec.embedding_scale},
                                 {"residual_scale", spec.residual_scale},
                                 {"attention.scale", spec.attention_scale},
                                 {"logit_scale", spec.logit_scale}}) {
      if (v != 0.0f && !skip_keys.count(key)) b.kv(a + "." + key, loom::testing::kF32, v);
    }
    if (!spec.mrope_sections.empty() && !skip_keys.count("rope.dimension_sections")) {
      b.kv_arr(a + ".rope.dimension_sections", loom::testing::kI32, spec.mrope_sections);
    }
    if (spec.rope_finetuned >= 0) b.kv(a + ".rope.scaling.finetuned", loom::testing::kBool, uint8_t(spec.rope_finetuned));
    if (spec.clamp_kqv > 0.0f) b.kv(a + ".attention.clamp_kqv", loom::testing::kF32, spec.clamp_kqv);
    if (spec.alibi_key && !skip_keys.count("attention.max_alibi_bias")) {
      b.kv(a + ".attention.max_alibi_bias", loom::testing::kF32, spec.alibi_max_bias);
    }
    if (spec.use_parallel_residual >= 0 && !skip_keys.count("use_parallel_residual")) {
      b.kv(a + ".use_parallel_residual", loom::testing::kBool, uint8_t(spec.use_parallel_residual));
    }
    if (spec.tokenizer) {
      TinyLlama tok;
      tok.n_tokens = spec.n_vocab;
      tok.add_tokenizer(b);
    }
    for (const auto& [name, t] : file_tensors()) {
      if (skip_tensors.count(name)) continue;
      std::vector<uint8_t> bytes(t.v.size() * 4);
      std::memcpy(bytes.data(), t.v.data(), bytes.size());
      b.tensor(name, t.ne, 0 /* f32 */, std::move(bytes));
    }
    return b.build();
  }

  // The tensors as the file holds them: `tensors`, or for a fused spec each
  // layer's Q, K, V joined into attn_qkv (their biases into attn_qkv.bias)
  // and gate, up into ffn_up where the FFN has a gate (rows appended: ne[0]
  // stays, ne[1] adds up; a bias's values appended).
  std::map<std::string, TinyTensor> file_tensors() const {
    std::map<std::string, TinyTensor> out = tensors;
    if (spec.ffn_norm_as_post_attention) {
      for (int64_t il = 0; il < spec.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        auto node = out.extract(p + "ffn_norm.weight");
        node.key() = p + "post_attention_norm.weight";
        out.insert(std::move(node));
      }
    }
    if (!spec.fused) return out;
    auto join = [&](const std::string& into, const std::vector<std::string>& parts) {
      if (!out.count(parts[0])) return;
      const bool vec = out.at(parts[0]).ne.size() == 1;
      TinyTensor j{vec ? std::vector<uint64_t>{0} : std::vector<uint64_t>{out.at(parts[0]).ne[0], 0}, {}};
      for (const std::string& p : parts) {
        const TinyTensor& t = out.at(p);
        j.ne.back() += t.ne.back();
        j.v.insert(j.v.end(), t.v.begin(), t.v.end());
      }
      for (const std::string& p : parts) out.erase(p);
      out[into] = std::move(j);
    };
    for (int64_t il = 0; il < spec.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      join(p + "attn_qkv.weight", {p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"});
      join(p + "attn_qkv.bias", {p + "attn_q.bias", p + "attn_k.bias", p + "attn_v.bias"});
      join(p + "ffn_up.weight", {p + "ffn_gate.weight", p + "ffn_up.weight"});
    }
    return out;
  }

  bool write(const std::string& path, const std::vector<uint8_t>& image) const {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
    return static_cast<bool>(f);
  }

  // Values of tensor `name`, or nullptr when the model has none.
  const std::vector<float>* find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second.v;
  }

 private:
  // Gaussian values around mean with standard deviation sd / sqrt(ne[0])
  // for matrices (outputs of about sd for unit-scale inputs), sd itself for
  // vectors.
  void add(std::mt19937& rng, const std::string& name, std::vector<uint64_t> ne, float mean, float sd) {
    uint64_t n = 1;
    for (uint64_t d : ne) n *= d;
    const float s = ne.size() > 1 ? sd / std::sqrt(static_cast<float>(ne[0])) : sd;
    std::normal_distribution<float> g(mean, s);
    TinyTensor t{std::move(ne), {}};
    t.v.reserve(n);
    for (uint64_t i = 0; i < n; ++i) t.v.push_back(g(rng));
    tensors[name] = std::move(t);
  }
};

}  // namespace loom::test
