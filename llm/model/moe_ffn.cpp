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
  if (!h.expert_weights_raw) {                                        // renormalised over the chosen
    LOOM_ASSIGN_OR_RETURN(Tensor * w2, ctx.reshape(w, {n_used, n_tok}));
    LOOM_ASSIGN_OR_RETURN(Tensor * w_sum, op::sum_rows(ctx, w2));  // [1, T]
    LOOM_ASSIGN_OR_RETURN(w2, op::div(ctx, w2, w_sum));
    LOOM_ASSIGN_OR_RETURN(w, ctx.reshape(w2, {1, n_used, n_tok}));
  }
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
  if (l.ffn_gate_inp_shexp == nullptr) return out;
  // The shared expert, weighted by sigmoid(g . x) = (1 + tanh(g . x / 2)) / 2.
  LOOM_ASSIGN_OR_RETURN(Tensor * g, op::mul_mat(ctx, l.ffn_gate_inp_shexp, x));  // [1, T]
  LOOM_ASSIGN_OR_RETURN(g, op::scale(ctx, g, 0.5f));
  LOOM_ASSIGN_OR_RETURN(g, op::tanh(ctx, g));
  LOOM_ASSIGN_OR_RETURN(g, op::scale(ctx, g, 0.5f, 0.5f));
  LOOM_ASSIGN_OR_RETURN(Tensor * sg, op::mul_mat(ctx, l.ffn_gate_shexp, x));
  LOOM_ASSIGN_OR_RETURN(Tensor * su, op::mul_mat(ctx, l.ffn_up_shexp, x));
  LOOM_ASSIGN_OR_RETURN(Tensor * sh, op::swiglu(ctx, sg, su));
  LOOM_ASSIGN_OR_RETURN(sh, op::mul_mat(ctx, l.ffn_down_shexp, sh));
  LOOM_ASSIGN_OR_RETURN(sh, op::mul(ctx, sh, g));
  sh->set_name("moe_shared" + sfx);
  return op::add(ctx, out, sh);
}

}  // namespace loom::llm
