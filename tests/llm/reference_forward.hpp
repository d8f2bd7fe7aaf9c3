// Test helper: a plain scalar forward pass of a tiny_arch.hpp model in
// double precision, written from the architectures' definitions and not
// from loom's graph code: token embedding, RMS norm, Q/K/V projections with
// optional biases, optional per-head RMS norms of Q and K, RoPE (normal or
// neox pairs, partial rotation, frequency factors, freq_scale), grouped-query
// causal attention, SwiGLU feed-forward, final norm and output head (the
// embedding when tied); gemma3's embedding scale, post-attention and
// post-FFN norms, GELU-gated FFN, and sliding window with its own RoPE base
// on the local layers; gemma2's soft-capped scores and logits; a mixture of experts' routing and experts;
// smollm3's unrotated (NoPE) layers; granite's embedding, residual, score and logit multipliers; olmo2's
// blocks without input norms and Q/K norms over the whole projection; olmo's weightless norms and clamped Q/K/V;
// ReLU^2 FFNs; the GPT family's LayerNorm biases, ungated
// GELU FFN with biases, learned positions, output bias and parallel layers; bloom's normed embedding; ALiBi
// (bloom, mpt). Every position of a sequence is computed
// from scratch: logits(tokens)[p] are the logits after tokens [0, p].
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tiny_arch.hpp"

namespace loom::test {

class ReferenceForward {
 public:
  explicit ReferenceForward(const TinyArchModel& m)
      : m_(m), s_(m.spec), ones_(static_cast<size_t>(m.spec.n_embd), 1.0f) {}

  // Applied to each position's K and V (all kv heads, after RoPE) before
  // they are attended to: a cache's rounding (e.g. the 8-bit cache's).
  std::function<void(std::vector<double>*)> kv_round;

  // n_vocab logits for each position of `tokens`, position-major.
  std::vector<std::vector<double>> logits(const std::vector<int32_t>& tokens) const {
    const size_t n = tokens.size();
    std::vector<std::vector<double>> x(n);
    for (size_t p = 0; p < n; ++p) {
      x[p] = row(w("token_embd.weight"), s_.n_embd, tokens[p]);
      if (s_.gemma) {
        for (double& v : x[p]) v *= std::sqrt(static_cast<double>(s_.n_embd));
      }
      if (s_.embedding_scale > 0.0f) {
        for (double& v : x[p]) v *= s_.embedding_scale;
      }
      if (s_.pos_embd) x[p] = add(x[p], row(w("position_embd.weight"), s_.n_embd, static_cast<int64_t>(p)), 1.0);
      if (s_.embd_norm) x[p] = norm(x[p], w("token_embd_norm.weight"), 0, m_.find("token_embd_norm.bias"));
    }
    for (int64_t il = 0; il < s_.n_layer; ++il) layer(il, &x);
    const std::vector<float>& out = m_.find("output.weight") ? w("output.weight") : w("token_embd.weight");
    std::vector<std::vector<double>> result(n);
    for (size_t p = 0; p < n; ++p) {
      result[p] = matvec(out, s_.n_vocab, norm(x[p], w("output_norm.weight"), 0, m_.find("output_norm.bias")));
      add_to(&result[p], m_.find("output.bias"));
      if (s_.logit_scale > 0.0f) {
        for (double& v : result[p]) v = s_.logit_scale_multiplies ? v * s_.logit_scale : v / s_.logit_scale;
      }
      if (s_.final_softcap > 0.0f) {
        for (double& v : result[p]) v = s_.final_softcap * std::tanh(v / s_.final_softcap);
      }
    }
    return result;
  }

 private:
  // A weightless norm's (olmo) weights are ones.
  const std::vector<float>& w(const std::string& name) const {
    const std::vector<float>* t = m_.find(name);
    return t == nullptr && s_.weightless_norms && name.find("norm.weight") != std::string::npos ? ones_ : *t;
  }
  bool has(const std::string& name) const { return m_.find(name) != nullptr; }

  static std::vector<double> row(const std::vector<float>& t, int64_t width, int64_t r) {
    return std::vector<double>(t.begin() + r * width, t.begin() + (r + 1) * width);
  }
  // y[m] = sum_k W[m][k] x[k]; W stored as `rows` rows of x.size() values.
  static std::vector<double> matvec(const std::vector<float>& wt, int64_t rows, const std::vector<double>& x) {
    const auto k = static_cast<int64_t>(x.size());
    std::vector<double> y(static_cast<size_t>(rows), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < k; ++i) y[r] += static_cast<double>(wt[r * k + i]) * x[i];
    }
    return y;
  }
  // x / sqrt(mean(x^2) + eps) * g; a LayerNorm (command-r): (x - mean) /
  // sqrt(var + eps) * g (+ its bias b). g from offset off (a head's weights in a per-head norm).
  std::vector<double> norm(const std::vector<double>& x, const std::vector<float>& g, size_t off = 0,
                           const std::vector<float>* b = nullptr) const {
    const auto n = static_cast<double>(x.size());
    double mean = 0.0;
    if (s_.layer_norm) {
      for (double v : x) mean += v;
      mean /= n;
    }
    double ss = 0.0;
    for (double v : x) ss += (v - mean) * (v - mean);
    const double inv = 1.0 / std::sqrt(ss / n + s_.eps);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) * inv * g[off + i] + (b ? (*b)[i] : 0.0);
    return y;
  }
  // x + f * y
  static std::vector<double> add(const std::vector<double>& x, const std::vector<double>& y, double f) {
    std::vector<double> r(x.size());
    for (size_t i = 0; i < x.size(); ++i) r[i] = x[i] + f * y[i];
    return r;
  }
  static void add_to(std::vector<double>* y, const std::vector<float>* b) {
    if (b) {
      for (size_t i = 0; i < y->size(); ++i) (*y)[i] += (*b)[i];
    }
  }

  // Rotates the first rot() dims of head [off, off + hd) of v for position p
  // (a sliding-window layer: base 10000, no scaling).
  void rope(std::vector<double>* v, int64_t off, int64_t p, bool swa) const {
    const int64_t rot = s_.rot();
    const int64_t half = rot / 2;
    // rope_freqs, else LongRoPE's long factors past the original context, its
    // short ones within it.
    const bool long_ctx = s_.n_ctx > (s_.yarn_orig_ctx > 0 ? s_.yarn_orig_ctx : s_.n_ctx);
    const std::vector<float>* ff = m_.find("rope_freqs.weight");
    if (!ff) ff = m_.find(long_ctx ? "rope_factors_long.weight" : "rope_factors_short.weight");
    const double attn = s_.rope_attn_factor > 0.0f ? s_.rope_attn_factor : 1.0;
    const bool own = swa && s_.swa_rope_base > 0.0f;  // gemma3's local base; gemma2's local layers share the global RoPE
    const double base = own ? static_cast<double>(s_.swa_rope_base) : static_cast<double>(s_.freq_base);
    const double scale = own ? 1.0 : s_.freq_scale();
    const bool yarn = !own && s_.scaling_type == "yarn";
    for (int64_t i = 0; i < half; ++i) {
      if (s_.mrope_extra_pair(i)) continue;  // (a text token's extra M-RoPE position is 0)
      const double extrap = static_cast<double>(p) * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(rot)) /
                            (ff ? static_cast<double>((*ff)[i]) : 1.0);
      double theta = extrap * scale;
      double mscale = attn;  // every layer's rotation, as llama.cpp applies attn_factor
      if (yarn) yarn_angle(i, extrap, base, &theta, &mscale);
      const int64_t a = off + (s_.neox ? i : 2 * i);
      const int64_t b = off + (s_.neox ? i + half : 2 * i + 1);
      const double x0 = (*v)[a], x1 = (*v)[b];
      (*v)[a] = mscale * (x0 * std::cos(theta) - x1 * std::sin(theta));
      (*v)[b] = mscale * (x0 * std::sin(theta) + x1 * std::cos(theta));
    }
  }
  // YaRN (the paper's and Hugging Face's definition): pair i's angle mixes
  // the interpolated angle (freq_scale times the original) with the original
  // by a ramp that is 1 up to the pair whose wavelength turns beta_fast
  // times over the original context and 0 from the one turning beta_slow
  // times; the rotation's magnitude (attn_factor) grows by 1 + 0.1 ln(1 /
  // freq_scale).
  void yarn_angle(int64_t i, double extrap, double base, double* theta, double* mscale) const {
    const double rot = static_cast<double>(s_.rot());
    const double orig = static_cast<double>(s_.yarn_orig_ctx > 0 ? s_.yarn_orig_ctx : s_.n_ctx);
    const double beta_fast = s_.yarn_beta_fast > 0.0f ? s_.yarn_beta_fast : 32.0;
    const double beta_slow = s_.yarn_beta_slow > 0.0f ? s_.yarn_beta_slow : 1.0;
    auto dim_of = [&](double turns) { return rot * std::log(orig / (turns * 2.0 * M_PI)) / (2.0 * std::log(base)); };
    const double low = std::max(0.0, std::floor(dim_of(beta_fast)));
    const double high = std::min(rot - 1.0, std::ceil(dim_of(beta_slow)));
    const double ramp = 1.0 - std::clamp((static_cast<double>(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
    const double fs = s_.freq_scale();
    *theta = extrap * fs * (1.0 - ramp) + extrap * ramp;
    *mscale *= 1.0 + 0.1 * std::log(1.0 / fs);
  }

  // Per-head RMS norm (qwen3), then RoPE (unless the layer is NoPE), of every head of v.
  void heads(std::vector<double>* v, int64_t n_heads, const std::string& norm_name, int64_t p, bool swa,
             bool rotate) const {
    const int64_t hd = s_.hd();
    const bool whole = has(norm_name) && s_.qk_norm_whole;  // olmo2: the whole projection's row
    if (whole) *v = norm(*v, w(norm_name));
    for (int64_t h = 0; h < n_heads; ++h) {
      if (has(norm_name) && !whole) {
        std::vector<double> one(v->begin() + h * hd, v->begin() + (h + 1) * hd);
        // A weight per head ([hd, n_heads]: command-r's), else one for all.
        const bool per_head = w(norm_name).size() == static_cast<size_t>(hd * n_heads) && n_heads > 1;
        one = norm(one, w(norm_name), per_head ? static_cast<size_t>(h * hd) : 0);
        std::copy(one.begin(), one.end(), v->begin() + h * hd);
      }
      if (rotate) rope(v, h * hd, p, swa);
    }
  }

  // The dense FFN: act(gate x) * (up x), then down; without a gate (the
  // GPT family) act(up x); biases after each product where present.
  std::vector<double> ffn(const std::string& pre, const std::vector<double>& xn) const {
    std::vector<double> up = matvec(w(pre + "ffn_up.weight"), s_.n_ff, xn);
    add_to(&up, m_.find(pre + "ffn_up.bias"));
    std::vector<double> h;
    if (has(pre + "ffn_gate.weight")) {
      std::vector<double> gate = matvec(w(pre + "ffn_gate.weight"), s_.n_ff, xn);
      add_to(&gate, m_.find(pre + "ffn_gate.bias"));
      h = gated(gate, up);
    } else {
      h = gated(up, std::vector<double>(up.size(), 1.0));
    }
    std::vector<double> down = matvec(w(pre + "ffn_down.weight"), s_.n_embd, h);
    add_to(&down, m_.find(pre + "ffn_down.bias"));
    return down;
  }
  std::vector<double> gated(const std::vector<double>& gate, const std::vector<double>& up) const {
    std::vector<double> act(gate.size());
    for (size_t i = 0; i < gate.size(); ++i) {
      const double g = gate[i];
      // gemma: GELU, tanh approximation; else SiLU.
      const double a = s_.relu_sqr ? std::max(0.0, g) * std::max(0.0, g)
                       : s_.gemma || s_.gelu
                           ? 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)))
                           : g / (1.0 + std::exp(-g));
      act[i] = a * up[i];
    }
    return act;
  }
  // A mixture of experts: softmax over the router's logits, the
  // n_expert_used most probable experts (ties: the lower index), their
  // probabilities renormalised (unless raw), each expert's SiLU-gated FFN
  // weighted; plus the shared expert times the sigmoid of its gate's logit.
  std::vector<double> experts(const std::string& pre, const std::vector<double>& xn) const {
    const int64_t ne = s_.n_expert, fe = s_.ff_exp(), d = s_.n_embd;
    std::vector<double> prob = matvec(w(pre + "ffn_gate_inp.weight"), ne, xn);
    const double mx = *std::max_element(prob.begin(), prob.end());
    double z = 0.0;
    for (double& v : prob) z += (v = std::exp(v - mx));
    for (double& v : prob) v /= z;
    std::vector<int64_t> order(static_cast<size_t>(ne));
    for (int64_t i = 0; i < ne; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return prob[a] > prob[b]; });
    double chosen = 0.0;
    for (int64_t j = 0; j < s_.n_expert_used; ++j) chosen += prob[order[j]];
    if (s_.expert_weights_raw) chosen = 1.0;
    std::vector<double> out(static_cast<size_t>(d), 0.0);
    auto slice = [&](const std::string& name, int64_t e, int64_t n) {
      const std::vector<float>& all = w(pre + name);
      return std::vector<float>(all.begin() + e * n, all.begin() + (e + 1) * n);
    };
    for (int64_t j = 0; j < s_.n_expert_used; ++j) {
      const int64_t e = order[j];
      const std::vector<double> gate = matvec(slice("ffn_gate_exps.weight", e, fe * d), fe, xn);
      const std::vector<double> up = matvec(slice("ffn_up_exps.weight", e, fe * d), fe, xn);
      const std::vector<double> y = matvec(slice("ffn_down_exps.weight", e, d * fe), d, gated(gate, up));
      for (int64_t i = 0; i < d; ++i) out[i] += prob[e] / chosen * y[i];
    }
    if (has(pre + "ffn_gate_inp_shexp.weight")) {
      const int64_t fs = s_.shared_ffn;
      const double z = matvec(w(pre + "ffn_gate_inp_shexp.weight"), 1, xn)[0];
      const std::vector<double> gate = matvec(w(pre + "ffn_gate_shexp.weight"), fs, xn);
      const std::vector<double> up = matvec(w(pre + "ffn_up_shexp.weight"), fs, xn);
      const std::vector<double> y = matvec(w(pre + "ffn_down_shexp.weight"), d, gated(gate, up));
      for (int64_t i = 0; i < d; ++i) out[i] += y[i] / (1.0 + std::exp(-z));
    }
    return out;
  }

  void layer(int64_t il, std::vector<std::vector<double>>* xs) const {
    const std::string pre = "blk." + std::to_string(il) + ".";
    const int64_t hd = s_.hd(), nh = s_.n_head, nkv = s_.n_head_kv;
    const size_t n = xs->size();
    const bool swa = s_.is_swa(il);
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (size_t p = 0; p < n; ++p) {
      // (falcon 40B: the attention reads its own norm, attn_norm_2.)
      const std::string an = has(pre + "attn_norm_2.weight") ? pre + "attn_norm_2" : pre + "attn_norm";
      const std::vector<double> xn =
          s_.pre_norms ? norm((*xs)[p], w(an + ".weight"), 0, m_.find(an + ".bias")) : (*xs)[p];
      q[p] = matvec(w(pre + "attn_q.weight"), nh * hd, xn);
      k[p] = matvec(w(pre + "attn_k.weight"), nkv * hd, xn);
      v[p] = matvec(w(pre + "attn_v.weight"), nkv * hd, xn);
      add_to(&q[p], m_.find(pre + "attn_q.bias"));
      add_to(&k[p], m_.find(pre + "attn_k.bias"));
      add_to(&v[p], m_.find(pre + "attn_v.bias"));
      if (s_.clamp_kqv > 0.0f) {
        for (std::vector<double>* t : {&q[p], &k[p], &v[p]}) {
          for (double& x : *t) x = std::clamp(x, -static_cast<double>(s_.clamp_kqv), static_cast<double>(s_.clamp_kqv));
        }
      }
      heads(&q[p], nh, pre + "attn_q_norm.weight", static_cast<int64_t>(p), swa, s_.rotates(il));
      heads(&k[p], nkv, pre + "attn_k_norm.weight", static_cast<int64_t>(p), swa, s_.rotates(il));
      if (kv_round) {
        kv_round(&k[p]);
        kv_round(&v[p]);
      }
    }
    for (size_t p = 0; p < n; ++p) {
      // Causal grouped-query attention: query head h reads kv head h / (nh / nkv).
      std::vector<double> att(static_cast<size_t>(nh * hd), 0.0);
      for (int64_t h = 0; h < nh; ++h) {
        const int64_t g = h / (nh / nkv);
        // Keys j0..p: every earlier one, or the last sliding_window (a local layer).
        const size_t j0 = swa && p + 1 > static_cast<size_t>(s_.sliding_window) ? p + 1 - s_.sliding_window : 0;
        std::vector<double> score(p + 1, -1e300);
        double mx = -1e300;
        for (size_t j = j0; j <= p; ++j) {
          double d = 0.0;
          for (int64_t i = 0; i < hd; ++i) d += q[p][h * hd + i] * k[j][g * hd + i];
          score[j] = d * (s_.attention_scale > 0.0f ? static_cast<double>(s_.attention_scale)
                                                     : 1.0 / std::sqrt(static_cast<double>(hd)));
          if (s_.attn_softcap > 0.0f) score[j] = s_.attn_softcap * std::tanh(score[j] / s_.attn_softcap);
          // ALiBi: the key's distance behind the query, weighed by the head's slope.
          if (s_.alibi_max_bias > 0.0f) score[j] -= s_.alibi_slope(h) * static_cast<double>(p - j);
          mx = std::max(mx, score[j]);
        }
        double sum = 0.0;
        for (size_t j = j0; j <= p; ++j) sum += (score[j] = std::exp(score[j] - mx));
        for (size_t j = j0; j <= p; ++j) {
          for (int64_t i = 0; i < hd; ++i) att[h * hd + i] += score[j] / sum * v[j][g * hd + i];
        }
      }
      std::vector<double> o = matvec(w(pre + "attn_output.weight"), s_.n_embd, att);
      add_to(&o, m_.find(pre + "attn_output.bias"));
      if (has(pre + "post_attention_norm.weight")) o = norm(o, w(pre + "post_attention_norm.weight"));
      const double rs = s_.residual_scale > 0.0f ? s_.residual_scale : 1.0;  // granite
      // Parallel blocks (command-r, phi2): the FFN reads the attention's
      // normed input; gptneox's parallel layers their own norm of the
      // layer's input.
      const std::vector<float>* ab = m_.find(pre + "attn_norm.bias");
      const std::vector<float>* fb = m_.find(pre + "ffn_norm.bias");
      const std::vector<double> xn = s_.parallel_blocks     ? norm((*xs)[p], w(pre + "attn_norm.weight"), 0, ab)
                                     : s_.parallel_residual ? norm((*xs)[p], w(pre + "ffn_norm.weight"), 0, fb)
                                     : s_.pre_norms ? norm(add(xs->at(p), o, rs), w(pre + "ffn_norm.weight"), 0, fb)
                                                    : add(xs->at(p), o, rs);
      for (int64_t i = 0; i < s_.n_embd; ++i) (*xs)[p][i] += rs * o[i];
      std::vector<double> down = s_.n_expert > 0 ? experts(pre, xn) : ffn(pre, xn);
      if (has(pre + "post_ffw_norm.weight")) down = norm(down, w(pre + "post_ffw_norm.weight"));
      for (int64_t i = 0; i < s_.n_embd; ++i) (*xs)[p][i] += rs * down[i];
    }
  }

  const TinyArchModel& m_;
  const ArchSpec& s_;
  const std::vector<float> ones_;
};

}  // namespace loom::test
