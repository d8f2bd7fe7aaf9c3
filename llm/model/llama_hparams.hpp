// Hyper-parameters of a llama-family model (the architectures of arch.cpp)
// and their validation.
//
// Every value a GGUF header gives is checked against the bounds below (and
// the layer count against the tensors the file holds) before anything is
// sized by it, so a hostile or corrupt header is an error naming the key,
// its value and the bound instead of a huge allocation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/runtime/gguf.hpp"
#include "loom/runtime/status.hpp"

namespace loom::llm {

struct LlamaHparams {
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t n_ff = 0;  // the dense FFN's width (0 in an expert file without the key)
  // Mixture of experts (0: a dense FFN): experts per layer, chosen per token
  // (top-k of the router's softmax, weights renormalised over the chosen:
  // Mixtral, Qwen3-MoE), and each expert's FFN width.
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  // The chosen experts weigh by their probabilities as they are
  // (ArchTraits::expert_weights_raw), else renormalised to sum to 1.
  bool expert_weights_raw = false;
  int64_t n_ff_exp = 0;
  // The shared expert's FFN width (ArchTraits::shared_expert; 0: none).
  int64_t n_ff_shexp = 0;
  int64_t n_ctx_train = 0;
  // Dims per head of Q, K and V: attention.key_length (== value_length),
  // else n_embd / n_head. May differ from n_embd / n_head (qwen3).
  int64_t n_embd_head = 0;
  int64_t n_rot = 0;  // rotated dims per head
  float rope_freq_base = 10000.0f;
  // 1 / rope.scaling.factor for linear scaling, else 1 (scaling type none,
  // and yarn, whose scaling rope_divisors carry).
  float rope_freq_scale = 1.0f;
  // YaRN (rope.scaling.type yarn; llm/model/rope_yarn.hpp): theta of rotated
  // pair k divided by rope_divisors[k] (n_rot / 2 values; empty: no YaRN);
  // M-RoPE's pairs on the extra position (0 for text) divided by 1e30 more:
  // unrotated.
  std::vector<float> rope_divisors;
  // The rotation's magnitude (YaRN's, or rope.scaling.attn_factor: Phi-3's
  // LongRoPE), whose square multiplies the attention's score scale.
  float rope_mscale = 1.0f;
  // rope.scaling.original_context_length (default n_ctx_train): YaRN's
  // ramp; a session whose sequences hold more positions reads LongRoPE's
  // long factors, else its short ones.
  int64_t n_ctx_orig = 0;
  float rms_eps = 1e-5f;  // the norms' epsilon (a LayerNorm's for ArchTraits::layer_norm)
  // Sliding-window attention (ArchTraits::swa_period > 0): the window of the
  // local layers (attention.sliding_window) and their RoPE base and scale.
  int64_t n_swa = 0;  // 0: every layer attends to the whole context
  int swa_period = 0;
  float rope_freq_base_swa = 10000.0f;
  float rope_freq_scale_swa = 1.0f;
  // The attention's score scale; 0: 1 / sqrt(head_dim).
  float attn_scale = 0.0f;
  // Logit soft-capping (gemma2; 0: none): attention scores and output
  // logits become c * tanh(x / c).
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
  float embd_scale = 0.0f;  // token embeddings times this (gemma: sqrt(n_embd); granite's key); 0: none
  // Granite: each attention and FFN output times residual_scale before its
  // residual add; 0: none.
  float residual_scale = 0.0f;
  // The logits times this (granite: 1 / its logit_scale; command-r: its
  // logit_scale); 0: none.
  float logit_factor = 0.0f;
  // Layers without RoPE: il with (il + 1) % nope_period == 0 (1: every
  // layer); 0: none.
  int nope_period = 0;
  // <arch>.use_parallel_residual (gptneox; default true): every layer's
  // attention and FFN side by side (LlamaLayer::parallel).
  bool parallel_residual = false;
  // ALiBi's max bias (ArchTraits::alibi_*; 0: none): head h of n_head adds
  // alibi_slope(h) times -(query position - key position) to its scores.
  float alibi_max_bias = 0.0f;
  // attention.clamp_kqv (olmo, mpt; 0: none): Q, K and V clamped to
  // [-c, c] after their projections.
  float clamp_kqv = 0.0f;
  // ggml's slope for head h: m0^(h+1) for the first 2^floor(log2 n_head)
  // heads, m1^(2(h - that) + 1) after, m0 = 2^(-max_bias / that), m1 =
  // 2^(-max_bias / 2 / that).
  float alibi_slope(int64_t h) const;

  int64_t head_dim() const { return n_embd_head; }
  // Whether layer il attends through the sliding window.
  bool is_swa(int64_t il) const { return n_swa > 0 && swa_period > 0 && (il + 1) % swa_period != 0; }
  // Whether layer il applies RoPE.
  bool rotates(int64_t il) const { return nope_period <= 0 || (il + 1) % nope_period != 0; }
  int64_t q_dim() const { return n_embd_head * n_head; }  // rows of attn_q, columns of attn_output
  int64_t kv_dim() const { return n_embd_head * n_head_kv; }
};

// Upper bounds on header values: far above any published model, far below
// sizes whose products could overflow or whose bookkeeping alone would
// exhaust memory.
struct LlamaLimits {
  static constexpr int64_t kMaxLayers = 4096;
  static constexpr int64_t kMaxEmbd = int64_t{1} << 20;
  static constexpr int64_t kMaxHeads = 4096;
  static constexpr int64_t kMaxHeadDim = 4096;
  static constexpr int64_t kMaxFf = int64_t{1} << 22;
  static constexpr int64_t kMaxContext = int64_t{1} << 24;
  static constexpr int64_t kMaxVocab = int64_t{1} << 24;
  static constexpr int64_t kMaxExperts = 4096;
  // Tensors every layer needs at least (attention: norm, q, k, v, output;
  // ffn: norm, gate, up, down: 9; phi2's fused qkv, output, up and down: 4).
  static constexpr int64_t kTensorsPerLayer = 4;
};

// Reads <arch>.{embedding_length, block_count, attention.head_count[_kv],
// attention.key_length / value_length, feed_forward_length, context_length,
// expert_count / expert_used_count / expert_feed_forward_length,
// rope.dimension_count, rope.freq_base, rope.scaling.type / factor (or the
// older rope.scale_linear), attention.layer_norm_rms_epsilon} into *out
// (n_vocab stays 0: see read_llama_vocab). Errors are
// "[llm.load] <file>: <key> = <value>: <why>" with the bound. Rope scaling
// "none", "linear" and "yarn" run (linear: freq_scale = 1 / factor; no type
// key means linear, as llama.cpp reads it; yarn: also
// rope.scaling.original_context_length, yarn_ext_factor, attn_factor,
// yarn_beta_fast / slow; every type: attn_factor, the rotation's magnitude);
// "longrope" is UNIMPLEMENTED naming the key and value, as is yarn on
// sliding-window layers (a magnitude on a partly rotated head runs: the
// graph's q_scale). A key_length that differs from
// value_length is UNIMPLEMENTED (the KV cache has one head size).
// attention.sliding_window (mistral) is ignored with a debug log: attention
// always spans the whole context. Granite's files add embedding_scale,
// residual_scale, attention.scale (optional) and logit_scale (required), each
// > 0, and rope.scaling.finetuned (false: no RoPE in any layer). gpt2
// (learned positions) rotates no layer; gptneox reads use_parallel_residual.
Status read_llama_hparams(const GgufFile& file, const std::string& arch, LlamaHparams* out);

// Sets out->n_vocab from the rows of token_embd.weight, bounded, and checks
// it against the tokenizer's vocabulary (tokenizer.ggml.tokens, when the
// file has one): a mismatch is an error at load rather than a token id out
// of range in the middle of a generation.
Status read_llama_vocab(const GgufFile& file, LlamaHparams* out);

}  // namespace loom::llm
