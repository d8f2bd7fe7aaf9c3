// YaRN RoPE scaling (rope.scaling.type = yarn: Qwen2.5 and others with a
// context stretched past the one they were trained on), as llama.cpp and
// Hugging Face compute it: each rotated pair k's angle is a mix of the
// interpolated (freq_scale * theta) and the original one, by a ramp over
// the pairs between the correction dims of beta_fast and beta_slow; the
// rotation's cos and sin are scaled by mscale.
//
// loom runs it on the plain ROPE op: the mix is a per-pair divisor of theta
// (the frequency factors of ROPE's src2, freq_scale 1), and mscale, which
// multiplies every rotated component of Q and K, multiplies their dot
// products by mscale^2: folded into the attention's scale, which holds when
// every dim of a head is rotated (read_llama_hparams refuses the rest).
#pragma once

#include <cstdint>
#include <vector>

namespace loom::llm {

struct YarnParams {
  float freq_scale = 1.0f;   // 1 / rope.scaling.factor
  int64_t n_ctx_orig = 0;    // rope.scaling.original_context_length
  float ext_factor = 1.0f;   // rope.scaling.yarn_ext_factor: the ramp's weight
  float attn_factor = 1.0f;  // rope.scaling.attn_factor / yarn_attn_factor
  float beta_fast = 32.0f;   // rope.scaling.yarn_beta_fast
  float beta_slow = 1.0f;    // rope.scaling.yarn_beta_slow
};

// theta_k is divided by the result's [k] (k < n_rot / 2): 1 / (freq_scale *
// (1 - mix_k) + mix_k), mix_k = ramp_k * ext_factor.
std::vector<float> yarn_theta_divisors(int64_t n_rot, float freq_base, const YarnParams& p);

// The rotation's magnitude: attn_factor * (1 + 0.1 ln(1 / freq_scale)) when
// ext_factor != 0, else attn_factor.
float yarn_mscale(const YarnParams& p);

}  // namespace loom::llm
