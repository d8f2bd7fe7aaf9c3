// The forward graph of a llama-family model (the architectures of arch.cpp: the
// architecture's traits, arch.hpp, add Q/K/V biases, per-head Q/K norms,
// the RoPE mode and frequency factors) for one batch: n_tokens new tokens at positions
// [n_past, n_past + n_tokens), attending to the KV cache rows [0, n_kv)
// where n_kv >= n_past + n_tokens (default: exactly that); rows past
// n_past + n_tokens are hidden. A fixed n_kv (padded) keeps the graph's
// shapes, hence the scheduler's fingerprint, the same from one decode step
// to the next: only input values change. Builds tensors in the model's
// Context; the caller places the graph (Executor::allocate), uploads the
// inputs, computes and rolls the context back.
//
// Attention per layer takes one of two forms. Fused: one ATTENTION node
// reading the cache rows [0, visible[t]) (work follows the real context, not
// n_kv), used when `fused_attention` and the layer's device
// (model.layer_device(il)) supports the node. Unfused: MUL_MAT (K Q) +
// SOFT_MAX with the -inf mask + MUL_MAT (V^T), for every other device.
// The FFN is llm/sparse/sparse_ffn.hpp's build_ffn: SwiGLU or ReLU, sparse where
// the layer has a predictor and its device runs the sparse products; a
// mixture-of-experts layer's is moe_ffn.hpp's build_moe_ffn.
#pragma once

#include <cstdint>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/kv_cache.hpp"

namespace loom::llm {

struct LlamaBatchGraph {
  // Inputs (leafs without data until the graph is placed).
  Tensor* tokens = nullptr;  // I32 [n_tokens]
  Tensor* pos = nullptr;     // I32 [n_tokens]: n_past + i
  Tensor* kv_rows = nullptr; // I64 [n_tokens, n_head_kv]: cache rows written (== pos, per kv head)
  // A windowed cache (KvCache::windowed): the rows its local layers write,
  // I64 [n_tokens, n_head_kv] (pos - swa_base); nullptr otherwise. With a
  // windowed cache each of the two is made only when a layer writes it.
  Tensor* kv_rows_swa = nullptr;
  int64_t n_head_kv = 0;
  // Made only when some layer uses the form that reads it (else nullptr).
  Tensor* mask = nullptr;    // F32 [n_kv, n_tokens]: 0 where visible, -inf elsewhere (unfused)
  Tensor* visible = nullptr; // I32 [n_tokens]: n_past + i + 1 (fused); a sequence batch: I32 [2, n_tokens], [first, end)
  // The sliding-window layers' (LlamaHparams::is_swa): the same with each
  // token's rows cut to the last n_swa positions (fused: always [2, n_tokens]).
  // Their rows are the local layers' (relative to swa_base when windowed).
  Tensor* mask_swa = nullptr;
  Tensor* visible_swa = nullptr;
  int64_t n_swa = 0;
  // The local layers' attended rows: n_kv, or at most their rows when
  // windowed (window_rows, every slot's in a sequence batch).
  int64_t n_kv_swa = 0;
  int64_t swa_slot_rows = 0;  // a local layer's rows per slot
  // The position in row 0 of the local layers' rows (a single-sequence
  // batch; set like n_past before make_batch_inputs).
  int64_t swa_base = 0;
  // A partly rotated head whose RoPE has a magnitude (Phi-4-mini's LongRoPE,
  // YaRN on such heads): F32 [head_dim], the magnitude squared on the
  // rotated dims and 1 on the rest, times Q after RoPE, so each score weighs
  // the rotated part by it as ggml's scaled cos/sin of Q and K do; its values
  // in q_scale_values. nullptr when the magnitude folds into the scores'
  // scale (every dim rotated) or is 1.
  Tensor* q_scale = nullptr;
  std::vector<float> q_scale_values;
  // ALiBi (LlamaHparams::alibi_max_bias > 0): every layer unfused, the mask
  // holding -(query position - key position) where visible, and F32
  // [1, 1, n_head] inputs of each head's slope and its inverse (their
  // values beside them): scores become slope * (scale * kq / slope + mask),
  // ggml's scale * kq + slope * mask.
  Tensor* alibi_slopes = nullptr;
  Tensor* alibi_inv = nullptr;
  std::vector<float> alibi_slope_values;
  std::vector<float> alibi_inv_values;
  // A sequence batch: I32 [n_out], the batch rows whose logits are output
  // (nullptr when every row's are, in batch order).
  Tensor* out_ids = nullptr;
  // Output: F32 [n_vocab, n_out], n_out = n_tokens (all_logits) or 1 (last).
  Tensor* logits = nullptr;
  int64_t n_tokens = 0;
  int64_t n_past = 0;
  int64_t n_kv = 0;
  bool seq_batch = false;  // built by build_llama_seq_graph
  int64_t n_out = 0;       // rows of logits
  int64_t fused_layers = 0;  // layers built with the ATTENTION node
  int64_t sparse_layers = 0; // layers built with the sparse FFN (llm/sparse/sparse_ffn.hpp)
  // Per layer: the dense FFN's gate pre-activation F32 [n_ff, n_tokens]
  // (nullptr where the layer ran sparse): `loom profile` counts firings.
  std::vector<Tensor*> ffn_gate;
};

StatusOr<LlamaBatchGraph> build_llama_graph(LlamaModel& model, const KvCache& cache, int64_t n_tokens,
                                            int64_t n_past, bool all_logits, int64_t n_kv = 0,
                                            bool fused_attention = true);

// A batch of tokens of several sequences (build_llama_seq_graph): token
// `token` of sequence `seq` at position `pos` of that sequence; logits:
// whether its row of logits is output.
struct SeqToken {
  TokenId token = 0;
  int32_t seq = 0;
  int32_t pos = 0;
  bool logits = false;
};

// The graph of a batch of n_tokens tokens of several sequences over a cache
// whose n_ctx rows are n_ctx / slot_ctx slots of slot_ctx rows: sequence s
// keeps position p in row s * slot_ctx + p, and a token attends to its own
// sequence's rows [s * slot_ctx, s * slot_ctx + p] (a windowed cache's
// local layers: rows s * W + p - base(s), the window's only) — the fused ATTENTION's
// ranges form (ABI 1.4) where the layer's device runs it, else the masked
// unfused form over every row. n_out rows of logits (the tokens flagged
// `logits`, in batch order). The shapes depend only on (n_tokens, n_out),
// so steps of one batch size reuse one graph.
StatusOr<LlamaBatchGraph> build_llama_seq_graph(LlamaModel& model, const KvCache& cache, int64_t n_tokens,
                                                int64_t n_out, bool fused_attention = true);

// The attended KV length for a batch: n_past + n_tokens rounded up to a
// multiple of pad (pad <= 1: no padding), at most n_ctx.
int64_t padded_n_kv(int64_t n_past, int64_t n_tokens, int64_t pad, int64_t n_ctx);

// Host values of the inputs of `g` for these tokens (same order as the
// LlamaBatchGraph fields).
struct LlamaBatchInputs {
  std::vector<int32_t> tokens, pos;
  std::vector<int64_t> kv_rows;
  std::vector<int64_t> kv_rows_swa;   // empty when g.kv_rows_swa is null
  std::vector<float> mask;        // empty when g.mask is null
  std::vector<int32_t> visible;   // empty when g.visible is null
  std::vector<float> mask_swa;        // empty when g.mask_swa is null
  std::vector<int32_t> visible_swa;   // empty when g.visible_swa is null
};
LlamaBatchInputs make_batch_inputs(const LlamaBatchGraph& g, const int32_t* tokens);
// Token i's sliding-window inputs (g.visible_swa, g.mask_swa, when the
// graph has them): of its rows [first, end) (the local layers' rows), the last g.n_swa.
void add_window_rows(const LlamaBatchGraph& g, size_t i, int64_t first, int64_t end, LlamaBatchInputs* in);
// The same for a graph of build_llama_seq_graph and its g.n_tokens tokens.
struct LlamaSeqBatchInputs : LlamaBatchInputs {
  std::vector<int32_t> out_ids;  // empty when g.out_ids is null
};
// swa_base: per slot, KvCache::base (nullptr: every slot's is 0).
LlamaSeqBatchInputs make_seq_batch_inputs(const LlamaBatchGraph& g, const SeqToken* batch, int64_t slot_ctx,
                                          const int64_t* swa_base = nullptr);

}  // namespace loom::llm
