// The activation-sparse feed-forward block of a llama-family model with a
// ReLU FFN (issue 16): per layer a small predictor says which of the n_ff
// neurons will be non-zero for a token, and only those rows of the gate and
// up projections, and those neurons' outputs of the down projection, are
// computed (the ABI 1.3 ops MUL_MAT_SPARSE_ROWS / _COLS).
//
// GGUF naming (written by tools/make_sparse_gguf.py; docs in llm/README.md):
//   <arch>.feed_forward_activation   string "relu" | "silu" (absent: silu).
//                                    relu: h = relu(gate x) * (up x),
//                                    silu: h = silu(gate x) * (up x).
//   <arch>.sparse.threshold          f32 probability p in (0, 1), default
//                                    0.5: neuron j is active for a token
//                                    when sigmoid(z_j) > p.
//   blk.N.ffn_pred_in.weight         [n_embd, r]  predictor, first layer
//   blk.N.ffn_pred_out.weight        [r, n_ff]    predictor, second layer
//   blk.N.ffn_pred_out.bias          [n_ff] F32   (optional)
//   blk.N.ffn_down_t.weight          [n_embd, n_ff] the down projection
//                                    neuron-major (row j = neuron j's
//                                    n_embd outputs; optional)
// with z = pred_out relu(pred_in x) + bias, x the normed FFN input. A layer
// runs sparse when it has both predictor matrices, the model's activation is
// ReLU and sparse use was asked for (LoadOptions::sparse); its down
// projection is column-sparse when ffn_down_t is present, else the dense
// MUL_MAT over the (zero-filled) activations. Every other layer, and every
// layer whose device does not run the sparse ops, is dense: the same
// numbers, all neurons computed.
#pragma once

#include <string>

#include "loom/runtime/gguf.hpp"
#include "loom/runtime/status.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::llm {

class LlamaModel;
struct LlamaLayer;

// The gate's activation: silu (SwiGLU), relu (sparse models), gelu (Gemma's GELU-gated FFN).
enum class FfnActivation { kSilu, kRelu, kGelu, kReluSqr };

// A batch of more tokens than this runs a sparse layer dense (the union of
// the tokens' active neurons covers most rows; the dense product streams
// them faster). Layers under hot/cold placement always run their shares.
constexpr int64_t kSparseMaxTokens = 4;

struct SparseFfnParams {
  FfnActivation activation = FfnActivation::kSilu;
  float threshold = 0.5f;  // probability
  // The predictor logit a neuron must exceed: log(p / (1 - p)).
  float logit_threshold() const;
};

// Reads <arch>.feed_forward_activation and <arch>.sparse.threshold; an
// unknown activation is UNIMPLEMENTED, a threshold outside (0, 1)
// INVALID_ARGUMENT, both naming the key and value.
Status read_sparse_ffn_params(const GgufFile& file, const std::string& arch, SparseFfnParams* out);

// Layer il's FFN: x [n_embd, T] (normed) -> [n_embd, T], sparse or dense as
// the header comment says (dense for T > kSparseMaxTokens unless the layer
// is split hot/cold). *sparse_out (may be null) tells which; *dense_gate
// (may be null) gets the dense form's gate pre-activation [n_ff, T] (the
// ReLU neuron fires where it is > 0), nullptr when the layer runs sparse.
StatusOr<Tensor*> build_ffn(Context& ctx, const LlamaModel& model, int64_t il, Tensor* x, bool* sparse_out,
                            Tensor** dense_gate = nullptr);

}  // namespace loom::llm
