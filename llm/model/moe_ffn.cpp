#include "llm/model/moe_ffn.hpp"

#include "loom/runtime/ops.hpp"

namespace loom::llm {

StatusOr<Tensor*> build_moe_ffn(Context& ctx, const LlamaHparams& h, const LlamaLayer& l, Tensor* x,
                                const std::string& sfx) {
  const int64_t n_tok = x->ne[1];
  const int64_t n_expert = h.n_expert, n_used = h.n_expert_used;
  // Routing: probabilities [E, T], each token's top n_used, their weights.
  LOOM_ASSIGN_OR_RETURN(Tensor * logits, op::mul_mat(ctx, l.ffn_gate_inp, x));
  LOOM_ASSIGN_OR_RETURN(Tensor * probs, op::soft_max(ctx, logits, nullptr, 1.0f));
  probs->set_name("moe_probs" + sfx);
  LOOM_ASSIGN_OR_RETURN(Tensor * ids, op::top_k(ctx, probs, static_cast<int>(n_used)));
  ids->set_name("moe_ids" + sfx);
  LOOM_ASSIGN_OR_RETURN(Tensor * probs3, ctx.reshape(probs, {1, n_expert, n_tok}));
  LOOM_ASSIGN_OR_RETURN(Tensor * w, op::get_rows(ctx, probs3, ids));  // [1, U, T]
  LOOM_ASSIGN_OR_RETURN(Tensor * w2, ctx.reshape(w, {n_used, n_tok}));
  LOOM_ASSIGN_OR_RETURN(Tensor * w_sum, op::sum_rows(ctx, w2));  // [1, T]
  LOOM_ASSIGN_OR_RETURN(w2, op::div(ctx, w2, w_sum));
  LOOM_ASSIGN_OR_RETURN(w, ctx.reshape(w2, {1, n_used, n_tok}));
  w->set_name("moe_weights" + sfx);

  // The chosen experts: [n_embd, 1, T] -> [n_ff_exp, U, T] -> [n_embd, U, T].
  LOOM_ASSIGN_OR_RETURN(Tensor * x3, ctx.reshape(x, {x->ne[0], 1, n_tok}));
  LOOM_ASSIGN_OR_RETURN(Tensor * gate, op::mul_mat_id(ctx, l.ffn_gate_exps, x3, ids));
  LOOM_ASSIGN_OR_RETURN(Tensor * up, op::mul_mat_id(ctx, l.ffn_up_exps, x3, ids));
  LOOM_ASSIGN_OR_RETURN(Tensor * act, op::swiglu(ctx, gate, up));
  LOOM_ASSIGN_OR_RETURN(Tensor * down, op::mul_mat_id(ctx, l.ffn_down_exps, act, ids));
  LOOM_ASSIGN_OR_RETURN(down, op::mul(ctx, down, w));
  down->set_name("moe_down" + sfx);

  // Sum of the U slots: views [n_embd, T] of down, added.
  auto slot = [&](int64_t u) {
    return ctx.view(down, {down->ne[0], n_tok}, {down->nb[2]}, down->nb[1] * static_cast<size_t>(u));
  };
  LOOM_ASSIGN_OR_RETURN(Tensor * out, slot(0));
  if (n_used == 1) return op::cont(ctx, out);
  for (int64_t u = 1; u < n_used; ++u) {
    LOOM_ASSIGN_OR_RETURN(Tensor * s, slot(u));
    LOOM_ASSIGN_OR_RETURN(out, op::add(ctx, out, s));
  }
  out->set_name("moe_out" + sfx);
  return out;
}

}  // namespace loom::llm
