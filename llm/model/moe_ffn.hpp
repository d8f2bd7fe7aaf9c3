// The FFN of a mixture-of-experts layer (Mixtral, Qwen3-MoE), built of the
// ABI 1.5 ops (docs/plugin-abi.md, "Mixtures of experts"): the router's
// softmax over n_expert logits, TOP_K for each token's n_expert_used
// experts, their weights renormalised to sum to 1 (or as they are:
// qwen2moe, olmoe), one MUL_MAT_ID each for the chosen experts' gate, up and
// down, SiLU-gated, weighted and summed; plus a shared expert where the
// layer has one (qwen2moe: a dense SiLU-gated FFN weighted by the sigmoid of
// its own gate's logit, as 1/2 + tanh(z / 2) / 2).
#pragma once

#include <string>

#include "llm/model/llama_model.hpp"

namespace loom::llm {

// x: the normalised hidden state F32 [n_embd, T] -> F32 [n_embd, T].
StatusOr<Tensor*> build_moe_ffn(Context& ctx, const LlamaHparams& h, const LlamaLayer& l, Tensor* x,
                                const std::string& sfx);

}  // namespace loom::llm
