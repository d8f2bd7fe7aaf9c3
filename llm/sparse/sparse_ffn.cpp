#include "llm/sparse/sparse_ffn.hpp"

#include <cmath>

#include "llm/model/llama_model.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"

namespace loom::llm {
namespace {

Tensor* named(Tensor* t, const std::string& name) {
  t->set_name(name);
  return t;
}

// The dense FFN: h = act(gate x) * (up x), down h.
// w x, plus b when the layer has that bias.
StatusOr<Tensor*> product_bias(Context& ctx, Tensor* w, Tensor* b, Tensor* x) {
  LOOM_ASSIGN_OR_RETURN(Tensor * y, op::mul_mat(ctx, w, x));
  if (b == nullptr) return y;
  return op::add(ctx, y, b);
}

StatusOr<Tensor*> dense_ffn(Context& ctx, const LlamaLayer& l, FfnActivation act, Tensor* x, Tensor** gate_out) {
  Tensor* gate = nullptr;
  Tensor* up = nullptr;
  if (l.ffn_gate == nullptr && l.ffn_gate_up == nullptr) {
    // No gate (the GPT family): down(act(up x + b)) + b.
    LOOM_ASSIGN_OR_RETURN(up, product_bias(ctx, l.ffn_up, l.ffn_up_b, x));
    Tensor* h = nullptr;
    if (act == FfnActivation::kRelu || act == FfnActivation::kReluSqr) {
      LOOM_ASSIGN_OR_RETURN(h, op::relu(ctx, up));
      if (act == FfnActivation::kReluSqr) {
        LOOM_ASSIGN_OR_RETURN(h, op::mul(ctx, h, h));
      }
    } else if (act == FfnActivation::kGelu) {
      LOOM_ASSIGN_OR_RETURN(h, op::gelu(ctx, up));
    } else {
      LOOM_ASSIGN_OR_RETURN(h, op::silu(ctx, up));
    }
    return product_bias(ctx, l.ffn_down, l.ffn_down_b, h);
  }
  if (l.ffn_gate_up) {
    // Fused (phi3): one product [2 n_ff, T], the gate's rows first; views split it.
    LOOM_ASSIGN_OR_RETURN(Tensor * gu, op::mul_mat(ctx, l.ffn_gate_up, x));
    const int64_t n_ff = gu->ne[0] / 2;
    LOOM_ASSIGN_OR_RETURN(gate, ctx.view(gu, {n_ff, gu->ne[1]}, {gu->nb[1]}, 0));
    LOOM_ASSIGN_OR_RETURN(up, ctx.view(gu, {n_ff, gu->ne[1]}, {gu->nb[1]}, static_cast<size_t>(n_ff) * gu->nb[0]));
  } else {
    // A sparse layer's repacked copies when the device keeps them (prompt batches).
    LOOM_ASSIGN_OR_RETURN(gate, product_bias(ctx, l.ffn_gate_dense ? l.ffn_gate_dense : l.ffn_gate, l.ffn_gate_b, x));
    LOOM_ASSIGN_OR_RETURN(up, product_bias(ctx, l.ffn_up_dense ? l.ffn_up_dense : l.ffn_up, l.ffn_up_b, x));
  }
  if (gate_out) *gate_out = gate;
  Tensor* h = nullptr;
  if (act == FfnActivation::kRelu) {
    LOOM_ASSIGN_OR_RETURN(gate, op::relu(ctx, gate));
    LOOM_ASSIGN_OR_RETURN(h, op::mul(ctx, gate, up));
  } else if (act == FfnActivation::kGelu) {
    LOOM_ASSIGN_OR_RETURN(Tensor * g, op::gelu(ctx, gate));
    LOOM_ASSIGN_OR_RETURN(h, op::mul(ctx, g, up));
  } else {
    LOOM_ASSIGN_OR_RETURN(h, op::swiglu(ctx, gate, up));
  }
  return product_bias(ctx, l.ffn_down, l.ffn_down_b, h);
}

// The predictor's logits z [n_ff, T] = pred_out relu(pred_in x) (+ bias).
StatusOr<Tensor*> predict(Context& ctx, const LlamaLayer& l, Tensor* x) {
  LOOM_ASSIGN_OR_RETURN(Tensor * z, op::mul_mat(ctx, l.ffn_pred_in, x));
  LOOM_ASSIGN_OR_RETURN(z, op::relu(ctx, z));
  LOOM_ASSIGN_OR_RETURN(z, op::mul_mat(ctx, l.ffn_pred_out, z));
  if (l.ffn_pred_bias) {
    LOOM_ASSIGN_OR_RETURN(z, op::add(ctx, z, l.ffn_pred_bias));
  }
  return z;
}

// The sparse FFN; nullptr (no error) when `dev` does not run its sparse
// nodes, so the caller builds the dense form instead (the nodes built here
// are then unreachable from the graph's outputs and never run).
StatusOr<Tensor*> sparse_ffn(Context& ctx, const LlamaLayer& l, float t, Tensor* x, registry::Device* dev,
                             const std::string& sfx) {
  LOOM_ASSIGN_OR_RETURN(Tensor * z, predict(ctx, l, x));
  named(z, "ffn_pred" + sfx);
  LOOM_ASSIGN_OR_RETURN(Tensor * gate, op::mul_mat_sparse_rows(ctx, l.ffn_gate, x, z, t));
  LOOM_ASSIGN_OR_RETURN(Tensor * up, op::mul_mat_sparse_rows(ctx, l.ffn_up, x, z, t));
  if (dev != nullptr && !dev->supports_op(gate)) return nullptr;
  LOOM_ASSIGN_OR_RETURN(gate, op::relu(ctx, gate));
  LOOM_ASSIGN_OR_RETURN(Tensor * h, op::mul(ctx, gate, up));
  named(h, "ffn_act_sparse" + sfx);
  if (l.ffn_down_t == nullptr) return op::mul_mat(ctx, l.ffn_down, h);
  LOOM_ASSIGN_OR_RETURN(Tensor * down, op::mul_mat_sparse_cols(ctx, l.ffn_down_t, h, z, t));
  if (dev != nullptr && !dev->supports_op(down)) return op::mul_mat(ctx, l.ffn_down, h);
  return down;
}

// One share of a split layer (hot or cold neurons): its predictor logits
// from the shared hidden layer, its rows of gate and up, its AXPY down.
StatusOr<Tensor*> share_ffn(Context& ctx, const SparseShare& sh, float t, Tensor* x, Tensor* hid,
                            const std::string& name) {
  LOOM_ASSIGN_OR_RETURN(Tensor * z, op::mul_mat(ctx, sh.pred_out, hid));
  if (sh.pred_bias) {
    LOOM_ASSIGN_OR_RETURN(z, op::add(ctx, z, sh.pred_bias));
  }
  named(z, "ffn_pred" + name);
  LOOM_ASSIGN_OR_RETURN(Tensor * gate, op::mul_mat_sparse_rows(ctx, sh.gate, x, z, t));
  LOOM_ASSIGN_OR_RETURN(Tensor * up, op::mul_mat_sparse_rows(ctx, sh.up, x, z, t));
  LOOM_ASSIGN_OR_RETURN(gate, op::relu(ctx, gate));
  LOOM_ASSIGN_OR_RETURN(Tensor * h, op::mul(ctx, gate, up));
  LOOM_ASSIGN_OR_RETURN(Tensor * out, op::mul_mat_sparse_cols(ctx, sh.down_t, h, z, t));
  return named(out, "ffn_out" + name);
}

// A layer under hot/cold placement: both shares from one hidden layer,
// their outputs added (each share runs where its rows live).
StatusOr<Tensor*> split_ffn(Context& ctx, const LlamaLayer& l, float t, Tensor* x, const std::string& sfx) {
  LOOM_ASSIGN_OR_RETURN(Tensor * hid, op::mul_mat(ctx, l.ffn_pred_in, x));
  LOOM_ASSIGN_OR_RETURN(hid, op::relu(ctx, hid));
  Tensor* out = nullptr;
  for (const auto& [sh, name] : {std::make_pair(&l.ffn_hot, ".hot"), std::make_pair(&l.ffn_cold, ".cold")}) {
    if (sh->n == 0) continue;
    LOOM_ASSIGN_OR_RETURN(Tensor * o, share_ffn(ctx, *sh, t, x, hid, name + sfx));
    if (out == nullptr) {
      out = o;
    } else {
      LOOM_ASSIGN_OR_RETURN(out, op::add(ctx, out, o));
    }
  }
  return out;
}

}  // namespace

float SparseFfnParams::logit_threshold() const { return std::log(threshold / (1.0f - threshold)); }

Status read_sparse_ffn_params(const GgufFile& file, const std::string& arch, SparseFfnParams* out) {
  const std::string who = "[llm.load] " + file.name() + ": ";
  const std::string act_key = arch + ".feed_forward_activation";
  if (file.has(act_key)) {
    StatusOr<std::string_view> v = file.get_str(act_key);
    if (!v.ok()) return Status(v.status().code(), who + v.status().message());
    if (*v == "relu") {
      out->activation = FfnActivation::kRelu;
    } else if (*v == "silu") {
      out->activation = FfnActivation::kSilu;
    } else {
      return unimplemented(who + act_key + " = '" + std::string(*v) + "': supported: relu, silu");
    }
  }
  const std::string t_key = arch + ".sparse.threshold";
  if (file.has(t_key)) {
    StatusOr<float> v = file.get_f32(t_key);
    if (!v.ok()) return Status(v.status().code(), who + v.status().message());
    if (!(*v > 0.0f && *v < 1.0f)) {
      return invalid_argument(who + t_key + " = " + std::to_string(*v) + ": must be a probability in (0, 1)");
    }
    out->threshold = *v;
  }
  return Status();
}

StatusOr<Tensor*> build_ffn(Context& ctx, const LlamaModel& model, int64_t il, Tensor* x, bool* sparse_out,
                            Tensor** dense_gate) {
  const LlamaLayer& l = model.layers[static_cast<size_t>(il)];
  const SparseFfnParams& p = model.sparse_params();
  if (sparse_out) *sparse_out = false;
  if (dense_gate) *dense_gate = nullptr;
  if (l.ffn_hot.n > 0 || l.ffn_cold.n > 0) {
    if (sparse_out) *sparse_out = true;
    return split_ffn(ctx, l, p.logit_threshold(), x, "." + std::to_string(il));
  }
  // Batches of more tokens (prompt processing) run dense: their active sets
  // together cover most rows, which the dense product streams faster.
  if (model.layer_is_sparse(il) && x->ne[1] <= kSparseMaxTokens) {
    LOOM_ASSIGN_OR_RETURN(Tensor * out, sparse_ffn(ctx, l, p.logit_threshold(), x, model.layer_device(il),
                                                   "." + std::to_string(il)));
    if (out != nullptr) {
      if (sparse_out) *sparse_out = true;
      return out;
    }
  }
  return dense_ffn(ctx, l, p.activation, x, dense_gate);
}

}  // namespace loom::llm
