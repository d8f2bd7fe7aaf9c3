#include "llm/session/llama_session.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>

#include "llm/model/llama_graph.hpp"
#include "llm/session/finite_check.hpp"
#include "llm/session/kv_window.hpp"
#include "loom/sched/executor.hpp"
#include "loom/runtime/log.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/runtime/types.hpp"
#include "runtime/env.hpp"

namespace loom::llm {
namespace {

// n_rows rows of n_vocab logits, of the tokens at positions first_pos,
// first_pos + 1, ...: each must be finite, else an error naming the position.
Status check_logits(const float* logits, int64_t n_rows, int64_t n_vocab, int64_t first_pos) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* row = logits + r * n_vocab;
    const size_t bad = first_non_finite(row, static_cast<size_t>(n_vocab));
    if (bad == static_cast<size_t>(n_vocab)) continue;
    return internal_error("[llm.eval] logits of the token at position " + std::to_string(first_pos + r) +
                          " are not finite: " + non_finite_name(row[bad]) + " at vocab id " + std::to_string(bad) +
                          " of " + std::to_string(n_vocab) +
                          " (bad weights or a device error; LOOM_CHECK_FINITE=1 names the first graph node that "
                          "produces one)");
  }
  return Status();
}

// The least context a default (the model's context_length) is cut to when
// its cache would not fit (LlamaSession::create).
constexpr int64_t kMinDefaultContext = 4096;

// Bytes of KV cache each device holding layers of it needs: layer_rows[il]
// rows of layer il (a windowed cache's local layers hold fewer), K and V.
std::map<registry::Device*, double> cache_need(const std::vector<registry::Device*>& kv_devices,
                                               const std::vector<int64_t>& layer_rows, int64_t kv_dim,
                                               loom_type_t type) {
  const double row = 2.0 * static_cast<double>(type_row_size(type, kv_dim));
  std::map<registry::Device*, double> need_of;
  for (size_t il = 0; il < kv_devices.size(); ++il) need_of[kv_devices[il]] += row * static_cast<double>(layer_rows[il]);
  return need_of;
}

// The memory a device has for the cache: its free bytes (some drivers
// report no free figure, 0: the total then); bytes 0 when it reports nothing.
struct CacheRoom {
  uint64_t bytes = 0, free = 0, total = 0;
};
CacheRoom cache_room(registry::Device* d) {
  StatusOr<registry::Device::Memory> m = d->memory();
  if (!m.ok() || m->total == 0) return CacheRoom();
  return CacheRoom{m->free > 0 ? m->free : m->total, m->free, m->total};
}

// Whether the cache fits `share` of each device's room (devices that report
// no memory figures are not checked).
bool cache_fits(const std::map<registry::Device*, double>& need_of, double share) {
  for (const auto& [d, need] : need_of) {
    const uint64_t room = cache_room(d).bytes;
    if (room > 0 && need > share * static_cast<double>(room)) return false;
  }
  return true;
}

// The KV cache must fit the free memory of each device holding layers of
// it: a context from the file header (context_length) must not exhaust the
// machine.
Status check_cache_fits(const std::map<registry::Device*, double>& need_of, int64_t n_ctx, bool ctx_from_file) {
  for (const auto& [d, need] : need_of) {
    const CacheRoom room = cache_room(d);
    if (room.bytes == 0 || need <= static_cast<double>(room.bytes)) continue;
    return resource_exhausted("[llm.session] the KV cache of " + std::to_string(n_ctx) + " tokens" +
                              (ctx_from_file ? " (the model's context_length)" : "") + " needs " +
                              std::to_string(static_cast<uint64_t>(need)) + " bytes on " + d->name() + ", which has " +
                              (room.free > 0 ? std::to_string(room.free) + " of " + std::to_string(room.total) +
                                                   " bytes free"
                                             : std::to_string(room.total) + " bytes") +
                              "; use a smaller context (--ctx N)");
  }
  return Status();
}

// The scheduler's set_input as write_inputs' `set`: on a device with queued
// copies (a remote one) the inputs go with its next work, not one write each.
auto inputs_of(Scheduler& sched) {
  return [&sched](Tensor* t, const void* data, size_t bytes) { return sched.set_input(t, data, bytes); };
}

// Writes every input graph g has with `set`.
template <typename Set>
Status write_inputs(const LlamaBatchGraph& g, const LlamaBatchInputs& in, const std::vector<int32_t>& out_ids,
                    Set set) {
  auto put = [&](Tensor* t, const auto& v) -> Status {
    if (t == nullptr) return Status();
    return set(t, v.data(), v.size() * sizeof(v[0]));
  };
  LOOM_RETURN_IF_ERROR(put(g.tokens, in.tokens));
  LOOM_RETURN_IF_ERROR(put(g.pos, in.pos));
  LOOM_RETURN_IF_ERROR(put(g.kv_rows, in.kv_rows));
  LOOM_RETURN_IF_ERROR(put(g.kv_rows_swa, in.kv_rows_swa));
  LOOM_RETURN_IF_ERROR(put(g.mask, in.mask));
  LOOM_RETURN_IF_ERROR(put(g.visible, in.visible));
  LOOM_RETURN_IF_ERROR(put(g.mask_swa, in.mask_swa));
  LOOM_RETURN_IF_ERROR(put(g.visible_swa, in.visible_swa));
  LOOM_RETURN_IF_ERROR(put(g.q_scale, g.q_scale_values));
  LOOM_RETURN_IF_ERROR(put(g.alibi_slopes, g.alibi_slope_values));
  LOOM_RETURN_IF_ERROR(put(g.alibi_inv, g.alibi_inv_values));
  return put(g.out_ids, out_ids);
}

}  // namespace

StatusOr<std::unique_ptr<LlamaSession>> LlamaSession::create(LlamaModel* model, const SessionOptions& options) {
  if (!model) return invalid_argument("[llm.session] model is null");
  const LlamaHparams& h = model->hparams();
  int64_t n_ctx = options.n_ctx > 0 ? options.n_ctx : h.n_ctx_train;
  if (model->pos_embd != nullptr && n_ctx > h.n_ctx_train) {
    // Learned positions (gpt2): a row per position, none past the last.
    return invalid_argument("[llm.session] context of " + std::to_string(n_ctx) + " positions exceeds the " +
                            std::to_string(h.n_ctx_train) + " the model has learned (position_embd.weight); use -c " +
                            std::to_string(h.n_ctx_train) + " or less");
  }
  if (options.n_batch < 1) {
    return invalid_argument("[llm.session] batch size " + std::to_string(options.n_batch) + " must be >= 1");
  }
  if (options.n_seq < 1 || options.n_seq > 4096) {
    return invalid_argument("[llm.session] sequence slots " + std::to_string(options.n_seq) +
                            " must be in [1, 4096]");
  }
  if (options.n_seq > 1 && n_ctx * options.n_seq > INT32_MAX) {
    return invalid_argument("[llm.session] " + std::to_string(options.n_seq) + " slots of " + std::to_string(n_ctx) +
                            " positions exceed 2^31 cache rows");
  }
  if (options.kv_pad < 1) {
    return invalid_argument("[llm.session] kv_pad " + std::to_string(options.kv_pad) + " must be >= 1");
  }
  // Each layer's cache on that layer's device, unless the device cannot
  // write the cache's rows (then on the host device).
  std::vector<registry::Device*> kv_devices;
  std::vector<std::pair<registry::Device*, bool>> writes;
  for (int64_t il = 0; il < h.n_layer; ++il) {
    registry::Device* d = model->layer_device(il);
    if (d != model->device()) {
      auto it = std::find_if(writes.begin(), writes.end(), [d](const auto& w) { return w.first == d; });
      if (it == writes.end()) {
        writes.emplace_back(d, KvCache::writable_on(*d, options.kv_type, h.head_dim(), h.n_head_kv));
        it = writes.end() - 1;
      }
      if (!it->second) d = model->device();
    }
    kv_devices.push_back(d);
  }
  // Each layer's cache rows for a context of n positions per slot, and the
  // sliding-window layers' bound (kv_cache.hpp).
  auto rows_for = [&](int64_t n, KvWindow* window) {
    window->n_seq = options.n_seq;
    const int64_t w = KvCache::window_rows(h.n_swa, options.n_batch, n);
    if (options.window_kv && !env_flag("LOOM_KV_SWA_FULL", false) && w < n) {
      window->n_swa = h.n_swa;
      window->rows = w;
      for (int64_t il = 0; il < h.n_layer; ++il) window->local.push_back(h.is_swa(il));
    }
    std::vector<int64_t> layer_rows;
    for (int64_t il = 0; il < h.n_layer; ++il) {
      layer_rows.push_back(!window->local.empty() && h.is_swa(il) ? w * options.n_seq : n * options.n_seq);
    }
    return cache_need(kv_devices, layer_rows, h.kv_dim(), options.kv_type);
  };
  if (options.n_ctx <= 0 && n_ctx > kMinDefaultContext) {
    // The model's context unless its cache would take more than half of a
    // device's free memory (a 128k-token context of an 8B model is 17 GB
    // of F16 cache): then halved until it does not, and said so.
    int64_t n = n_ctx;
    while (n > kMinDefaultContext) {
      KvWindow probe;
      if (cache_fits(rows_for(n, &probe), 0.5)) break;
      n = std::max(kMinDefaultContext, n / 2);
    }
    if (n < n_ctx) {
      KvWindow full;
      double bytes = 0.0;
      for (const auto& [d, need] : rows_for(n_ctx, &full)) bytes += need;
      LOOM_LOG_WARN("llm", "the model's context of " + std::to_string(n_ctx) + " tokens would need " +
                               std::to_string(static_cast<uint64_t>(bytes)) +
                               " bytes of KV cache, more than half of the free memory; using " + std::to_string(n) +
                               " tokens (--ctx N to choose)");
      n_ctx = n;
    }
  }
  KvWindow window;
  const std::map<registry::Device*, double> need_of = rows_for(n_ctx, &window);
  const int64_t n_rows = n_ctx * options.n_seq;  // every slot's rows
  LOOM_RETURN_IF_ERROR(check_cache_fits(need_of, n_ctx * options.n_seq, options.n_ctx <= 0));
  Context& ctx = model->context();
  LOOM_ASSIGN_OR_RETURN(KvCache cache, KvCache::create(ctx, kv_devices, h.head_dim(), h.n_head_kv, n_rows,
                                                       options.kv_type, window));
  LOOM_ASSIGN_OR_RETURN(auto sched, Scheduler::create(model->devices()));
  const size_t mark = ctx.checkpoint();
  SessionOptions o = options;
  o.fused_attention = options.fused_attention && env_flag("LOOM_LLM_FUSED_ATTN", true);
  o.check_finite_nodes = options.check_finite_nodes || env_flag("LOOM_CHECK_FINITE", false);
  if (options.pipeline < 0) {
    return invalid_argument("[llm.session] pipeline " + std::to_string(options.pipeline) + " must be >= 0");
  }
  if (o.pipeline == 0) o.pipeline = static_cast<int>(env_int("LOOM_SCHED_PIPELINING", 1, 64, 0));
  if (o.pipeline == 0) {
    // Automatic: pipelined when more than one device holds layers.
    std::vector<registry::Device*> holders;
    for (int64_t il = 0; il < h.n_layer; ++il) {
      registry::Device* d = model->layer_device(il);
      if (std::find(holders.begin(), holders.end(), d) == holders.end()) holders.push_back(d);
    }
    o.pipeline = holders.size() > 1 ? 8 : 1;
  }
  std::unique_ptr<LlamaSession> session(
      new LlamaSession(model, std::move(cache), std::move(kv_devices), std::move(sched), o, mark));
  model->add_session(session.get());
  LOOM_RETURN_IF_ERROR(session->reserve_worst_case());
  return session;
}

Status LlamaSession::reserve_worst_case() {
  const int64_t n_ctx = cache_.n_ctx();
  const int64_t n_max = std::min(n_batch_, n_ctx);
  // (tokens, every row's logits): the largest prompt batch, then decode.
  const std::pair<int64_t, bool> shapes[] = {{n_max, true}, {1, false}};
  for (const auto& [n, all_logits] : shapes) {
    StepRollback rollback{model_->context(), mark_};
    LOOM_ASSIGN_OR_RETURN(Step step, make_step(n, n_ctx - n, n_ctx, all_logits));
    Status st = sched_->reserve(step.graph);
    if (!st.ok()) {
      return st.with_context("llm.session: reserving compute memory for " + std::to_string(n) +
                             " tokens over a context of " + std::to_string(n_ctx));
    }
  }
  if (n_seq_ > 1) {
    // Sequence batches: every row's logits (the most output) over every slot.
    StepRollback rollback{model_->context(), mark_};
    LOOM_ASSIGN_OR_RETURN(Step step, make_seq_step(n_max, n_max));
    Status st = sched_->reserve(step.graph);
    if (!st.ok()) {
      return st.with_context("llm.session: reserving compute memory for sequence batches of " +
                             std::to_string(n_max) + " tokens over " + std::to_string(n_seq_) + " slots");
    }
  }
  // A windowed cache's largest row move (every slot at once).
  LOOM_RETURN_IF_ERROR(reserve_window_move(model_->context(), *sched_, cache_));
  LOOM_LOG_INFO("llm", "compute buffers reserved for " + std::to_string(n_max) + "-token batches and decode over " +
                           std::to_string(n_ctx) + " positions: " + std::to_string(compute_buffer_size()) + " bytes");
  return Status();
}

LlamaSession::~LlamaSession() {
  if (newest()) {
    drop_step();
  } else {
    // A newer session's tensors sit above mark_: leave the context as it is.
    cached_.reset();
    seq_steps_.clear();
  }
  model_->remove_session(this);
}

bool LlamaSession::newest() const { return !model_->sessions().empty() && model_->sessions().back() == this; }

Status LlamaSession::check_newest() const {
  if (newest()) return Status();
  return unavailable("[llm.session] a newer session of this model is alive: sessions build their graphs in the "
                     "model's context, so only the newest runs (free the newer one first, or use one session's "
                     "sequence slots, n_seq)");
}

size_t LlamaSession::compute_buffer_size() const {
  size_t n = 0;
  for (size_t i = 0; i < sched_->devices().size(); ++i) n += sched_->compute_buffer_size(i);
  return n;
}

Status LlamaSession::eval(const std::vector<TokenId>& tokens, bool all_logits, std::vector<float>* logits) {
  LOOM_RETURN_IF_ERROR(check_newest());
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t n_vocab = model_->hparams().n_vocab;
  if (n == 0) return invalid_argument("[llm.eval] no tokens to evaluate");
  if (n_past_ + n > n_ctx()) {
    return invalid_argument("[llm.eval] " + std::to_string(n_past_) + " cached + " + std::to_string(n) +
                            " new tokens exceed the context of " + std::to_string(n_ctx()) + " tokens");
  }
  for (TokenId t : tokens) {
    if (t < 0 || t >= n_vocab) {
      return invalid_argument("[llm.eval] token id " + std::to_string(t) + " outside the vocabulary [0, " +
                              std::to_string(n_vocab) + ")");
    }
  }
  logits->assign(static_cast<size_t>((all_logits ? n : 1) * n_vocab), 0.0f);
  if (pipeline_ > 1 && !all_logits && !check_nodes_ && !count_ffn_ && n > n_batch_) {
    return eval_pipelined(tokens.data(), n, logits->data());
  }
  for (int64_t start = 0; start < n; start += n_batch_) {
    const int64_t len = std::min(n_batch_, n - start);
    const bool last = start + len == n;
    float* out = nullptr;
    if (all_logits) {
      out = logits->data() + start * n_vocab;
    } else if (last) {
      out = logits->data();
    }
    LOOM_RETURN_IF_ERROR(eval_batch(tokens.data() + start, len, all_logits, out));
  }
  return Status();
}

StatusOr<LlamaSession::Step> LlamaSession::make_step(int64_t n, int64_t n_past, int64_t n_kv, bool all_logits) {
  LOOM_ASSIGN_OR_RETURN(LlamaBatchGraph g, build_llama_graph(*model_, cache_, n, n_past, all_logits, n_kv,
                                                                  fused_attention_));
  std::vector<Tensor*> outputs = {g.logits};
  if (count_ffn_) {
    for (Tensor* t : g.ffn_gate) {
      if (t) outputs.push_back(t);
    }
  }
  LOOM_ASSIGN_OR_RETURN(Graph graph, Graph::build(outputs));
  if (check_nodes_) {
    LOOM_ASSIGN_OR_RETURN(graph, keep_every_node(graph));
  }
  return Step{g, std::move(graph)};
}

StatusOr<LlamaSession::Step> LlamaSession::make_seq_step(int64_t n, int64_t n_out) {
  LOOM_ASSIGN_OR_RETURN(LlamaBatchGraph g, build_llama_seq_graph(*model_, cache_, n, n_out, fused_attention_));
  LOOM_ASSIGN_OR_RETURN(Graph graph, Graph::build({g.logits}));
  if (check_nodes_) {
    LOOM_ASSIGN_OR_RETURN(graph, keep_every_node(graph));
  }
  return Step{g, std::move(graph)};
}

StatusOr<LlamaSession::Step> LlamaSession::build_step(int64_t n, bool all_logits) {
  LOOM_ASSIGN_OR_RETURN(Step step, make_step(n, n_past_, padded_n_kv(n_past_, n, kv_pad_, n_ctx()), all_logits));
  LOOM_RETURN_IF_ERROR(sched_->allocate(step.graph));
  return step;
}

StatusOr<std::string> LlamaSession::plan(int64_t n_tokens, PlanDetail detail, PlanFormat format) {
  LOOM_RETURN_IF_ERROR(check_newest());
  if (n_tokens < 1 || n_past_ + n_tokens > n_ctx()) {
    return invalid_argument("[llm.plan] batch of " + std::to_string(n_tokens) + " tokens does not fit the context of " +
                            std::to_string(n_ctx()));
  }
  drop_step();
  StepRollback rollback{model_->context(), mark_};
  LOOM_ASSIGN_OR_RETURN(Step step, build_step(n_tokens, false));
  return sched_->render(step.graph, detail, format);
}

Status LlamaSession::count_ffn_activity(const LlamaBatchGraph& g) {
  ffn_counts_.resize(g.ffn_gate.size());
  std::vector<float> v;
  for (size_t il = 0; il < g.ffn_gate.size(); ++il) {
    const Tensor* t = g.ffn_gate[il];
    if (t == nullptr) continue;
    if (t->type != LOOM_TYPE_F32) {
      return internal_error("[llm.eval] layer " + std::to_string(il) + "'s FFN gate output is not F32");
    }
    v.resize(static_cast<size_t>(t->ne[0] * t->ne[1]));
    LOOM_RETURN_IF_ERROR(tensor_get(t, v.data(), v.size() * sizeof(float)));
    std::vector<uint64_t>& c = ffn_counts_[il];
    c.resize(static_cast<size_t>(t->ne[0]), 0);
    for (int64_t n = 0; n < t->ne[1]; ++n) {
      for (int64_t j = 0; j < t->ne[0]; ++j) c[static_cast<size_t>(j)] += v[static_cast<size_t>(n * t->ne[0] + j)] > 0.0f;
    }
  }
  ffn_tokens_ += static_cast<uint64_t>(g.n_tokens);
  return Status();
}

void LlamaSession::drop_step() {
  cached_.reset();
  seq_steps_.clear();
  model_->context().rollback(mark_);
}

Status LlamaSession::make_room(int32_t seq, int64_t first, int64_t end) {
  WindowMove move;
  LOOM_ASSIGN_OR_RETURN(bool moves, plan_window(cache_, seq, first, end, &move));
  if (!moves) return Status();
  // Kept step graphs are rebuilt after the move (its graph takes their place on the scheduler).
  drop_step();
  return move_window(model_->context(), *sched_, cache_, {move});
}

Status LlamaSession::make_seq_room(const std::vector<SeqToken>& batch) {
  std::map<int32_t, std::pair<int64_t, int64_t>> span;  // slot: its positions [first, end)
  for (const SeqToken& b : batch) {
    auto it = span.emplace(b.seq, std::pair<int64_t, int64_t>{b.pos, b.pos + 1}).first;
    it->second.first = std::min<int64_t>(it->second.first, b.pos);
    it->second.second = std::max<int64_t>(it->second.second, b.pos + 1);
  }
  std::vector<int64_t> bases;  // restored when a slot cannot take its positions
  for (int32_t q = 0; q < n_seq_; ++q) bases.push_back(cache_.base(q));
  std::vector<WindowMove> moves;
  for (const auto& [seq, fe] : span) {
    WindowMove m;
    StatusOr<bool> mv = plan_window(cache_, seq, fe.first, fe.second, &m);
    if (!mv.ok()) {
      for (int32_t q = 0; q < n_seq_; ++q) cache_.set_base(q, bases[static_cast<size_t>(q)]);
      return mv.status();
    }
    if (*mv) moves.push_back(m);
  }
  if (moves.empty()) return Status();
  drop_step();  // as make_room
  return move_window(model_->context(), *sched_, cache_, moves);
}

int64_t LlamaSession::reusable_prefix(int32_t seq, int64_t n) const {
  if (seq < 0 || seq >= n_seq_) return 0;
  return window_reusable(cache_, seq, n);
}

Status LlamaSession::eval_batch(const TokenId* tokens, int64_t n, bool all_logits, float* out) {
  Status st = run_step(tokens, n, all_logits, out);
  // A failed step leaves nothing behind (its tensors and graph go).
  if (!st.ok()) drop_step();
  return st;
}

Status LlamaSession::eval_pipelined(const TokenId* tokens, int64_t n, float* out) {
  drop_step();  // the kept decode graph's tensors sit where the micro-batches go
  const int64_t group = n_batch_ * pipeline_;
  const int64_t first = n_past_;
  for (int64_t start = 0; start < n;) {
    int64_t len = std::min(group, n - start);
    // A windowed cache's rows move between groups, never inside one.
    Status st = make_room(0, n_past_, n_past_ + std::min(n_batch_, len));
    if (cache_.windowed()) len = std::min(len, cache_.window_rows() - (n_past_ - cache_.base(0)));
    if (st.ok()) st = submit_group(tokens + start, len, start + len == n ? out : nullptr);
    if (!st.ok()) {
      // The cache rows of this prompt are not trustworthy: forget them.
      n_past_ = first;
      return st;
    }
    start += len;
  }
  return Status();
}

Status LlamaSession::submit_group(const TokenId* tokens, int64_t n, float* out) {
  StepRollback rollback{model_->context(), mark_};
  std::vector<Step> steps;  // alive until the scheduler finished them
  steps.reserve(static_cast<size_t>((n + n_batch_ - 1) / n_batch_));
  const int64_t first = n_past_;
  int64_t pos = n_past_;
  Status st;
  for (int64_t start = 0; start < n && st.ok(); start += n_batch_) {
    const int64_t len = std::min(n_batch_, n - start);
    auto step = make_step(len, pos, padded_n_kv(pos, len, kv_pad_, n_ctx()), false);
    if (!step.ok()) {
      st = step.status();
      break;
    }
    steps.push_back(std::move(step).value());
    LlamaBatchGraph& g = steps.back().batch;
    g.n_past = pos;
    g.swa_base = cache_.base(0);
    st = sched_->allocate(steps.back().graph);
    LlamaBatchInputs in = make_batch_inputs(g, tokens + start);
    if (st.ok()) {
      st = write_inputs(g, in, {}, inputs_of(*sched_));
    }
    if (st.ok()) st = sched_->submit(steps.back().graph);
    if (st.ok() && steps.size() > 1) ++pipelined_batches_;
    ++steps_built_;
    pos += len;
  }
  const Status done = sched_->finish();
  if (st.ok()) st = done;
  if (!st.ok()) return st;
  steps_ += steps.size();
  bytes_copied_ += sched_->last_stats().bytes_copied;
  n_past_ = first + n;
  if (!out) return Status();
  const LlamaBatchGraph& g = steps.back().batch;
  LOOM_RETURN_IF_ERROR(tensor_get(g.logits, out, g.logits->nbytes()));
  const int64_t rows = g.logits->ne[1];
  return check_logits(out, rows, g.logits->ne[0], n_past_ - rows);
}

Status LlamaSession::run_step(const TokenId* tokens, int64_t n, bool all_logits, float* out) {
  // Decode steps of one padded KV length have the same graph: reuse it and
  // only write the new inputs (the scheduler then reuses its plan too).
  LOOM_RETURN_IF_ERROR(make_room(0, n_past_, n_past_ + n));
  const int64_t n_kv = padded_n_kv(n_past_, n, kv_pad_, n_ctx());
  if (!cached_ || cached_->batch.n_tokens != n || cached_->batch.n_kv != n_kv || cached_all_logits_ != all_logits) {
    drop_step();
    LOOM_ASSIGN_OR_RETURN(Step built, build_step(n, all_logits));
    cached_ = std::make_unique<Step>(std::move(built));
    cached_all_logits_ = all_logits;
    ++steps_built_;
  }
  LlamaBatchGraph& g = cached_->batch;
  Graph& graph = cached_->graph;
  g.n_past = n_past_;
  g.swa_base = cache_.base(0);
  LlamaBatchInputs in = make_batch_inputs(g, tokens);
  LOOM_RETURN_IF_ERROR(write_inputs(g, in, {}, inputs_of(*sched_)));
  LOOM_RETURN_IF_ERROR(sched_->compute(graph));
  ++steps_;
  bytes_copied_ += sched_->last_stats().bytes_copied;
  const int64_t first = n_past_;
  n_past_ += n;
  if (check_nodes_) {
    LOOM_RETURN_IF_ERROR(check_nodes_finite(
        graph, *sched_, "step at positions [" + std::to_string(first) + ", " + std::to_string(n_past_) + ")"));
  }
  if (count_ffn_) LOOM_RETURN_IF_ERROR(count_ffn_activity(g));
  if (!out) return Status();
  LOOM_RETURN_IF_ERROR(tensor_get(g.logits, out, g.logits->nbytes()));
  const int64_t rows = g.logits->ne[1];
  return check_logits(out, rows, g.logits->ne[0], n_past_ - rows);
}

Status LlamaSession::eval_seqs(const std::vector<SeqToken>& batch, std::vector<float>* logits) {
  LOOM_RETURN_IF_ERROR(check_newest());
  const auto n = static_cast<int64_t>(batch.size());
  const int64_t n_vocab = model_->hparams().n_vocab;
  if (n == 0) return invalid_argument("[llm.eval] no tokens to evaluate");
  if (n > n_batch_) {
    return invalid_argument("[llm.eval] sequence batch of " + std::to_string(n) + " tokens exceeds the batch size " +
                            std::to_string(n_batch_));
  }
  std::vector<int64_t> rows;
  rows.reserve(batch.size());
  int64_t n_out = 0;
  for (const SeqToken& b : batch) {
    if (b.seq < 0 || b.seq >= n_seq_) {
      return invalid_argument("[llm.eval] sequence " + std::to_string(b.seq) + " outside the session's slots [0, " +
                              std::to_string(n_seq_) + ")");
    }
    if (b.pos < 0 || b.pos >= n_ctx()) {
      return invalid_argument("[llm.eval] position " + std::to_string(b.pos) + " of sequence " + std::to_string(b.seq) +
                              " outside the context of " + std::to_string(n_ctx()) + " tokens");
    }
    if (b.token < 0 || b.token >= n_vocab) {
      return invalid_argument("[llm.eval] token id " + std::to_string(b.token) + " outside the vocabulary [0, " +
                              std::to_string(n_vocab) + ")");
    }
    rows.push_back(static_cast<int64_t>(b.seq) * n_ctx() + b.pos);
    n_out += b.logits ? 1 : 0;
  }
  std::sort(rows.begin(), rows.end());
  if (std::adjacent_find(rows.begin(), rows.end()) != rows.end()) {
    return invalid_argument("[llm.eval] a sequence batch holds one (sequence, position) twice");
  }
  if (n_out == 0) return invalid_argument("[llm.eval] a sequence batch asks for no logits");
  // A windowed cache: each slot's positions in the batch must fit its rows
  // (moved first where they would pass them); checked before anything runs.
  if (cache_.windowed()) LOOM_RETURN_IF_ERROR(make_seq_room(batch));
  // Every row is written by the step (a caller reusing one vector pays no
  // allocation or fill: a server's 16 rows of a 128k vocabulary are 8 MB).
  logits->resize(static_cast<size_t>(n_out * n_vocab));
  Status st = run_seq_step(batch, n_out, logits->data());
  if (!st.ok()) drop_step();
  return st;
}

Status LlamaSession::run_seq_step(const std::vector<SeqToken>& batch, int64_t n_out, float* out) {
  const auto n = static_cast<int64_t>(batch.size());
  // Steps of a server mix a few shapes (decodes alone, decodes beside a
  // prompt chunk): the last kSeqSteps graphs are kept, each reused while its
  // (tokens, logits rows) come again; the scheduler keeps their plans.
  Step* step = nullptr;
  for (const auto& s : seq_steps_) {
    if (s->batch.n_tokens == n && s->batch.n_out == n_out) step = s.get();
  }
  if (step == nullptr) {
    // A single-sequence step's tensors, or a full set, go first (all of them
    // sit above mark_ and roll back together).
    if (cached_ || seq_steps_.size() >= kSeqSteps) drop_step();
    LOOM_ASSIGN_OR_RETURN(Step built, make_seq_step(n, n_out));
    LOOM_RETURN_IF_ERROR(sched_->allocate(built.graph));
    seq_steps_.push_back(std::make_unique<Step>(std::move(built)));
    step = seq_steps_.back().get();
    ++steps_built_;
  }
  LlamaBatchGraph& g = step->batch;
  std::vector<int64_t> bases;
  for (int32_t q = 0; q < n_seq_; ++q) bases.push_back(cache_.base(q));
  LlamaSeqBatchInputs in = make_seq_batch_inputs(g, batch.data(), n_ctx(), bases.data());
  LOOM_RETURN_IF_ERROR(write_inputs(g, in, in.out_ids, inputs_of(*sched_)));
  LOOM_RETURN_IF_ERROR(sched_->compute(step->graph));
  ++steps_;
  bytes_copied_ += sched_->last_stats().bytes_copied;
  if (check_nodes_) {
    LOOM_RETURN_IF_ERROR(check_nodes_finite(step->graph, *sched_, "sequence batch step"));
  }
  LOOM_RETURN_IF_ERROR(tensor_get(g.logits, out, g.logits->nbytes()));
  for (int64_t r = 0, i = 0; r < n_out; ++i) {
    if (!batch[static_cast<size_t>(i)].logits) continue;
    const SeqToken& b = batch[static_cast<size_t>(i)];
    Status st = check_logits(out + r * g.logits->ne[0], 1, g.logits->ne[0], b.pos);
    if (!st.ok()) return st.with_context("llm.eval: sequence " + std::to_string(b.seq));
    ++r;
  }
  return Status();
}

Status LlamaSession::copy_seq(int32_t src, int32_t dst, int64_t n) {
  LOOM_RETURN_IF_ERROR(check_newest());
  if (src < 0 || src >= n_seq_ || dst < 0 || dst >= n_seq_ || n < 0 || n > n_ctx()) {
    return invalid_argument("[llm.session] copy of " + std::to_string(n) + " positions from slot " +
                            std::to_string(src) + " to slot " + std::to_string(dst) + " outside " +
                            std::to_string(n_seq_) + " slots of " + std::to_string(n_ctx()));
  }
  if (src == dst || n == 0) return Status();
  // A windowed cache's local layers: the window before n (positions [need,
  // n)), from src's rows to the front of dst's, which then start at need.
  const int64_t need = cache_.windowed() ? std::max<int64_t>(0, n - (cache_.n_swa() - 1)) : 0;
  if (window_reusable(cache_, src, n) != n) {
    return invalid_argument("[llm.session] copy of " + std::to_string(n) + " positions from slot " +
                            std::to_string(src) + ": its sliding-window rows start at position " +
                            std::to_string(cache_.base(src)) + ", past the window's first position " +
                            std::to_string(need));
  }
  // Per layer, K and V, per kv head: the slot's rows are one contiguous run
  // (KvCache's head-major layout), copied through the host.
  std::vector<char> rows;
  for (int64_t il = 0; il < model_->hparams().n_layer; ++il) {
    const bool bounded = cache_.bounded(il);
    const auto slot = static_cast<size_t>(bounded ? cache_.window_rows() : n_ctx());
    const auto first = static_cast<size_t>(bounded ? need - cache_.base(src) : 0);
    const auto count = static_cast<size_t>(bounded ? n - need : n);
    for (const Tensor* t : {cache_.k(il), cache_.v(il)}) {
      const size_t run = count * t->nb[1];
      rows.resize(run);
      for (int64_t g = 0; g < t->ne[2]; ++g) {
        const size_t head = static_cast<size_t>(g) * t->nb[2];
        const size_t from = head + (static_cast<size_t>(src) * slot + first) * t->nb[1];
        const size_t to = head + static_cast<size_t>(dst) * slot * t->nb[1];
        LOOM_RETURN_IF_ERROR(tensor_get(t, rows.data(), run, from));
        LOOM_RETURN_IF_ERROR(tensor_set(const_cast<Tensor*>(t), rows.data(), run, to));
      }
    }
  }
  if (cache_.windowed()) cache_.set_base(dst, need);
  return Status();
}

}  // namespace loom::llm
