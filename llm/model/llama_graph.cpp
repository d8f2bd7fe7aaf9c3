#include "llm/model/llama_graph.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "llm/model/moe_ffn.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"

namespace loom::llm {
namespace {

// Names a node for messages and debugging: "<what>.<layer>".
Tensor* named(Tensor* t, const std::string& name) {
  t->set_name(name);
  return t;
}

// One layer's attention inputs: Q [hd, n_head, T] after RoPE and the cache
// tensors after this batch's SET_ROWS (the views hang off those nodes so the
// graph orders the writes before the reads).
struct LayerAttention {
  Tensor* q;
  Tensor* k_stored;
  Tensor* v_stored;
  const Tensor* kc;
  const Tensor* vc;
  std::string sfx;  // ".<layer>"
};

// Rows [0, n_kv) of every kv head of a cache tensor [hd, n_ctx, n_head_kv]
// (after its SET_ROWS): a view [hd, n_kv, n_head_kv].
StatusOr<Tensor*> cache_rows(Context& ctx, Tensor* stored, const Tensor* cache, int64_t n_kv) {
  return ctx.view(stored, {cache->ne[0], n_kv, cache->ne[2]}, {cache->nb[1], cache->nb[2]}, 0);
}

// The fused form: one ATTENTION node over K and V views [hd, n_kv, n_head_kv]
// of the cache (V not transposed). Result [hd, n_head, T].
StatusOr<Tensor*> attention_fused(Context& ctx, const LayerAttention& a, int64_t n_kv, Tensor* visible,
                                  float scale) {
  LOOM_ASSIGN_OR_RETURN(Tensor * k, cache_rows(ctx, a.k_stored, a.kc, n_kv));
  LOOM_ASSIGN_OR_RETURN(Tensor * v, cache_rows(ctx, a.v_stored, a.vc, n_kv));
  LOOM_ASSIGN_OR_RETURN(Tensor * out, op::attention(ctx, a.q, k, v, visible, scale));
  return named(out, "attn_fused" + a.sfx);
}

// The unfused form: K Q, SOFT_MAX with the -inf mask over all n_kv rows,
// V^T times the weights; scores soft-capped first when softcap > 0.
// Result [hd, n_head, T] (contiguous).
StatusOr<Tensor*> attention_unfused(Context& ctx, const LayerAttention& a, int64_t n_kv, Tensor* mask, float scale,
                                    float softcap, const LlamaBatchGraph& g) {
  // K as [hd, n_kv, n_head_kv]; V^T as [n_kv, hd, n_head_kv] (strided).
  // A Q8_0 cache's rows are copied to F32 first: a strided view of blocks
  // (V^T) is not a tensor.
  LOOM_ASSIGN_OR_RETURN(Tensor * kv_k, cache_rows(ctx, a.k_stored, a.kc, n_kv));
  LOOM_ASSIGN_OR_RETURN(Tensor * kv_v, cache_rows(ctx, a.v_stored, a.vc, n_kv));
  for (Tensor** t : {&kv_k, &kv_v}) {
    if ((*t)->type != LOOM_TYPE_Q8_0) continue;
    LOOM_ASSIGN_OR_RETURN(Tensor * f, ctx.new_tensor(LOOM_TYPE_F32, {(*t)->ne[0], (*t)->ne[1], (*t)->ne[2]},
                                                     std::string(t == &kv_k ? "kv_k_f32" : "kv_v_f32") + a.sfx));
    LOOM_ASSIGN_OR_RETURN(*t, op::cpy(ctx, *t, f));
  }
  LOOM_ASSIGN_OR_RETURN(kv_v, ctx.permute(kv_v, 1, 0, 2, 3));
  // Query head i uses kv head i / (n_head / n_head_kv): MUL_MAT's dim-2
  // broadcast with heads as dim 2.
  LOOM_ASSIGN_OR_RETURN(Tensor * qh, ctx.permute(a.q, 0, 2, 1, 3));  // [hd, T, n_head]
  LOOM_ASSIGN_OR_RETURN(Tensor * kq, op::mul_mat(ctx, kv_k, qh));    // [n_kv, T, n_head]
  if (softcap > 0.0f) {
    // c * tanh(scale * s / c); SOFT_MAX's own scale then multiplies by c.
    LOOM_ASSIGN_OR_RETURN(kq, op::scale(ctx, kq, scale / softcap));
    LOOM_ASSIGN_OR_RETURN(kq, op::tanh(ctx, kq));
    scale = softcap;
  }
  if (g.alibi_slopes != nullptr) {
    // slope * (scale * kq / slope + mask): ALiBi's distances weighed per head.
    LOOM_ASSIGN_OR_RETURN(kq, op::mul(ctx, kq, g.alibi_inv));
    LOOM_ASSIGN_OR_RETURN(kq, op::scale(ctx, kq, scale));
    LOOM_ASSIGN_OR_RETURN(kq, op::add(ctx, kq, mask));
    LOOM_ASSIGN_OR_RETURN(kq, op::mul(ctx, kq, g.alibi_slopes));
    LOOM_ASSIGN_OR_RETURN(kq, op::soft_max(ctx, kq, nullptr, 1.0f));
  } else {
    LOOM_ASSIGN_OR_RETURN(kq, op::soft_max(ctx, kq, mask, scale));
  }
  named(kq, "kq_soft_max" + a.sfx);
  LOOM_ASSIGN_OR_RETURN(Tensor * kqv, op::mul_mat(ctx, kv_v, kq));  // [hd, T, n_head]
  LOOM_ASSIGN_OR_RETURN(kqv, ctx.permute(kqv, 0, 2, 1, 3));         // [hd, n_head, T]
  return op::cont(ctx, kqv);
}

// An I32/I64/F32 graph input, flagged INPUT.
StatusOr<Tensor*> graph_input(Context& ctx, loom_type_t type, std::initializer_list<int64_t> ne, const char* name) {
  LOOM_ASSIGN_OR_RETURN(Tensor * t, ctx.new_tensor(type, ne, name));
  t->flags |= LOOM_TENSOR_FLAG_INPUT;
  return t;
}

// Layer il's attention in the fused form when allowed and its device runs
// the node, else unfused; makes the visible / mask input it reads on first
// use (the sliding-window ones for a local layer).
StatusOr<Tensor*> layer_attention(Context& ctx, LlamaModel& model, int64_t il, const LayerAttention& a,
                                  bool fused, float scale, LlamaBatchGraph* g) {
  const bool swa = model.hparams().is_swa(il);
  const int64_t n_kv = swa ? g->n_kv_swa : g->n_kv;
  // ATTENTION has no soft-capping and no ALiBi.
  fused = fused && model.hparams().attn_softcap == 0.0f && g->alibi_slopes == nullptr;
  Tensor*& visible = swa ? g->visible_swa : g->visible;
  Tensor*& mask = swa ? g->mask_swa : g->mask;
  if (fused) {
    const bool had_visible = visible != nullptr;
    if (!had_visible && (g->seq_batch || swa)) {
      // [first, end) per token: other sequences' rows, or rows past the window, are skipped.
      LOOM_ASSIGN_OR_RETURN(visible, graph_input(ctx, LOOM_TYPE_I32, {2, g->n_tokens}, swa ? "inp_ranges_swa" : "inp_ranges"));
    } else if (!had_visible) {
      LOOM_ASSIGN_OR_RETURN(visible, graph_input(ctx, LOOM_TYPE_I32, {g->n_tokens}, "inp_visible"));
    }
    LOOM_ASSIGN_OR_RETURN(Tensor * out, attention_fused(ctx, a, n_kv, visible, scale));
    registry::Device* dev = model.layer_device(il);
    if (dev != nullptr && dev->supports_op(out)) {
      ++g->fused_layers;
      return out;
    }
    if (!had_visible) visible = nullptr;  // unused: must not be uploaded
  }
  if (mask == nullptr) {
    LOOM_ASSIGN_OR_RETURN(mask, graph_input(ctx, LOOM_TYPE_F32, {n_kv, g->n_tokens}, swa ? "inp_mask_swa" : "inp_mask"));
  }
  return attention_unfused(ctx, a, n_kv, mask, scale, model.hparams().attn_softcap, *g);
}

// x [n_embd, T] times a norm weight after an RMS norm, or a LayerNorm
// (layer: the mean removed first; ArchTraits::layer_norm), plus the norm's
// bias when it has one; no weight (w nullptr): the norm alone.
StatusOr<Tensor*> rms_norm_mul(Context& ctx, Tensor* x, Tensor* w, float eps, bool layer = false,
                               Tensor* bias = nullptr) {
  LOOM_ASSIGN_OR_RETURN(Tensor * t, layer ? op::norm(ctx, x, eps) : op::rms_norm(ctx, x, eps));
  if (w != nullptr) {  // (a weightless LayerNorm: olmo)
    LOOM_ASSIGN_OR_RETURN(t, op::mul(ctx, t, w));
  }
  if (bias == nullptr) return t;
  return op::add(ctx, t, bias);
}

// min(max(x, -c), c) as relu(x + c) - relu(x - c) - c (clamp_kqv: olmo, mpt).
StatusOr<Tensor*> clamp_symmetric(Context& ctx, Tensor* x, float c) {
  LOOM_ASSIGN_OR_RETURN(Tensor * hi, op::scale(ctx, x, 1.0f, c));
  LOOM_ASSIGN_OR_RETURN(hi, op::relu(ctx, hi));
  LOOM_ASSIGN_OR_RETURN(Tensor * lo, op::scale(ctx, x, 1.0f, -c));
  LOOM_ASSIGN_OR_RETURN(lo, op::relu(ctx, lo));
  LOOM_ASSIGN_OR_RETURN(Tensor * d, op::sub(ctx, hi, lo));
  return op::scale(ctx, d, 1.0f, -c);
}

// x [n_embd, T] projected by w (plus bias b, when the architecture has one)
// and split into heads [hd, n_heads, T]; with a norm weight each head's row
// is RMS-normalised and scaled (qwen3's Q/K norms, before RoPE), or the
// whole projection's row before the split when the weight spans it (olmo2).
StatusOr<Tensor*> project_heads(Context& ctx, Tensor* x, Tensor* w, Tensor* b, Tensor* norm, int64_t hd,
                                int64_t n_heads, float eps, bool layer, float clamp) {
  LOOM_ASSIGN_OR_RETURN(Tensor * t, op::mul_mat(ctx, w, x));
  if (b) {
    LOOM_ASSIGN_OR_RETURN(t, op::add(ctx, t, b));
  }
  if (clamp > 0.0f) {
    LOOM_ASSIGN_OR_RETURN(t, clamp_symmetric(ctx, t, clamp));
  }
  if (norm && n_heads > 1 && norm->ne[0] == hd * n_heads) {
    LOOM_ASSIGN_OR_RETURN(t, rms_norm_mul(ctx, t, norm, eps));
    return ctx.reshape(t, {hd, n_heads, x->ne[1]});
  }
  LOOM_ASSIGN_OR_RETURN(t, ctx.reshape(t, {hd, n_heads, x->ne[1]}));
  if (norm) {  // ([hd], or a weight per head [hd, n_heads]: command-r's)
    LOOM_ASSIGN_OR_RETURN(t, rms_norm_mul(ctx, t, norm, eps, layer));
  }
  return t;
}

// RoPE of layer il's heads [hd, n_heads, T] at the batch's positions, in
// the architecture's mode, with the model's frequency factors when it has
// them (the copy on the layer's device).
// long_ctx: the session's sequences hold more positions than the model's
// original context (LongRoPE's long factors).
StatusOr<Tensor*> rope_heads(Context& ctx, const LlamaModel& model, int64_t il, Tensor* t, Tensor* pos,
                             bool long_ctx) {
  const LlamaHparams& h = model.hparams();
  // Sliding-window layers have their own base and scale (gemma3's local layers).
  const bool swa = h.is_swa(il);
  return op::rope(ctx, t, pos, static_cast<int>(h.n_rot), model.arch_traits().rope_mode,
                  swa ? h.rope_freq_base_swa : h.rope_freq_base, swa ? h.rope_freq_scale_swa : h.rope_freq_scale,
                  model.rope_freqs_for(il, long_ctx));
}

// Layer il's attention block: x [n_embd, T] -> the attention output [n_embd,
// T] (before the residual add); stores this batch's K and V in the cache.
StatusOr<Tensor*> attention_block(Context& ctx, LlamaModel& model, const KvCache& cache, int64_t il, Tensor* cur,
                                  bool fused, LlamaBatchGraph* g) {
  const LlamaHparams& h = model.hparams();
  const LlamaLayer& l = model.layers[static_cast<size_t>(il)];
  const std::string sfx = "." + std::to_string(il);
  const int64_t hd = h.head_dim();
  // Q [hd, n_head, T], K and V [hd, n_head_kv, T].
  Tensor* q = nullptr;
  Tensor* k = nullptr;
  Tensor* v = nullptr;
  if (l.wqkv) {
    // Fused (phi3): one product [q_dim + 2 kv_dim, T]; the heads are views of it.
    LOOM_ASSIGN_OR_RETURN(Tensor * qkv, op::mul_mat(ctx, l.wqkv, cur));
    if (l.bqkv) {
      LOOM_ASSIGN_OR_RETURN(qkv, op::add(ctx, qkv, l.bqkv));
    }
    if (h.clamp_kqv > 0.0f) {
      LOOM_ASSIGN_OR_RETURN(qkv, clamp_symmetric(ctx, qkv, h.clamp_kqv));
    }
    const size_t es = qkv->nb[0];
    auto heads = [&](int64_t n_heads, int64_t first_row) {
      return ctx.view(qkv, {hd, n_heads, qkv->ne[1]}, {es * static_cast<size_t>(hd), qkv->nb[1]},
                      es * static_cast<size_t>(first_row));
    };
    LOOM_ASSIGN_OR_RETURN(q, heads(h.n_head, 0));
    LOOM_ASSIGN_OR_RETURN(k, heads(h.n_head_kv, h.q_dim()));
    LOOM_ASSIGN_OR_RETURN(v, heads(h.n_head_kv, h.q_dim() + h.kv_dim()));
  } else {
    const bool ln = model.arch_traits().layer_norm;
    const float c = h.clamp_kqv;
    LOOM_ASSIGN_OR_RETURN(q, project_heads(ctx, cur, l.wq, l.bq, l.q_norm, hd, h.n_head, h.rms_eps, ln, c));
    LOOM_ASSIGN_OR_RETURN(k, project_heads(ctx, cur, l.wk, l.bk, l.k_norm, hd, h.n_head_kv, h.rms_eps, ln, c));
    LOOM_ASSIGN_OR_RETURN(v, project_heads(ctx, cur, l.wv, l.bv, nullptr, hd, h.n_head_kv, h.rms_eps, ln, c));
  }
  const bool long_ctx = cache.n_ctx() / cache.n_seq() > h.n_ctx_orig;
  if (h.rotates(il)) {  // (a NoPE layer's Q and K go to the attention as projected)
    LOOM_ASSIGN_OR_RETURN(q, rope_heads(ctx, model, il, q, g->pos, long_ctx));
    named(q, "q_rope" + sfx);
    LOOM_ASSIGN_OR_RETURN(k, rope_heads(ctx, model, il, k, g->pos, long_ctx));
    named(k, "k_rope" + sfx);
  }
  if (!l.wqkv) named(v, "v" + sfx);
  if (g->q_scale != nullptr && h.rotates(il)) {
    LOOM_ASSIGN_OR_RETURN(q, op::mul(ctx, q, g->q_scale));
  }

  // Store this batch's rows (as [hd, T, n_head_kv]: the cache's order),
  // then attend over the cache.
  Tensor* kc = cache.k(il);
  Tensor* vc = cache.v(il);
  LOOM_ASSIGN_OR_RETURN(k, ctx.permute(k, 0, 2, 1, 3));
  LOOM_ASSIGN_OR_RETURN(v, ctx.permute(v, 0, 2, 1, 3));
  // A bounded local layer writes its own rows (KvCache::bounded); a
  // windowed cache makes each kind's rows input on first use.
  Tensor*& rows = cache.bounded(il) ? g->kv_rows_swa : g->kv_rows;
  if (rows == nullptr) {
    LOOM_ASSIGN_OR_RETURN(rows, graph_input(ctx, LOOM_TYPE_I64, {g->n_tokens, h.n_head_kv},
                                            cache.bounded(il) ? "inp_kv_rows_swa" : "inp_kv_rows"));
  }
  LOOM_ASSIGN_OR_RETURN(Tensor * k_stored, op::set_rows(ctx, kc, k, rows));
  LOOM_ASSIGN_OR_RETURN(Tensor * v_stored, op::set_rows(ctx, vc, v, rows));
  const LayerAttention la{q, k_stored, v_stored, kc, vc, sfx};
  // RoPE's magnitude (YaRN's, or rope.scaling.attn_factor: LongRoPE) scales
  // Q's and K's rotated components, so every score by its square.
  // (or, on a partly rotated head, Q's rotated dims: g->q_scale; an
  // unrotated layer's scores take no magnitude.)
  const float folded = g->q_scale == nullptr && h.rotates(il) ? h.rope_mscale * h.rope_mscale : 1.0f;
  const float kq_scale = (h.attn_scale > 0.0f ? h.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd))) * folded;
  LOOM_ASSIGN_OR_RETURN(Tensor * kqv, layer_attention(ctx, model, il, la, fused, kq_scale, g));
  LOOM_ASSIGN_OR_RETURN(kqv, ctx.reshape(kqv, {h.q_dim(), g->n_tokens}));
  LOOM_ASSIGN_OR_RETURN(Tensor * out, op::mul_mat(ctx, l.wo, kqv));
  if (l.bo) return op::add(ctx, out, l.bo);
  return out;
}

// x + f * branch: a block's output added to the residual stream, scaled
// first where the model says (granite's residual_scale).
StatusOr<Tensor*> residual_add(Context& ctx, const LlamaHparams& h, Tensor* x, Tensor* branch) {
  if (h.residual_scale > 0.0f) {
    LOOM_ASSIGN_OR_RETURN(branch, op::scale(ctx, branch, h.residual_scale));
  }
  return op::add(ctx, x, branch);
}

}  // namespace

namespace {

// The layers and the output of a batch whose g's sizes and form are set:
// inputs, every layer, the final norm and the logits of the rows asked for
// (g.out_ids, else the last row unless all_logits).
Status build_layers(LlamaModel& model, const KvCache& cache, bool all_logits, bool fused_attention,
                    LlamaBatchGraph& g) {
  const LlamaHparams& h = model.hparams();
  Context& ctx = model.context();
  const int64_t n_tokens = g.n_tokens;
  LOOM_ASSIGN_OR_RETURN(g.tokens, graph_input(ctx, LOOM_TYPE_I32, {n_tokens}, "inp_tokens"));
  bool rotates = false;  // (a model with RoPE off everywhere reads no positions)
  for (int64_t il = 0; il < h.n_layer; ++il) rotates = rotates || h.rotates(il);
  if (rotates || model.pos_embd != nullptr) {
    LOOM_ASSIGN_OR_RETURN(g.pos, graph_input(ctx, LOOM_TYPE_I32, {n_tokens}, "inp_pos"));
  }
  // Local layers of a windowed cache: their rows, their attended length.
  g.n_head_kv = h.n_head_kv;
  g.swa_slot_rows = cache.window_rows();
  g.n_kv_swa = g.n_kv;
  if (!cache.windowed()) {
    LOOM_ASSIGN_OR_RETURN(g.kv_rows, graph_input(ctx, LOOM_TYPE_I64, {n_tokens, h.n_head_kv}, "inp_kv_rows"));
  } else {
    g.n_kv_swa = std::min(g.n_kv, g.seq_batch ? cache.window_rows() * cache.n_seq() : cache.window_rows());
  }
  if (rotates && h.rope_mscale != 1.0f && h.n_rot < h.head_dim()) {
    LOOM_ASSIGN_OR_RETURN(g.q_scale, graph_input(ctx, LOOM_TYPE_F32, {h.head_dim()}, "inp_q_scale"));
    g.q_scale_values.assign(static_cast<size_t>(h.head_dim()), 1.0f);
    for (int64_t i = 0; i < h.n_rot; ++i) g.q_scale_values[static_cast<size_t>(i)] = h.rope_mscale * h.rope_mscale;
  }
  if (h.alibi_max_bias > 0.0f) {
    LOOM_ASSIGN_OR_RETURN(g.alibi_slopes, graph_input(ctx, LOOM_TYPE_F32, {1, 1, h.n_head}, "inp_alibi_slopes"));
    LOOM_ASSIGN_OR_RETURN(g.alibi_inv, graph_input(ctx, LOOM_TYPE_F32, {1, 1, h.n_head}, "inp_alibi_inv"));
    for (int64_t hh = 0; hh < h.n_head; ++hh) {
      g.alibi_slope_values.push_back(h.alibi_slope(hh));
      g.alibi_inv_values.push_back(1.0f / g.alibi_slope_values.back());
    }
  }
  if (g.seq_batch && g.n_out != n_tokens) {
    LOOM_ASSIGN_OR_RETURN(g.out_ids, graph_input(ctx, LOOM_TYPE_I32, {g.n_out}, "inp_out_ids"));
  }

  g.n_swa = h.n_swa;
  LOOM_ASSIGN_OR_RETURN(Tensor * x, op::get_rows(ctx, model.tok_embd, g.tokens));
  if (h.embd_scale > 0.0f) {
    LOOM_ASSIGN_OR_RETURN(x, op::scale(ctx, x, h.embd_scale));
  }
  if (model.tok_norm != nullptr) {  // (bloom)
    LOOM_ASSIGN_OR_RETURN(
        x, rms_norm_mul(ctx, x, model.tok_norm, h.rms_eps, model.arch_traits().layer_norm, model.tok_norm_b));
  }
  if (model.pos_embd != nullptr) {  // learned positions (gpt2)
    LOOM_ASSIGN_OR_RETURN(Tensor * p, op::get_rows(ctx, model.pos_embd, g.pos));
    LOOM_ASSIGN_OR_RETURN(x, op::add(ctx, x, p));
  }
  const bool ln = model.arch_traits().layer_norm;
  const bool weightless = model.arch_traits().weightless_norms;  // (olmo: norms without weights)
  for (int64_t il = 0; il < h.n_layer; ++il) {
    const LlamaLayer& l = model.layers[static_cast<size_t>(il)];
    const bool parallel = l.parallel;
    const std::string sfx = "." + std::to_string(il);
    Tensor* cur = x;  // (no input norm: olmo2)
    if (l.attn_norm || weightless) {
      LOOM_ASSIGN_OR_RETURN(cur, rms_norm_mul(ctx, x, l.attn_norm, h.rms_eps, ln, l.attn_norm_b));
      named(cur, "attn_norm" + sfx);
    }
    Tensor* const attn_in = cur;
    if (l.attn_norm_2) {  // (falcon 40B: the attention's own norm; attn_in feeds the FFN)
      LOOM_ASSIGN_OR_RETURN(cur, rms_norm_mul(ctx, x, l.attn_norm_2, h.rms_eps, ln, l.attn_norm_2_b));
    }
    LOOM_ASSIGN_OR_RETURN(Tensor * attn, attention_block(ctx, model, cache, il, cur, fused_attention, &g));
    if (l.post_attn_norm) {
      LOOM_ASSIGN_OR_RETURN(attn, rms_norm_mul(ctx, attn, l.post_attn_norm, h.rms_eps));
    }
    if (!parallel) {  // (parallel blocks: the attention's output joins the FFN's below)
      LOOM_ASSIGN_OR_RETURN(x, residual_add(ctx, h, x, attn));
      named(x, "attn_out" + sfx);
    }

    // Parallel blocks: the FFN reads the attention's input, or its own norm
    // of the layer's input (x has no attention output added yet).
    cur = parallel ? attn_in : x;
    if (l.ffn_norm || weightless) {
      LOOM_ASSIGN_OR_RETURN(cur, rms_norm_mul(ctx, x, l.ffn_norm, h.rms_eps, ln, l.ffn_norm_b));
    }
    bool sparse = false;
    Tensor* gate = nullptr;
    Tensor* down = nullptr;
    if (l.ffn_gate_inp != nullptr) {
      LOOM_ASSIGN_OR_RETURN(down, build_moe_ffn(ctx, h, l, cur, sfx));
    } else {
      LOOM_ASSIGN_OR_RETURN(down, build_ffn(ctx, model, il, cur, &sparse, &gate));
    }
    g.ffn_gate.push_back(gate);
    g.sparse_layers += sparse ? 1 : 0;
    if (l.post_ffw_norm) {
      LOOM_ASSIGN_OR_RETURN(down, rms_norm_mul(ctx, down, l.post_ffw_norm, h.rms_eps));
    }
    if (parallel) {
      // x + (ffn + attn), llama.cpp's order of the two adds.
      LOOM_ASSIGN_OR_RETURN(down, op::add(ctx, down, attn));
    }
    LOOM_ASSIGN_OR_RETURN(x, residual_add(ctx, h, x, down));
    named(x, "layer_out" + sfx);
  }
  if (g.out_ids != nullptr) {
    // Only the rows asked for (each sequence's last token).
    LOOM_ASSIGN_OR_RETURN(x, op::get_rows(ctx, x, g.out_ids));
  } else if (!g.seq_batch && !all_logits && n_tokens > 1) {
    // Only the last token's logits are needed for generation.
    LOOM_ASSIGN_OR_RETURN(x, ctx.view(x, {h.n_embd, 1}, {x->nb[1]}, x->nb[1] * static_cast<size_t>(n_tokens - 1)));
  }
  LOOM_ASSIGN_OR_RETURN(Tensor * cur, rms_norm_mul(ctx, x, model.output_norm, h.rms_eps, ln, model.output_norm_b));
  LOOM_ASSIGN_OR_RETURN(g.logits, op::mul_mat(ctx, model.output, cur));
  if (model.output_b != nullptr) {
    LOOM_ASSIGN_OR_RETURN(g.logits, op::add(ctx, g.logits, model.output_b));
  }
  if (h.logit_factor > 0.0f) {
    LOOM_ASSIGN_OR_RETURN(g.logits, op::scale(ctx, g.logits, h.logit_factor));
  }
  if (h.final_softcap > 0.0f) {
    LOOM_ASSIGN_OR_RETURN(g.logits, op::scale(ctx, g.logits, 1.0f / h.final_softcap));
    LOOM_ASSIGN_OR_RETURN(g.logits, op::tanh(ctx, g.logits));
    LOOM_ASSIGN_OR_RETURN(g.logits, op::scale(ctx, g.logits, h.final_softcap));
  }
  named(g.logits, "logits");
  return Status();
}

}  // namespace

StatusOr<LlamaBatchGraph> build_llama_graph(LlamaModel& model, const KvCache& cache, int64_t n_tokens,
                                            int64_t n_past, bool all_logits, int64_t n_kv, bool fused_attention) {
  if (n_kv == 0) n_kv = n_past + n_tokens;
  if (n_tokens < 1 || n_past < 0 || n_past + n_tokens > cache.n_ctx() || n_kv < n_past + n_tokens ||
      n_kv > cache.n_ctx()) {
    return invalid_argument("[llm.graph] batch of " + std::to_string(n_tokens) + " tokens at position " +
                            std::to_string(n_past) + " does not fit the context of " +
                            std::to_string(cache.n_ctx()) + " (attended KV length " + std::to_string(n_kv) + ")");
  }
  LlamaBatchGraph g;
  g.n_tokens = n_tokens;
  g.n_past = n_past;
  g.n_kv = n_kv;
  g.n_out = all_logits ? n_tokens : 1;
  LOOM_RETURN_IF_ERROR(build_layers(model, cache, all_logits, fused_attention, g));
  return g;
}

StatusOr<LlamaBatchGraph> build_llama_seq_graph(LlamaModel& model, const KvCache& cache, int64_t n_tokens,
                                                int64_t n_out, bool fused_attention) {
  if (n_tokens < 1 || n_tokens > cache.n_ctx() || n_out < 1 || n_out > n_tokens) {
    return invalid_argument("[llm.graph] sequence batch of " + std::to_string(n_tokens) + " tokens with " +
                            std::to_string(n_out) + " rows of logits does not fit a cache of " +
                            std::to_string(cache.n_ctx()) + " rows");
  }
  LlamaBatchGraph g;
  g.seq_batch = true;
  g.n_tokens = n_tokens;
  g.n_kv = cache.n_ctx();
  g.n_out = n_out;
  LOOM_RETURN_IF_ERROR(build_layers(model, cache, false, fused_attention, g));
  return g;
}

int64_t padded_n_kv(int64_t n_past, int64_t n_tokens, int64_t pad, int64_t n_ctx) {
  int64_t n = n_past + n_tokens;
  if (pad > 1) n = (n + pad - 1) / pad * pad;
  return n < n_ctx ? n : n_ctx;
}

namespace {

// A visible mask entry: 0, or under ALiBi -(query row - key row) (rows of
// one sequence are its positions, offset alike).
float alibi_distance(const LlamaBatchGraph& g, size_t query_row, size_t key_row) {
  return g.alibi_slopes == nullptr ? 0.0f : -static_cast<float>(query_row - key_row);
}

}  // namespace

LlamaBatchInputs make_batch_inputs(const LlamaBatchGraph& g, const int32_t* tokens) {
  LlamaBatchInputs in;
  const auto n = static_cast<size_t>(g.n_tokens);
  in.tokens.assign(tokens, tokens + n);
  in.pos.resize(n);
  const auto n_head_kv = static_cast<size_t>(g.n_head_kv);
  if (g.kv_rows != nullptr) in.kv_rows.resize(n * n_head_kv);
  if (g.kv_rows_swa != nullptr) in.kv_rows_swa.resize(n * n_head_kv);
  for (size_t i = 0; i < n; ++i) {
    in.pos[i] = static_cast<int32_t>(g.n_past + static_cast<int64_t>(i));
    for (size_t hk = 0; hk < in.kv_rows.size() / n; ++hk) in.kv_rows[hk * n + i] = g.n_past + static_cast<int64_t>(i);
    for (size_t hk = 0; hk < in.kv_rows_swa.size() / n; ++hk) {
      in.kv_rows_swa[hk * n + i] = g.n_past + static_cast<int64_t>(i) - g.swa_base;
    }
  }
  // Causal: token i (at n_past + i) sees cache rows [0, n_past + i].
  if (g.visible != nullptr) {
    in.visible.resize(n);
    for (size_t i = 0; i < n; ++i) in.visible[i] = static_cast<int32_t>(g.n_past + static_cast<int64_t>(i) + 1);
  }
  if (g.mask != nullptr) {
    const float neg_inf = -std::numeric_limits<float>::infinity();
    in.mask.assign(n * static_cast<size_t>(g.n_kv), neg_inf);
    for (size_t i = 0; i < n; ++i) {
      const auto visible = static_cast<size_t>(g.n_past) + i + 1;
      for (size_t j = 0; j < visible; ++j)
        in.mask[i * static_cast<size_t>(g.n_kv) + j] = alibi_distance(g, visible - 1, j);
    }
  }
  // Sliding-window layers: rows [end - n_swa, end) of those (their rows hold swa_base on).
  for (size_t i = 0; i < n; ++i) {
    const int64_t end = g.n_past + static_cast<int64_t>(i) + 1 - g.swa_base;
    add_window_rows(g, i, 0, end, &in);
  }
  return in;
}

void add_window_rows(const LlamaBatchGraph& g, size_t i, int64_t first, int64_t end, LlamaBatchInputs* in) {
  const auto n = static_cast<size_t>(g.n_tokens);
  const int64_t from = g.n_swa > 0 ? std::max(first, end - g.n_swa) : first;
  if (g.visible_swa != nullptr) {
    in->visible_swa.resize(2 * n);
    in->visible_swa[2 * i] = static_cast<int32_t>(from);
    in->visible_swa[2 * i + 1] = static_cast<int32_t>(end);
  }
  if (g.mask_swa != nullptr) {
    in->mask_swa.resize(n * static_cast<size_t>(g.n_kv_swa), -std::numeric_limits<float>::infinity());
    float* m = in->mask_swa.data() + i * static_cast<size_t>(g.n_kv_swa);
    std::fill(m + from, m + end, 0.0f);
  }
}

LlamaSeqBatchInputs make_seq_batch_inputs(const LlamaBatchGraph& g, const SeqToken* batch, int64_t slot_ctx,
                                          const int64_t* swa_base) {
  LlamaSeqBatchInputs in;
  const auto n = static_cast<size_t>(g.n_tokens);
  const auto n_head_kv = static_cast<size_t>(g.n_head_kv);
  in.tokens.resize(n);
  in.pos.resize(n);
  if (g.kv_rows != nullptr) in.kv_rows.resize(n * n_head_kv);
  if (g.kv_rows_swa != nullptr) in.kv_rows_swa.resize(n * n_head_kv);
  if (g.visible != nullptr) in.visible.resize(2 * n);
  if (g.mask != nullptr) in.mask.assign(n * static_cast<size_t>(g.n_kv), -std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < n; ++i) {
    const SeqToken& b = batch[i];
    const int64_t first = static_cast<int64_t>(b.seq) * slot_ctx;
    const int64_t row = first + b.pos;
    in.tokens[i] = b.token;
    in.pos[i] = b.pos;
    for (size_t hk = 0; hk < in.kv_rows.size() / n; ++hk) in.kv_rows[hk * n + i] = row;
    // Its own sequence's rows up to itself.
    if (g.visible != nullptr) {
      in.visible[2 * i] = static_cast<int32_t>(first);
      in.visible[2 * i + 1] = static_cast<int32_t>(row + 1);
    }
    if (g.mask != nullptr) {
      float* m = in.mask.data() + i * static_cast<size_t>(g.n_kv);
      for (int64_t j = first; j <= row; ++j) m[j] = alibi_distance(g, static_cast<size_t>(row), static_cast<size_t>(j));
    }
    // The local layers' rows: the slot's window rows (from its base) when windowed.
    const int64_t swa_first = g.kv_rows_swa != nullptr ? static_cast<int64_t>(b.seq) * g.swa_slot_rows : first;
    const int64_t swa_row = swa_first + b.pos - (swa_base != nullptr ? swa_base[b.seq] : 0);
    if (g.kv_rows_swa != nullptr) {
      for (size_t hk = 0; hk < n_head_kv; ++hk) in.kv_rows_swa[hk * n + i] = swa_row;
    }
    add_window_rows(g, i, swa_first, swa_row + 1, &in);
    if (g.out_ids != nullptr && b.logits) in.out_ids.push_back(static_cast<int32_t>(i));
  }
  return in;
}

}  // namespace loom::llm
