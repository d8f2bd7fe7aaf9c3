// Evaluation state of one llama model over its device list: the KV cache
// (each layer's rows on the device of its weights when that device writes
// them, else on the host device), the scheduler that runs every step's
// graph over the model's devices, and the current position. eval() runs
// tokens through the model in batches and returns logits.
//
// Graph reuse: the attended KV length is padded (kv_pad), so consecutive
// decode steps have graphs of identical shapes that differ only in input
// values; the session keeps the last step's graph and only writes the new
// inputs while the shape fits (steps_built() counts graphs built), and the
// scheduler reuses its plan (scheduler().plans_built()).
//
// One session per model at a time: the session marks the model's Context
// after its cache tensors; the kept step's tensors sit above that mark until
// a step of another shape, plan_dot() or the session's end rolls them back.
// The model and device must outlive the session. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llm/model/llama_graph.hpp"
#include "llm/model/llama_model.hpp"
#include "llm/session/kv_cache.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "loom/sched/scheduler.hpp"

namespace loom::llm {

struct SessionOptions {
  int64_t n_ctx = 0;   // 0: the model's training context (per sequence slot)
  // Sequence slots: the KV cache holds n_seq sequences of n_ctx positions
  // each (eval_seqs steps several at once); eval() uses slot 0.
  int32_t n_seq = 1;
  int64_t n_batch = 32;  // tokens per forward graph during prompt processing
  // KV cache element type, F16 or F32. F16 halves the bytes decode attention
  // reads; stories260K's greedy text is the same with either.
  loom_type_t kv_type = LOOM_TYPE_F16;
  // Attended KV length rounded up to a multiple of this (1: no padding).
  int64_t kv_pad = 256;
  // Use the fused ATTENTION op on the devices that run it (work follows the
  // real context length, not kv_pad); false builds the unfused MUL_MAT +
  // SOFT_MAX + MUL_MAT form everywhere. LOOM_LLM_FUSED_ATTN=0 in the
  // environment forces false.
  bool fused_attention = true;
  // Sliding-window layers (gemma2, gemma3) keep a cache bounded by their
  // window: KvCache::window_rows(n_swa, n_batch, n_ctx) rows per slot, not
  // n_ctx (kv_cache.hpp, kv_window.hpp). false (or LOOM_KV_SWA_FULL=1 in
  // the environment) gives them n_ctx rows like the global layers: the
  // unbounded layout, for comparisons. No effect on models without a window.
  bool window_kv = true;
  // Debug aid: keep every node's result and, after each step, name the
  // first node that produced a NaN or infinity (slow). LOOM_CHECK_FINITE=1
  // in the environment forces true.
  bool check_finite_nodes = false;
  // Pipelined prefill: a prompt longer than n_batch is cut into micro-batches
  // of n_batch tokens, each its own graph, submitted to the scheduler one
  // after another without waiting (Scheduler::submit), so the device holding
  // the first layers works on micro-batch i+1 while the next device still
  // works on micro-batch i. This many micro-batches are submitted before the
  // session waits for all of them (then the next group): 1 = off; 0 =
  // LOOM_SCHED_PIPELINING when set, else automatic: 8 when more than one
  // device holds layers, 1 otherwise. Only where the last token's logits
  // alone are asked for and check_finite_nodes and count_ffn_activity are
  // off; tokens are the same as unpipelined (same graphs, same order of work
  // per device).
  int pipeline = 0;
  // Count, per layer and FFN neuron, the tokens whose gate pre-activation is
  // > 0 in layers that run dense (the ReLU neuron fires): `loom profile`
  // collects blk.N.ffn_freq this way (llm/sparse/sparse_ffn.hpp). Load the model
  // with sparse off so every layer is dense.
  bool count_ffn_activity = false;
};

// The sizes of a session with options `so`, for the fit of a model load
// (LoadOptions::fit_session) that this session will run on (the fit's n_ctx
// counts every slot's positions).
inline LoadOptions::FitSession fit_session(const SessionOptions& so) {
  return LoadOptions::FitSession{so.n_ctx * so.n_seq, so.n_batch, so.kv_type, so.kv_pad, so.n_seq, so.window_kv};
}

class LlamaSession {
 public:
  // A KV cache larger than the memory a device reports (free, else total)
  // is RESOURCE_EXHAUSTED naming the context, the bytes and the device.
  static StatusOr<std::unique_ptr<LlamaSession>> create(LlamaModel* model, const SessionOptions& options);
  ~LlamaSession();
  LlamaSession(const LlamaSession&) = delete;
  LlamaSession& operator=(const LlamaSession&) = delete;

  // Feed tokens at positions [n_past, n_past + n), in batches of n_batch.
  // logits gets n_vocab floats per token when all_logits, else those of
  // the last token only. A batch past the context is an error naming both
  // numbers; nothing is evaluated then. Logits holding a NaN or infinity
  // are an error naming the token's position (with check_finite_nodes, the
  // first node that produced one).
  Status eval(const std::vector<TokenId>& tokens, bool all_logits, std::vector<float>* logits);
  // One step over several sequences: batch[i] is token `token` of slot
  // `seq` at position `pos`; the slot's rows [0, pos) must hold that
  // sequence's earlier tokens (evaluated before or earlier in this batch).
  // With a windowed cache (kv_cache.hpp) a slot's sliding-window rows keep
  // only the last positions: a batch continuing a slot below what they
  // still hold (reusable_prefix) is INVALID_ARGUMENT; starting at 0 always works.
  // logits gets n_vocab floats per token flagged `logits`, in batch order.
  // At most n_batch tokens; a slot outside [0, n_seq), a position outside
  // [0, n_ctx), a token outside the vocabulary or one (seq, pos) twice is
  // INVALID_ARGUMENT and nothing is evaluated. Steps with the same numbers
  // of tokens and of logits rows reuse one graph. Does not move n_past().
  Status eval_seqs(const std::vector<SeqToken>& batch, std::vector<float>* logits);
  // Copy the KV rows of positions [0, n) of slot src into slot dst (a prompt
  // prefix two sequences share is computed once); of a windowed cache's
  // local layers, the window before n (INVALID_ARGUMENT when src no longer
  // holds it: reusable_prefix(src, n) == 0).
  Status copy_seq(int32_t src, int32_t dst, int64_t n);
  // The longest prefix [0, m) of slot seq's positions [0, n) (n: positions
  // it holds) a batch can continue from: n, or 0 when a windowed cache's
  // local rows of that slot moved past the window before n (recompute).
  int64_t reusable_prefix(int32_t seq, int64_t n) const;
  int32_t n_seq() const { return n_seq_; }
  // A model may have several live sessions, but only the newest runs: an
  // older one's eval, eval_seqs, copy_seq and plan are UNAVAILABLE until
  // the newer ones are freed (every session builds its graphs in the
  // model's context above its own mark).
  // Plan (without computing) the graph of a batch of n_tokens at the current
  // position and return the scheduler's plan rendered at that detail, in
  // that format (Scheduler::render); plan_dot: every node, as DOT.
  StatusOr<std::string> plan(int64_t n_tokens, PlanDetail detail, PlanFormat format);
  StatusOr<std::string> plan_dot(int64_t n_tokens) { return plan(n_tokens, PlanDetail::kNodes, PlanFormat::kDot); }
  // Forget the cached positions (start a new sequence).
  void reset() {
    n_past_ = 0;
    cache_.set_base(0, 0);
  }

  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return cache_.n_ctx() / n_seq_; }  // per slot
  int64_t n_batch() const { return n_batch_; }
  // Whether graphs may use the fused ATTENTION op (options and environment).
  bool fused_attention() const { return fused_attention_; }
  // Whether every node's result is checked for NaN and infinity (options and environment).
  bool check_finite_nodes() const { return check_nodes_; }
  // Micro-batches submitted before waiting during prompt processing (1: no
  // pipelining), after the automatic choice (SessionOptions::pipeline).
  int pipeline() const { return pipeline_; }
  // Micro-batches run pipelined (submitted while earlier ones ran) since the session began.
  size_t pipelined_batches() const { return pipelined_batches_; }
  const LlamaModel& model() const { return *model_; }
  // Compute buffers of every device, summed.
  size_t compute_buffer_size() const;
  Scheduler& scheduler() { return *sched_; }
  const Scheduler& scheduler() const { return *sched_; }
  const KvCache& kv_cache() const { return cache_; }
  // The device holding layer il's KV cache.
  registry::Device* kv_device(int64_t il) const { return kv_devices_[static_cast<size_t>(il)]; }
  // Scheduler counters summed over the eval() calls since the last reset_stats().
  size_t steps() const { return steps_; }
  // Step graphs built since the session began (decode reuses one per padded KV length).
  size_t steps_built() const { return steps_built_; }
  size_t bytes_copied() const { return bytes_copied_; }
  size_t splits_last() const { return sched_->last_stats().splits; }
  void reset_stats() { steps_ = bytes_copied_ = 0; }
  // With SessionOptions::count_ffn_activity: per layer, per neuron, the
  // evaluated tokens it fired for (empty for a layer that ran sparse), and
  // the tokens evaluated.
  const std::vector<std::vector<uint64_t>>& ffn_activity() const { return ffn_counts_; }
  uint64_t ffn_tokens_counted() const { return ffn_tokens_; }

 private:
  LlamaSession(LlamaModel* model, KvCache cache, std::vector<registry::Device*> kv_devices,
               std::unique_ptr<Scheduler> sched, const SessionOptions& o, size_t mark)
      : model_(model),
        cache_(std::move(cache)),
        kv_devices_(std::move(kv_devices)),
        sched_(std::move(sched)),
        n_batch_(o.n_batch),
        n_seq_(o.n_seq),
        kv_pad_(o.kv_pad),
        fused_attention_(o.fused_attention),
        check_nodes_(o.check_finite_nodes),
        pipeline_(o.pipeline),
        count_ffn_(o.count_ffn_activity),
        mark_(mark) {}
  Status eval_batch(const TokenId* tokens, int64_t n, bool all_logits, float* out);
  // A windowed cache: moves slot seq's local rows when positions [first,
  // end) would pass them (kv_window.hpp). Nothing in flight on the scheduler.
  Status make_room(int32_t seq, int64_t first, int64_t end);
  // The same for every slot of a sequence batch (each slot's positions in it).
  Status make_seq_room(const std::vector<SeqToken>& batch);
  // Prompt tokens in micro-batches of n_batch, pipeline_ submitted at a time;
  // the last token's logits into out.
  Status eval_pipelined(const TokenId* tokens, int64_t n, float* out);
  Status submit_group(const TokenId* tokens, int64_t n, float* out);
  Status run_step(const TokenId* tokens, int64_t n, bool all_logits, float* out);
  // The graph of a batch of n tokens at the current position, allocated on
  // the scheduler. Its tensors live in the model's context until the
  // caller's StepRollback.
  struct Step {
    LlamaBatchGraph batch;
    Graph graph;
  };
  StatusOr<Step> build_step(int64_t n, bool all_logits);
  // The graph of n tokens after n_past cached ones, attending over n_kv
  // positions (not yet placed).
  StatusOr<Step> make_step(int64_t n, int64_t n_past, int64_t n_kv, bool all_logits);
  // The graph of a sequence batch of n tokens with n_out rows of logits (not yet placed).
  StatusOr<Step> make_seq_step(int64_t n, int64_t n_out);
  // Size the scheduler's compute buffers, per device, for the largest
  // graphs this session can run — a full prompt batch with every row's
  // logits and a decode step, both attending over the whole context — so
  // that generation allocates no compute memory after the load.
  Status reserve_worst_case();
  // Forget the kept step graph and roll its tensors out of the model's context.
  void drop_step();
  // Whether this is the model's newest live session; else an UNAVAILABLE
  // status saying why it may not run (LlamaModel::sessions).
  bool newest() const;
  Status check_newest() const;
  // Drops the per-step tensors from the model's context when it goes.
  struct StepRollback {
    Context& c;
    size_t mark;
    ~StepRollback() { c.rollback(mark); }
  };

  LlamaModel* model_;
  KvCache cache_;
  std::vector<registry::Device*> kv_devices_;
  std::unique_ptr<Scheduler> sched_;
  int64_t n_batch_;
  int32_t n_seq_;
  int64_t kv_pad_;
  bool fused_attention_;
  bool check_nodes_;
  int pipeline_;
  size_t pipelined_batches_ = 0;
  bool count_ffn_;
  std::vector<std::vector<uint64_t>> ffn_counts_;
  uint64_t ffn_tokens_ = 0;
  // Adds the fired neurons of the step's gate outputs (count_ffn_) to ffn_counts_.
  Status count_ffn_activity(const LlamaBatchGraph& g);
  std::unique_ptr<Step> cached_;  // the last step's graph, reused while its shape fits
  bool cached_all_logits_ = false;
  // eval_seqs's kept steps (their tensors above mark_ like cached_'s). A
  // server's steps mix decodes with prompt chunks of 1, 2, 4, ... tokens:
  // with 8 kept, 4 streams beside arriving 256-token prompts rebuilt 15-23
  // graphs (each adding 1-3 ms to its step) against 13 shapes; with 32,
  // each shape once (TBT p99 11-13.5 -> 10.4-11.1 ms, a graph's tensors
  // and plan but no compute memory each).
  static constexpr size_t kSeqSteps = 32;
  std::vector<std::unique_ptr<Step>> seq_steps_;
  // One step of eval_seqs over a kept graph of its shape (else a new one).
  Status run_seq_step(const std::vector<SeqToken>& batch, int64_t n_out, float* out);
  size_t steps_built_ = 0;
  size_t steps_ = 0;
  size_t bytes_copied_ = 0;
  size_t mark_;  // the model's Context size after the cache tensors
  int64_t n_past_ = 0;
};

}  // namespace loom::llm
