// The model architectures loom runs (GGUF's general.architecture) and what
// sets each apart from llama, as data: one loader (llama_model) and one graph
// builder (llama_graph) read these traits instead of keeping a copy per
// architecture. An architecture of the llama family that differs only in
// these ways is one more row in arch.cpp.
//
// Every architecture's metadata keys start with its name ("qwen2.block_count").
#pragma once

#include <string>
#include <string_view>

namespace loom::llm {

struct ArchTraits {
  const char* name;  // general.architecture, also the prefix of its metadata keys
  int rope_mode;     // LOOM_ROPE_MODE_NORMAL (llama's permuted Q/K weights) or _NEOX
  // rope_freqs.weight (llama-3: F32 [n_rot / 2], divides theta_i) may be
  // present; every layer's RoPE then uses it.
  bool rope_freqs;
  // blk.N.attn_{q,k,v}.bias are required and added after the matmuls (qwen2).
  bool qkv_bias;
  // blk.N.attn_{q,k}_norm.weight [head_dim] are required: each head's row of
  // Q and K is RMS-normalised and scaled before RoPE (qwen3).
  bool qk_norm;
  // Fused projections (phi3): blk.N.attn_qkv.weight [n_embd, q_dim + 2 kv_dim]
  // holds Q, K and V's rows in that order (required here; any other
  // architecture's file may hold it instead of attn_q / _k / _v, with an
  // optional attn_qkv.bias, as llama.cpp reads them), blk.N.ffn_up.weight [n_embd, 2 n_ff]
  // the gate's rows then the up projection's (no ffn_gate); one MUL_MAT each,
  // whose result is split by views (no weight is copied).
  bool fused_qkv;
  bool fused_gate_up;
  // Gemma: token embeddings scaled by sqrt(n_embd); a GELU-gated FFN
  // (gelu(gate) * up).
  bool gemma;
  // Sliding-window attention on the local layers: every layer but each
  // swa_period-th (layer il is global when (il + 1) % swa_period == 0)
  // attends to the last <arch>.attention.sliding_window positions only, with
  // RoPE base swa_rope_base and no scaling (gemma3: 10000), or the global
  // layers' RoPE when swa_rope_base is 0 (gemma2). swa_period 0: every
  // layer global.
  int swa_period;
  float swa_rope_base;
  // Logit soft-capping (gemma2): attention scores c * tanh(s / c) before the
  // softmax (c = <arch>.attn_logit_softcapping, default 50; such layers take
  // the unfused attention) and the output logits likewise
  // (final_logit_softcapping, default 30).
  bool softcap;
  // The FFN is a mixture of experts: <arch>.expert_count and
  // blk.N.ffn_{gate_inp,gate_exps,up_exps,down_exps} are required (qwen3moe).
  // A llama file with expert_count > 1 (Mixtral) is one too.
  bool experts;
  // blk.N.post_attention_norm and blk.N.post_ffw_norm are required: RMS
  // norms of the attention's and the FFN's outputs before their residual
  // adds (gemma2, gemma3; not the first Gemma).
  bool post_norms = false;
  // NoPE layers: layer il applies no RoPE when (il + 1) % nope_period == 0
  // (SmolLM3: every fourth, a constant of the architecture that no key
  // states, as llama.cpp has it); 0: every layer rotates.
  int nope_period = 0;
  // Granite's multipliers: <arch>.embedding_scale times the token
  // embeddings, residual_scale times each attention and FFN output before
  // its residual add, attention.scale as the scores' scale (each optional),
  // the logits divided by logit_scale (required); rope.scaling.finetuned =
  // false turns RoPE off in every layer.
  bool granite = false;
  // blk.N.attn_norm and blk.N.ffn_norm (RMS norms of the blocks' inputs)
  // are required; false: the blocks read the residual stream as is and only
  // their outputs are normalised (olmo2, with post_norms).
  bool pre_norms = true;
  // The Q/K norms (qk_norm) span the whole projection, attn_q_norm [q_dim]
  // and attn_k_norm [kv_dim], before the heads are split (olmo2); false:
  // each head's row, [head_dim] (qwen3, gemma3).
  bool qk_norm_whole = false;
  // A sliding_window key above 0 is UNIMPLEMENTED (olmo2: OLMo 3's windowed
  // layers), where other architectures without windows ignore it as
  // llama.cpp does (mistral, phi3).
  bool window_refused = false;
  // M-RoPE (qwen2vl): <arch>.rope.dimension_sections, four counts of
  // rotated pairs taking the temporal, height, width and an extra position,
  // is required. A text token's first three positions are its own and the
  // extra one 0 (llama.cpp's), so pairs of the first three rotate as neox
  // and pairs of the extra one not at all (their RoPE divisor is huge).
  bool mrope = false;
  // Norms are LayerNorms (the mean removed, then the weight; eps from
  // <arch>.attention.layer_norm_epsilon), not RMS norms; optional per-head Q/K
  // norms are LayerNorms with a weight per head, [head_dim, n_head]
  // (command-r; Command R+ has them).
  bool layer_norm = false;
  // Each layer's attention and FFN read the same normed input and both
  // outputs join the residual stream together (no ffn_norm): command-r.
  bool parallel_blocks = false;
  // <arch>.logit_scale is required and multiplies the logits (command-r;
  // granite's divides them).
  bool logit_multiplier = false;
  // The FFN of GPT-2 and its heirs (gpt2, gptneox, phi2, starcoder2):
  // down(gelu(up x + up bias)) + down bias, no gate (biases where the file
  // has them).
  bool ffn_sequential = false;
  // Learned absolute positions (gpt2): rows of position_embd.weight
  // [n_embd, context_length] added to the token embeddings, and no RoPE in
  // any layer; a session's context is at most context_length positions.
  bool pos_embd = false;
  // <arch>.use_parallel_residual (default true) makes every layer
  // parallel, its FFN reading its own norm (ffn_norm) of the layer's input
  // (gptneox: Pythia, GPT-NeoX 20B).
  bool parallel_residual_key = false;
  // ffn_norm is optional: a layer without it is parallel, its FFN reading
  // the attention's normed input (stablelm: StableLM 2 12B).
  bool ffn_norm_optional = false;
  // A mixture of experts whose chosen experts weigh by their softmax
  // probabilities as they are, not renormalised over the chosen (qwen2moe,
  // olmoe).
  bool expert_weights_raw = false;
  // A shared expert beside the routed ones (qwen2moe): a SiLU-gated FFN
  // (ffn_{gate,up,down}_shexp, width expert_shared_feed_forward_length,
  // default feed_forward_length) every token runs, its output times
  // sigmoid(ffn_gate_inp_shexp . x), added to the experts' sum.
  bool shared_expert = false;
  // rope.dimension_sections (GLM-4V's M-RoPE) is UNIMPLEMENTED by name
  // rather than ignored (glm4: its text model rotates differently then).
  bool sections_refused = false;
  // Granite's multipliers with MiniCPM's defaults when a key is absent
  // (minicpm: embedding 12, residual 1.4 / sqrt(n_layer), logits times
  // n_embd / 256), and RoPE in every layer whatever rope.scaling.finetuned says.
  bool granite_defaults = false;
  // The sliding window (swa_period) applies only to a file of this many
  // layers, with attention.sliding_window defaulting to swa_default; other
  // files rotate every layer and attend globally (exaone4: its 32B's 64
  // layers, llama.cpp's rule). 0: every file of the architecture.
  int swa_layer_count = 0;
  int swa_default = 0;
  // ALiBi instead of RoPE (bloom: a max bias of 8; mpt: its
  // attention.max_alibi_bias key, required): head h's scores gain
  // slope_h * -(distance to the key), ggml's slopes; the attention takes the
  // unfused form. No layer rotates.
  float alibi_max_bias = 0.0f;
  bool alibi_key = false;
  // token_embd_norm.weight / .bias, a LayerNorm of the token embeddings
  // before the first layer, are required (bloom).
  bool embd_norm = false;
  // The FFN's activation is ReLU squared (nemotron, arcee; with
  // ffn_sequential: down(relu(up x)^2)).
  bool relu_sqr = false;
  // The norms are LayerNorms without weights or biases (olmo: OLMo 1):
  // attn_norm, ffn_norm and output_norm are not in the file.
  bool weightless_norms = false;
  // The FFN's input norm is stored as blk.N.post_attention_norm (seed_oss:
  // Seed-OSS names it so; it is the pre-FFN norm all the same).
  bool ffn_norm_post_attention_name = false;
  // Positions by the file's size, as llama.cpp decides them (baichuan):
  // RoPE for rope_layer_count layers (the 7B), ALiBi (alibi_max_bias) for
  // alibi_layer_count layers (the 13B); any other layer count is
  // UNIMPLEMENTED by name (llama.cpp would run it without positions).
  int rope_layer_count = 0;
  int alibi_layer_count = 0;
  // M-RoPE's sections interleave (qwen3vl's IMRoPE), as llama_hparams.cpp's
  // read_mrope_sections assigns them. (New fields go last: the table's
  // older rows set the first ones by position.)
  bool mrope_interleaved = false;
};

// The traits of `name`; nullptr when loom does not run it.
const ArchTraits* find_arch(std::string_view name);
// "llama, qwen2, ...": the names find_arch knows, for messages.
std::string supported_archs();

}  // namespace loom::llm
