// The FFN of a mixture-of-experts layer (Mixtral, Qwen3-MoE), built of the
// ABI 1.5 ops (docs/plugin-abi.md, "Mixtures of experts"): the router's
// softmax over n_expert logits, TOP_K for each token's n_expert_used
// experts, their weights renormalised to sum to 1, one MUL_MAT_ID each for
// the chosen experts' gate, up and down, SiLU-gated, weighted and summed.
#pragma once

#include <string>

#include "llm/model/llama_model.hpp"

namespace loom::llm {

// x: the normalised hidden state F32 [n_embd, T] -> F32 [n_embd, T].
StatusOr<Tensor*> build_moe_ffn(Context& ctx, const LlamaHparams& h, const LlamaLayer& l, Tensor* x,
                                const std::string& sfx);

}  // namespace loom::llm
