#include "llm/model/llama_hparams.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "llm/model/arch.hpp"
#include "llm/model/rope_yarn.hpp"
#include "loom/runtime/log.hpp"

namespace loom::llm {
namespace {

// Reads integer keys of one architecture, each bounded to [1, max].
class KeyReader {
 public:
  KeyReader(const GgufFile& f, const std::string& arch) : f_(f), arch_(arch), who_("[llm.load] " + f.name() + ": ") {}

  // fallback < 0: the key is required. min_value: 1, or 0 where a count may be none.
  Status get(const char* key, int64_t max, const char* unit, int64_t* out, int64_t fallback = -1,
             int64_t min_value = 1) const {
    const std::string k = arch_ + "." + key;
    if (!f_.has(k)) {
      if (fallback < 0) return not_found(who_ + "missing metadata key " + k);
      *out = fallback;
      return Status();
    }
    StatusOr<int64_t> v = f_.get_int(k);
    if (!v.ok()) return Status(v.status().code(), who_ + v.status().message());
    if (*v < min_value) {
      return invalid_argument(who_ + k + " = " + std::to_string(*v) + ": must be >= " + std::to_string(min_value));
    }
    if (*v > max) {
      return invalid_argument(who_ + k + " = " + std::to_string(*v) + ": above loom's limit of " +
                              std::to_string(max) + " " + unit);
    }
    *out = *v;
    return Status();
  }
  // A float key; absent keeps *out. Must be finite.
  Status get_f(const char* key, float* out) const {
    const std::string k = arch_ + "." + key;
    if (!f_.has(k)) return Status();
    StatusOr<float> v = f_.get_f32(k);
    if (!v.ok()) return Status(v.status().code(), who_ + v.status().message());
    if (!std::isfinite(*v)) return invalid_argument(who_ + k + " = " + std::to_string(*v) + ": not finite");
    *out = *v;
    return Status();
  }
  // A string key; absent keeps *out.
  Status get_s(const char* key, std::string* out) const {
    const std::string k = arch_ + "." + key;
    if (!f_.has(k)) return Status();
    StatusOr<std::string_view> v = f_.get_str(k);
    if (!v.ok()) return Status(v.status().code(), who_ + v.status().message());
    *out = std::string(*v);
    return Status();
  }
  bool has(const char* key) const { return f_.has(arch_ + "." + key); }
  Status missing(const char* key) const { return not_found(who_ + "missing metadata key " + arch_ + "." + key); }
  Status fail(const std::string& what) const { return invalid_argument(who_ + what); }
  Status not_implemented(const std::string& what) const { return unimplemented(who_ + what); }

 private:
  const GgufFile& f_;
  const std::string& arch_;
  std::string who_;
};

// Heads: counts, the dims of each (key_length / value_length, else
// n_embd / n_head) and the rotated dims.
Status read_heads(const KeyReader& r, const std::string& arch, LlamaHparams* h) {
  using L = LlamaLimits;
  LOOM_RETURN_IF_ERROR(r.get("attention.head_count", L::kMaxHeads, "heads", &h->n_head));
  LOOM_RETURN_IF_ERROR(r.get("attention.head_count_kv", L::kMaxHeads, "heads", &h->n_head_kv, h->n_head));
  if (h->n_head % h->n_head_kv != 0) {
    return r.fail("head_count " + std::to_string(h->n_head) + " is not a multiple of head_count_kv " +
                  std::to_string(h->n_head_kv));
  }
  int64_t key_len = 0, value_len = 0;  // 0: absent
  LOOM_RETURN_IF_ERROR(r.get("attention.key_length", L::kMaxHeadDim, "dims", &key_len, 0));
  if (key_len == 0) {
    if (h->n_embd % h->n_head != 0) {
      return r.fail("embedding_length " + std::to_string(h->n_embd) + " is not a multiple of head_count " +
                    std::to_string(h->n_head) + " (and " + arch + ".attention.key_length is absent)");
    }
    h->n_embd_head = h->n_embd / h->n_head;
    if (h->n_embd_head > L::kMaxHeadDim) {
      return r.fail("head dim " + std::to_string(h->n_embd_head) + " (embedding_length " +
                    std::to_string(h->n_embd) + " / head_count " + std::to_string(h->n_head) +
                    "): above loom's limit of " + std::to_string(L::kMaxHeadDim));
    }
  } else {
    h->n_embd_head = key_len;
  }
  LOOM_RETURN_IF_ERROR(r.get("attention.value_length", L::kMaxHeadDim, "dims", &value_len, h->n_embd_head));
  if (value_len != h->n_embd_head) {
    return r.not_implemented(arch + ".attention.value_length = " + std::to_string(value_len) +
                             " differs from the key head dim " + std::to_string(h->n_embd_head) +
                             ": loom's KV cache has one head size");
  }
  LOOM_RETURN_IF_ERROR(r.get("rope.dimension_count", L::kMaxHeadDim, "dims", &h->n_rot, h->head_dim()));
  if (h->n_rot % 2 != 0 || h->n_rot > h->head_dim()) {
    return r.fail("rope.dimension_count " + std::to_string(h->n_rot) + " must be even and <= head dim " +
                  std::to_string(h->head_dim()));
  }
  return Status();
}

// expert_count / expert_used_count: a mixture of experts when the count is
// above 1 (required when the architecture has experts), else a dense FFN.
Status read_experts(const KeyReader& r, bool required, LlamaHparams* h) {
  using L = LlamaLimits;
  if (!required && !r.has("expert_count")) return Status();
  int64_t n_expert = 0;
  LOOM_RETURN_IF_ERROR(r.get("expert_count", L::kMaxExperts, "experts", &n_expert, -1, required ? 1 : 0));
  if (n_expert <= 1 && !required) return Status();  // a dense FFN with a count of 1
  if (n_expert < 2) return r.fail("expert_count = " + std::to_string(n_expert) + ": a mixture needs at least 2");
  int64_t n_used = 0;
  LOOM_RETURN_IF_ERROR(r.get("expert_used_count", n_expert, "experts (expert_count)", &n_used));
  h->n_expert = n_expert;
  h->n_expert_used = n_used;
  return Status();
}

// The scaling keys every type reads (llama.cpp's names and defaults): the
// original context (YaRN's ramp; which of LongRoPE's factor tensors a
// session uses) and the rotation's magnitude, attn_factor (Phi-3's
// LongRoPE files give it with their factor tensors).
Status read_rope_common(const KeyReader& r, const std::string& arch, LlamaHparams* h, float* attn_factor) {
  LOOM_RETURN_IF_ERROR(r.get("rope.scaling.original_context_length", LlamaLimits::kMaxContext, "tokens",
                             &h->n_ctx_orig, h->n_ctx_train));
  LOOM_RETURN_IF_ERROR(r.get_f("rope.scaling.attn_factor", attn_factor));
  if (!(*attn_factor > 0.0f)) {
    return r.fail(arch + ".rope.scaling.attn_factor = " + std::to_string(*attn_factor) + ": must be > 0");
  }
  return Status();
}

// YaRN's own keys: the ramp's weight and ends; then its per-pair divisors
// and magnitude (rope_yarn.hpp).
Status read_yarn(const KeyReader& r, const std::string& arch, float freq_scale, float attn_factor,
                 LlamaHparams* h) {
  YarnParams p;
  p.freq_scale = freq_scale;
  p.n_ctx_orig = h->n_ctx_orig;
  p.attn_factor = attn_factor;
  LOOM_RETURN_IF_ERROR(r.get_f("rope.scaling.yarn_ext_factor", &p.ext_factor));
  LOOM_RETURN_IF_ERROR(r.get_f("rope.scaling.yarn_beta_fast", &p.beta_fast));
  LOOM_RETURN_IF_ERROR(r.get_f("rope.scaling.yarn_beta_slow", &p.beta_slow));
  for (const auto& [key, v] : {std::pair<const char*, float>{"rope.scaling.yarn_ext_factor", p.ext_factor},
                               {"rope.scaling.yarn_beta_fast", p.beta_fast},
                               {"rope.scaling.yarn_beta_slow", p.beta_slow}}) {
    if (v < 0.0f) return r.fail(arch + "." + key + " = " + std::to_string(v) + ": must be >= 0");
  }
  h->rope_divisors = yarn_theta_divisors(h->n_rot, h->rope_freq_base, p);
  h->rope_mscale = yarn_mscale(p);
  return Status();
}

// rope.freq_base and the scaling keys: type none / linear (factor, or the
// older rope.scale_linear) and yarn run; longrope does not (Phi-3's files
// say nothing and carry LongRoPE's factor tensors: llama_model.cpp).
Status read_rope(const KeyReader& r, const std::string& arch, LlamaHparams* h) {
  LOOM_RETURN_IF_ERROR(r.get_f("rope.freq_base", &h->rope_freq_base));
  if (!(h->rope_freq_base > 0.0f)) {
    return r.fail(arch + ".rope.freq_base = " + std::to_string(h->rope_freq_base) + ": must be > 0");
  }
  std::string type = "linear";  // llama.cpp's reading of a file without the key
  LOOM_RETURN_IF_ERROR(r.get_s("rope.scaling.type", &type));
  const std::string type_key = arch + ".rope.scaling.type";
  if (type == "longrope") {
    return r.not_implemented(type_key + " = " + type + ": not implemented (loom runs none, linear and yarn)");
  }
  if (type != "none" && type != "linear" && type != "yarn") {
    return r.fail(type_key + " = " + type + ": unknown (known: none, linear, yarn, longrope)");
  }
  const char* factor_key = r.has("rope.scaling.factor") ? "rope.scaling.factor" : "rope.scale_linear";
  float factor = 0.0f;  // 0 or absent: no scaling
  LOOM_RETURN_IF_ERROR(r.get_f(factor_key, &factor));
  if (factor < 0.0f) {
    return r.fail(arch + "." + factor_key + " = " + std::to_string(factor) + ": must be >= 0");
  }
  const float freq_scale = (type == "none" || factor == 0.0f) ? 1.0f : 1.0f / factor;
  float attn_factor = 1.0f;
  LOOM_RETURN_IF_ERROR(read_rope_common(r, arch, h, &attn_factor));
  if (type == "yarn") {
    // The op's scale stays 1: the divisors carry YaRN's mix of the two.
    h->rope_freq_scale = 1.0f;
    LOOM_RETURN_IF_ERROR(read_yarn(r, arch, freq_scale, attn_factor, h));
  } else {
    h->rope_freq_scale = freq_scale;
    h->rope_mscale = attn_factor;
  }
  return Status();
}

// M-RoPE's sections (ArchTraits::mrope): required, four counts >= 0 of
// rotated pairs taking the temporal, height, width and extra position,
// contiguous (qwen2vl) or interleaved (qwen3vl: pair k of sector k % sum
// takes h when k % 3 == 1 and k < 3 s1, w when k % 3 == 2 and k < 3 s2, t
// when k % 3 == 0 and k < 3 s0, else the extra one), as ggml assigns them.
// A text token's first three positions are its own and the extra one 0
// (llama.cpp's): pairs on the extra position do not rotate, which their
// divisor (1e30, theta ~ 0) makes so; the rest rotate as neox.
Status read_mrope_sections(const KeyReader& r, const GgufFile& file, const std::string& arch, bool interleaved,
                           LlamaHparams* h) {
  const std::string key = arch + ".rope.dimension_sections";
  if (!file.has(key)) return not_found("[llm.load] " + file.name() + ": missing metadata key " + key);
  StatusOr<std::vector<int64_t>> v = file.get_arr_int(key);
  if (!v.ok()) return r.fail(v.status().message());
  std::string list;
  int64_t sum = 0;
  for (size_t i = 0; i < v->size(); ++i) {
    list += (i ? ", " : "") + std::to_string((*v)[i]);
    if ((*v)[i] < 0 || (*v)[i] > LlamaLimits::kMaxHeadDim) return r.fail(key + " = [" + list + "...]: a count out of range");
    sum += (*v)[i];
  }
  if (v->size() != 4) return r.fail(key + " = [" + list + "]: 4 counts expected");
  if (sum == 0) return r.fail(key + " = [" + list + "]: no pair in any section");
  const int64_t s0 = (*v)[0], s1 = (*v)[1], s2 = (*v)[2];
  auto extra = [&](int64_t k) {
    const int64_t sector = k % sum;
    if (!interleaved) return sector >= s0 + s1 + s2;
    return !((sector % 3 == 1 && sector < 3 * s1) || (sector % 3 == 2 && sector < 3 * s2) ||
             (sector % 3 == 0 && sector < 3 * s0));
  };
  for (int64_t k = 0; k < h->n_rot / 2; ++k) {
    if (!extra(k)) continue;
    if (h->rope_divisors.empty()) h->rope_divisors.assign(static_cast<size_t>(h->n_rot / 2), 1.0f);
    h->rope_divisors[static_cast<size_t>(k)] *= 1e30f;  // (position 0: unrotated)
  }
  return Status();
}

// Granite's multipliers (ArchTraits::granite): embedding_scale,
// residual_scale and attention.scale when present, logit_scale required,
// each > 0; rope.scaling.finetuned = false: no layer rotates. MiniCPM
// (minicpm: defaults): every key optional, the defaults llama.cpp gives
// older MiniCPM files (embedding 12, residual 1.4 / sqrt(n_layer), logit
// scale 256 / n_embd), RoPE in every layer.
Status read_granite(const KeyReader& r, const GgufFile& file, const std::string& arch, bool minicpm, LlamaHparams* h) {
  float logit_scale = 0.0f;
  if (minicpm) {
    h->embd_scale = 12.0f;
    h->residual_scale = 1.4f / std::sqrt(static_cast<float>(h->n_layer));
    logit_scale = 256.0f / static_cast<float>(h->n_embd);
  } else if (!r.has("logit_scale")) {
    return r.missing("logit_scale");
  }
  for (const auto& [key, v] : {std::pair<const char*, float*>{"embedding_scale", &h->embd_scale},
                               {"residual_scale", &h->residual_scale},
                               {"attention.scale", &h->attn_scale},
                               {"logit_scale", &logit_scale}}) {
    if (!r.has(key)) continue;
    LOOM_RETURN_IF_ERROR(r.get_f(key, v));
    if (!(*v > 0.0f)) return r.fail(arch + "." + key + " = " + std::to_string(*v) + ": must be > 0");
  }
  h->logit_factor = 1.0f / logit_scale;  // as llama.cpp scales them
  const std::string finetuned = arch + ".rope.scaling.finetuned";
  if (!minicpm && file.has(finetuned)) {
    StatusOr<bool> rotate = file.get_bool(finetuned);
    if (!rotate.ok()) return r.fail(rotate.status().message());
    if (!*rotate) h->nope_period = 1;
  }
  return Status();
}

}  // namespace

Status read_llama_hparams(const GgufFile& file, const std::string& arch, LlamaHparams* out) {
  using L = LlamaLimits;
  const KeyReader r(file, arch);
  LlamaHparams h;
  LOOM_RETURN_IF_ERROR(r.get("embedding_length", L::kMaxEmbd, "dims", &h.n_embd));
  LOOM_RETURN_IF_ERROR(r.get("block_count", L::kMaxLayers, "layers", &h.n_layer));
  // Every layer has its own tensors: the file bounds the count too.
  const auto n_tensors = static_cast<int64_t>(file.tensors().size());
  if (h.n_layer * L::kTensorsPerLayer > n_tensors) {
    return r.fail(arch + ".block_count = " + std::to_string(h.n_layer) + ": " + std::to_string(h.n_layer) +
                  " layers need " + std::to_string(h.n_layer * L::kTensorsPerLayer) + " tensors, the file has " +
                  std::to_string(n_tensors));
  }
  // Mixture of experts (Mixtral's files say "llama"; qwen3moe requires it).
  const ArchTraits* traits = find_arch(arch);
  LOOM_RETURN_IF_ERROR(read_experts(r, traits != nullptr && traits->experts, &h));
  if (h.n_expert > 0) {
    h.expert_weights_raw = traits != nullptr && traits->expert_weights_raw;
    // Each expert's FFN: expert_feed_forward_length (qwen3moe), else the
    // dense key (Mixtral), which an expert file may then leave out.
    LOOM_RETURN_IF_ERROR(r.get("feed_forward_length", L::kMaxFf, "dims", &h.n_ff, 0));
    LOOM_RETURN_IF_ERROR(r.get("expert_feed_forward_length", L::kMaxFf, "dims", &h.n_ff_exp, h.n_ff));
    if (h.n_ff_exp == 0) return r.fail("missing metadata key " + arch + ".expert_feed_forward_length");
    if (traits != nullptr && traits->shared_expert) {
      LOOM_RETURN_IF_ERROR(r.get("expert_shared_feed_forward_length", L::kMaxFf, "dims", &h.n_ff_shexp, h.n_ff));
      if (h.n_ff_shexp == 0) return r.fail("missing metadata key " + arch + ".expert_shared_feed_forward_length");
    }
  } else {
    LOOM_RETURN_IF_ERROR(r.get("feed_forward_length", L::kMaxFf, "dims", &h.n_ff));
  }
  LOOM_RETURN_IF_ERROR(r.get("context_length", L::kMaxContext, "tokens", &h.n_ctx_train, 2048));
  LOOM_RETURN_IF_ERROR(read_heads(r, arch, &h));
  LOOM_RETURN_IF_ERROR(read_rope(r, arch, &h));
  LOOM_RETURN_IF_ERROR(r.get_f("attention.layer_norm_rms_epsilon", &h.rms_eps));
  if (!(h.rms_eps >= 0.0f)) {
    return r.fail(arch + ".attention.layer_norm_rms_epsilon = " + std::to_string(h.rms_eps) + ": must be >= 0");
  }
  // (exaone4: windows only in a file of swa_layer_count layers, as llama.cpp decides it.)
  const bool windowed = traits != nullptr && traits->swa_period > 0 &&
                        (traits->swa_layer_count == 0 || h.n_layer == traits->swa_layer_count);
  if (windowed) {
    if (!h.rope_divisors.empty()) {
      return r.not_implemented(arch + ".rope.scaling.type = yarn: not implemented for " + arch +
                               " (its local layers' RoPE has a base of its own)");
    }
    LOOM_RETURN_IF_ERROR(r.get("attention.sliding_window", L::kMaxContext, "tokens", &h.n_swa,
                               traits->swa_layer_count > 0 ? traits->swa_default : -1));
    h.swa_period = traits->swa_period;
    if (traits->swa_rope_base > 0.0f) {
      h.rope_freq_base_swa = traits->swa_rope_base;
      h.rope_freq_scale_swa = 1.0f;
    } else {
      h.rope_freq_base_swa = h.rope_freq_base;
      h.rope_freq_scale_swa = h.rope_freq_scale;
    }
  } else if (traits != nullptr && traits->window_refused && r.has("attention.sliding_window")) {
    int64_t window = 0;
    LOOM_RETURN_IF_ERROR(r.get("attention.sliding_window", L::kMaxContext, "tokens", &window, 0, 0));
    if (window > 0) {
      return r.not_implemented(arch + ".attention.sliding_window = " + std::to_string(window) +
                               ": sliding-window layers are not implemented for " + arch);
    }
  } else if (r.has("attention.sliding_window")) {
    LOOM_LOG_DEBUG("llm", "[llm.load] " + file.name() + ": " + arch +
                              ".attention.sliding_window ignored: attention spans the whole context");
  }
  if (traits != nullptr && traits->gemma) {
    h.embd_scale = std::sqrt(static_cast<float>(h.n_embd));
    // Gemma 2 and 3 27B scale scores by their query_pre_attn_scalar, n_embd /
    // n_head, not by the head size (what llama.cpp reads off their 46 and 62
    // layers).
    if (traits->post_norms && h.n_layer == (traits->softcap ? 46 : 62)) {
      h.attn_scale = 1.0f / std::sqrt(static_cast<float>(h.n_embd / h.n_head));
    }
  }
  if (traits != nullptr) h.nope_period = traits->pos_embd ? 1 : traits->nope_period;
  if (traits != nullptr && traits->swa_layer_count > 0 && !windowed) h.nope_period = 0;  // every layer global, rotated
  if (traits != nullptr && (traits->rope_layer_count > 0 || traits->alibi_layer_count > 0) &&
      h.n_layer != traits->rope_layer_count && h.n_layer != traits->alibi_layer_count) {
    return r.not_implemented(arch + ".block_count = " + std::to_string(h.n_layer) + ": " + arch + " runs with " +
                             std::to_string(traits->rope_layer_count) + " layers (RoPE) or " +
                             std::to_string(traits->alibi_layer_count) +
                             " (ALiBi); another size has no positions loom knows of");
  }
  const bool alibi = traits != nullptr && (traits->alibi_max_bias > 0.0f || traits->alibi_key) &&
                     (traits->alibi_layer_count == 0 || h.n_layer == traits->alibi_layer_count);
  if (alibi) {
    h.alibi_max_bias = traits->alibi_max_bias;
    if (traits->alibi_key) {
      if (!r.has("attention.max_alibi_bias")) return r.missing("attention.max_alibi_bias");
      LOOM_RETURN_IF_ERROR(r.get_f("attention.max_alibi_bias", &h.alibi_max_bias));
      if (!(h.alibi_max_bias > 0.0f)) {
        return r.not_implemented(arch + ".attention.max_alibi_bias = " + std::to_string(h.alibi_max_bias) +
                                 ": a model without ALiBi has no positions in loom's " + arch);
      }
    }
    h.nope_period = 1;  // (no RoPE)
  }
  LOOM_RETURN_IF_ERROR(r.get_f("attention.clamp_kqv", &h.clamp_kqv));
  if (!(h.clamp_kqv >= 0.0f)) {
    return r.fail(arch + ".attention.clamp_kqv = " + std::to_string(h.clamp_kqv) + ": must be >= 0");
  }
  if (traits != nullptr && traits->parallel_residual_key) {
    h.parallel_residual = true;  // (llama.cpp's and GPT-NeoX's default)
    const std::string key = arch + ".use_parallel_residual";
    if (file.has(key)) {
      StatusOr<bool> v = file.get_bool(key);
      if (!v.ok()) return r.fail(v.status().message());
      h.parallel_residual = *v;
    }
  }
  if (traits != nullptr && traits->granite) {
    LOOM_RETURN_IF_ERROR(read_granite(r, file, arch, traits->granite_defaults, &h));
  }
  if (traits != nullptr && traits->mrope) {
    LOOM_RETURN_IF_ERROR(read_mrope_sections(r, file, arch, traits->mrope_interleaved, &h));
  }
  if (traits != nullptr && traits->sections_refused && r.has("rope.dimension_sections")) {
    return r.not_implemented(arch +
                             ".rope.dimension_sections: M-RoPE (a vision model's text part) is not "
                             "implemented for " +
                             arch);
  }
  if (traits != nullptr && traits->layer_norm) {
    // LayerNorms read their own key (llama.cpp's default when absent: 1e-5).
    h.rms_eps = 1e-5f;
    LOOM_RETURN_IF_ERROR(r.get_f("attention.layer_norm_epsilon", &h.rms_eps));
    if (!(h.rms_eps >= 0.0f)) {
      return r.fail(arch + ".attention.layer_norm_epsilon = " + std::to_string(h.rms_eps) + ": must be >= 0");
    }
  }
  if (traits != nullptr && traits->logit_multiplier) {
    if (!r.has("logit_scale")) return r.missing("logit_scale");
    LOOM_RETURN_IF_ERROR(r.get_f("logit_scale", &h.logit_factor));
    if (!(h.logit_factor > 0.0f)) {
      return r.fail(arch + ".logit_scale = " + std::to_string(h.logit_factor) + ": must be > 0");
    }
  }
  if (traits != nullptr && traits->softcap) {
    h.attn_softcap = 50.0f;  // llama.cpp's defaults when the keys are absent
    h.final_softcap = 30.0f;
    LOOM_RETURN_IF_ERROR(r.get_f("attn_logit_softcapping", &h.attn_softcap));
    LOOM_RETURN_IF_ERROR(r.get_f("final_logit_softcapping", &h.final_softcap));
    for (const auto& [key, v] : {std::pair<const char*, float>{"attn_logit_softcapping", h.attn_softcap},
                                 {"final_logit_softcapping", h.final_softcap}}) {
      if (!(v > 0.0f)) return r.fail(arch + "." + key + " = " + std::to_string(v) + ": must be > 0");
    }
  }
  *out = h;
  return Status();
}

float LlamaHparams::alibi_slope(int64_t h) const {
  int64_t pow2 = 1;
  while (pow2 * 2 <= n_head) pow2 *= 2;
  const float m0 = std::pow(2.0f, -alibi_max_bias / static_cast<float>(pow2));
  const float m1 = std::pow(2.0f, -alibi_max_bias / 2.0f / static_cast<float>(pow2));
  return h < pow2 ? std::pow(m0, static_cast<float>(h + 1)) : std::pow(m1, static_cast<float>(2 * (h - pow2) + 1));
}

Status read_llama_vocab(const GgufFile& file, LlamaHparams* out) {
  const std::string who = "[llm.load] " + file.name() + ": ";
  const GgufTensorInfo* emb = file.find_tensor("token_embd.weight");
  if (!emb) return not_found(who + "missing tensor 'token_embd.weight'");
  const int64_t n_vocab = emb->ne[1];
  if (n_vocab > LlamaLimits::kMaxVocab) {
    return invalid_argument(who + "tensor 'token_embd.weight' has " + std::to_string(n_vocab) +
                            " rows (the vocabulary): above loom's limit of " +
                            std::to_string(LlamaLimits::kMaxVocab) + " tokens");
  }
  if (const GgufValue* tokens = file.find("tokenizer.ggml.tokens")) {
    const uint64_t n_tok = tokens->type() == GgufType::kArray ? tokens->size() : 0;
    if (n_tok != static_cast<uint64_t>(n_vocab)) {
      return invalid_argument(who + "the tokenizer has " + std::to_string(n_tok) +
                              " tokens (tokenizer.ggml.tokens), tensor 'token_embd.weight' has " +
                              std::to_string(n_vocab) + " rows: vocabulary sizes differ");
    }
  }
  out->n_vocab = n_vocab;
  return Status();
}

}  // namespace loom::llm
