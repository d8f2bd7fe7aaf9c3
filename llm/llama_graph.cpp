#include "llm/llama_graph.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "loom/ops.hpp"

namespace loom::llm {
namespace {

// Names a node for messages and debugging: "<what>.<layer>".
Tensor* named(Tensor* t, const std::string& name) {
  t->set_name(name);
  return t;
}

}  // namespace

StatusOr<LlamaBatchGraph> build_llama_graph(LlamaModel& model, const KvCache& cache, int64_t n_tokens,
                                            int64_t n_past, bool all_logits, int64_t n_kv) {
  const LlamaHparams& h = model.hparams();
  Context& ctx = model.context();
  if (n_kv == 0) n_kv = n_past + n_tokens;
  if (n_tokens < 1 || n_past < 0 || n_past + n_tokens > cache.n_ctx() || n_kv < n_past + n_tokens ||
      n_kv > cache.n_ctx()) {
    return invalid_argument("[llm.graph] batch of " + std::to_string(n_tokens) + " tokens at position " +
                            std::to_string(n_past) + " does not fit the context of " +
                            std::to_string(cache.n_ctx()) + " (attended KV length " + std::to_string(n_kv) + ")");
  }
  const int64_t hd = h.head_dim();
  LlamaBatchGraph g;
  g.n_tokens = n_tokens;
  g.n_past = n_past;
  g.n_kv = n_kv;
  LOOM_ASSIGN_OR_RETURN(g.tokens, ctx.new_tensor(LOOM_TYPE_I32, {n_tokens}, "inp_tokens"));
  LOOM_ASSIGN_OR_RETURN(g.pos, ctx.new_tensor(LOOM_TYPE_I32, {n_tokens}, "inp_pos"));
  LOOM_ASSIGN_OR_RETURN(g.kv_rows, ctx.new_tensor(LOOM_TYPE_I64, {n_tokens}, "inp_kv_rows"));
  LOOM_ASSIGN_OR_RETURN(g.mask, ctx.new_tensor(LOOM_TYPE_F32, {n_kv, n_tokens}, "inp_mask"));
  for (Tensor* t : {g.tokens, g.pos, g.kv_rows, g.mask}) t->flags |= LOOM_TENSOR_FLAG_INPUT;

  LOOM_ASSIGN_OR_RETURN(Tensor * x, op::get_rows(ctx, model.tok_embd, g.tokens));
  const float kq_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int64_t il = 0; il < h.n_layer; ++il) {
    const LlamaLayer& l = model.layers[static_cast<size_t>(il)];
    const std::string sfx = "." + std::to_string(il);
    LOOM_ASSIGN_OR_RETURN(Tensor * cur, op::rms_norm(ctx, x, h.rms_eps));
    LOOM_ASSIGN_OR_RETURN(cur, op::mul(ctx, cur, l.attn_norm));
    named(cur, "attn_norm" + sfx);

    // Q [hd, n_head, T], K and V [kv_dim, T]; RoPE in normal mode (GGUF's
    // llama Q/K weights are permuted for it).
    LOOM_ASSIGN_OR_RETURN(Tensor * q, op::mul_mat(ctx, l.wq, cur));
    LOOM_ASSIGN_OR_RETURN(q, ctx.reshape(q, {hd, h.n_head, n_tokens}));
    LOOM_ASSIGN_OR_RETURN(q, op::rope(ctx, q, g.pos, static_cast<int>(h.n_rot), LOOM_ROPE_MODE_NORMAL,
                                      h.rope_freq_base, 1.0f));
    named(q, "q_rope" + sfx);
    LOOM_ASSIGN_OR_RETURN(Tensor * k, op::mul_mat(ctx, l.wk, cur));
    LOOM_ASSIGN_OR_RETURN(k, ctx.reshape(k, {hd, h.n_head_kv, n_tokens}));
    LOOM_ASSIGN_OR_RETURN(k, op::rope(ctx, k, g.pos, static_cast<int>(h.n_rot), LOOM_ROPE_MODE_NORMAL,
                                      h.rope_freq_base, 1.0f));
    named(k, "k_rope" + sfx);
    LOOM_ASSIGN_OR_RETURN(k, ctx.reshape(k, {h.kv_dim(), n_tokens}));
    LOOM_ASSIGN_OR_RETURN(Tensor * v, op::mul_mat(ctx, l.wv, cur));
    named(v, "v" + sfx);

    // Store this batch's rows; the attention views hang off the SET_ROWS
    // nodes so the graph orders the writes before the reads.
    Tensor* kc = cache.k(il);
    Tensor* vc = cache.v(il);
    LOOM_ASSIGN_OR_RETURN(Tensor * k_stored, op::set_rows(ctx, kc, k, g.kv_rows));
    LOOM_ASSIGN_OR_RETURN(Tensor * v_stored, op::set_rows(ctx, vc, v, g.kv_rows));
    const size_t es = kc->nb[0];
    // K as [hd, n_kv, n_head_kv]; V^T as [n_kv, hd, n_head_kv] (strided).
    LOOM_ASSIGN_OR_RETURN(Tensor * kv_k, ctx.view(k_stored, {hd, n_kv, h.n_head_kv}, {kc->nb[1], es * hd}, 0));
    LOOM_ASSIGN_OR_RETURN(Tensor * kv_v, ctx.view(v_stored, {hd, h.n_head_kv, n_kv}, {es * hd, vc->nb[1]}, 0));
    LOOM_ASSIGN_OR_RETURN(kv_v, ctx.permute(kv_v, 1, 2, 0, 3));

    // Query head i uses kv head i / (n_head / n_head_kv): MUL_MAT's dim-2
    // broadcast with heads as dim 2.
    LOOM_ASSIGN_OR_RETURN(Tensor * qh, ctx.permute(q, 0, 2, 1, 3));  // [hd, T, n_head]
    LOOM_ASSIGN_OR_RETURN(Tensor * kq, op::mul_mat(ctx, kv_k, qh));  // [n_kv, T, n_head]
    LOOM_ASSIGN_OR_RETURN(kq, op::soft_max(ctx, kq, g.mask, kq_scale));
    named(kq, "kq_soft_max" + sfx);
    LOOM_ASSIGN_OR_RETURN(Tensor * kqv, op::mul_mat(ctx, kv_v, kq));  // [hd, T, n_head]
    LOOM_ASSIGN_OR_RETURN(kqv, ctx.permute(kqv, 0, 2, 1, 3));         // [hd, n_head, T]
    LOOM_ASSIGN_OR_RETURN(kqv, op::cont(ctx, kqv));
    LOOM_ASSIGN_OR_RETURN(kqv, ctx.reshape(kqv, {h.n_embd, n_tokens}));
    LOOM_ASSIGN_OR_RETURN(Tensor * attn, op::mul_mat(ctx, l.wo, kqv));
    LOOM_ASSIGN_OR_RETURN(x, op::add(ctx, x, attn));
    named(x, "attn_out" + sfx);

    LOOM_ASSIGN_OR_RETURN(cur, op::rms_norm(ctx, x, h.rms_eps));
    LOOM_ASSIGN_OR_RETURN(cur, op::mul(ctx, cur, l.ffn_norm));
    LOOM_ASSIGN_OR_RETURN(Tensor * gate, op::mul_mat(ctx, l.ffn_gate, cur));
    LOOM_ASSIGN_OR_RETURN(Tensor * up, op::mul_mat(ctx, l.ffn_up, cur));
    LOOM_ASSIGN_OR_RETURN(Tensor * act, op::swiglu(ctx, gate, up));
    LOOM_ASSIGN_OR_RETURN(Tensor * down, op::mul_mat(ctx, l.ffn_down, act));
    LOOM_ASSIGN_OR_RETURN(x, op::add(ctx, x, down));
    named(x, "layer_out" + sfx);
  }
  if (!all_logits && n_tokens > 1) {
    // Only the last token's logits are needed for generation.
    LOOM_ASSIGN_OR_RETURN(x, ctx.view(x, {h.n_embd, 1}, {x->nb[1]}, x->nb[1] * static_cast<size_t>(n_tokens - 1)));
  }
  LOOM_ASSIGN_OR_RETURN(Tensor * cur, op::rms_norm(ctx, x, h.rms_eps));
  LOOM_ASSIGN_OR_RETURN(cur, op::mul(ctx, cur, model.output_norm));
  LOOM_ASSIGN_OR_RETURN(g.logits, op::mul_mat(ctx, model.output, cur));
  named(g.logits, "logits");
  return g;
}

int64_t padded_n_kv(int64_t n_past, int64_t n_tokens, int64_t pad, int64_t n_ctx) {
  int64_t n = n_past + n_tokens;
  if (pad > 1) n = (n + pad - 1) / pad * pad;
  return n < n_ctx ? n : n_ctx;
}

LlamaBatchInputs make_batch_inputs(const LlamaBatchGraph& g, const int32_t* tokens) {
  LlamaBatchInputs in;
  const auto n = static_cast<size_t>(g.n_tokens);
  in.tokens.assign(tokens, tokens + n);
  in.pos.resize(n);
  in.kv_rows.resize(n);
  for (size_t i = 0; i < n; ++i) {
    in.pos[i] = static_cast<int32_t>(g.n_past + static_cast<int64_t>(i));
    in.kv_rows[i] = g.n_past + static_cast<int64_t>(i);
  }
  // Causal: token i (at n_past + i) sees cache rows [0, n_past + i].
  const float neg_inf = -std::numeric_limits<float>::infinity();
  in.mask.assign(n * static_cast<size_t>(g.n_kv), neg_inf);
  for (size_t i = 0; i < n; ++i) {
    const auto visible = static_cast<size_t>(g.n_past) + i + 1;
    for (size_t j = 0; j < visible; ++j) in.mask[i * static_cast<size_t>(g.n_kv) + j] = 0.0f;
  }
  return in;
}

}  // namespace loom::llm
