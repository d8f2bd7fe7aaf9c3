#include "llm/llama_session.hpp"

#include <algorithm>
#include <string>

#include "llm/llama_graph.hpp"

namespace loom::llm {

StatusOr<std::unique_ptr<LlamaSession>> LlamaSession::create(LlamaModel* model, const SessionOptions& options) {
  if (!model) return invalid_argument("[llm.session] model is null");
  const LlamaHparams& h = model->hparams();
  const int64_t n_ctx = options.n_ctx > 0 ? options.n_ctx : h.n_ctx_train;
  if (options.n_batch < 1) {
    return invalid_argument("[llm.session] batch size " + std::to_string(options.n_batch) + " must be >= 1");
  }
  Context& ctx = model->context();
  LOOM_ASSIGN_OR_RETURN(KvCache cache,
                        KvCache::create(ctx, *model->device(), h.n_layer, h.kv_dim(), n_ctx, options.kv_type));
  LOOM_ASSIGN_OR_RETURN(auto ex, Executor::create(model->device()));
  const size_t mark = ctx.checkpoint();
  return std::unique_ptr<LlamaSession>(
      new LlamaSession(model, std::move(cache), std::move(ex), options.n_batch, mark));
}

LlamaSession::~LlamaSession() = default;

Status LlamaSession::eval(const std::vector<TokenId>& tokens, bool all_logits, std::vector<float>* logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t n_vocab = model_->hparams().n_vocab;
  if (n == 0) return invalid_argument("[llm.eval] no tokens to evaluate");
  if (n_past_ + n > cache_.n_ctx()) {
    return invalid_argument("[llm.eval] " + std::to_string(n_past_) + " cached + " + std::to_string(n) +
                            " new tokens exceed the context of " + std::to_string(cache_.n_ctx()) + " tokens");
  }
  for (TokenId t : tokens) {
    if (t < 0 || t >= n_vocab) {
      return invalid_argument("[llm.eval] token id " + std::to_string(t) + " outside the vocabulary [0, " +
                              std::to_string(n_vocab) + ")");
    }
  }
  logits->assign(static_cast<size_t>((all_logits ? n : 1) * n_vocab), 0.0f);
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

Status LlamaSession::eval_batch(const TokenId* tokens, int64_t n, bool all_logits, float* out) {
  Context& ctx = model_->context();
  // Per-step tensors go away whatever happens below.
  struct Rollback {
    Context& c;
    size_t mark;
    ~Rollback() { c.rollback(mark); }
  } rollback{ctx, mark_};
  LOOM_ASSIGN_OR_RETURN(LlamaBatchGraph g, build_llama_graph(*model_, cache_, n, n_past_, all_logits));
  LOOM_ASSIGN_OR_RETURN(Graph graph, Graph::build({g.logits}));
  LOOM_RETURN_IF_ERROR(executor_->allocate(graph));
  LlamaBatchInputs in = make_batch_inputs(g, tokens);
  LOOM_RETURN_IF_ERROR(tensor_set(g.tokens, in.tokens.data(), in.tokens.size() * sizeof(int32_t)));
  LOOM_RETURN_IF_ERROR(tensor_set(g.pos, in.pos.data(), in.pos.size() * sizeof(int32_t)));
  LOOM_RETURN_IF_ERROR(tensor_set(g.kv_rows, in.kv_rows.data(), in.kv_rows.size() * sizeof(int64_t)));
  LOOM_RETURN_IF_ERROR(tensor_set(g.mask, in.mask.data(), in.mask.size() * sizeof(float)));
  LOOM_RETURN_IF_ERROR(executor_->compute(graph));
  n_past_ += n;
  if (out) LOOM_RETURN_IF_ERROR(tensor_get(g.logits, out, g.logits->nbytes()));
  return Status();
}

}  // namespace loom::llm
