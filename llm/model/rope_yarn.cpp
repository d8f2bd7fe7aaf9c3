#include "llm/model/rope_yarn.hpp"

#include <algorithm>
#include <cmath>

namespace loom::llm {
namespace {

// The pair index whose wavelength turns n_rotations times over the original
// context: n_rot * ln(n_ctx_orig / (n_rotations * 2 pi)) / (2 ln base).
double correction_dim(int64_t n_rot, int64_t n_ctx_orig, double n_rotations, double base) {
  constexpr double kPi = 3.14159265358979323846;
  return static_cast<double>(n_rot) * std::log(static_cast<double>(n_ctx_orig) / (n_rotations * 2.0 * kPi)) /
         (2.0 * std::log(base));
}

}  // namespace

std::vector<float> yarn_theta_divisors(int64_t n_rot, float freq_base, const YarnParams& p) {
  // The ramp runs from the first correction dim (beta_fast, rounded down) to
  // the last (beta_slow, rounded up), both inside [0, n_rot - 1].
  const double low = std::max(0.0, std::floor(correction_dim(n_rot, p.n_ctx_orig, p.beta_fast, freq_base)));
  const double high = std::min(static_cast<double>(n_rot - 1),
                               std::ceil(correction_dim(n_rot, p.n_ctx_orig, p.beta_slow, freq_base)));
  std::vector<float> out(static_cast<size_t>(n_rot / 2));
  for (int64_t k = 0; k < n_rot / 2; ++k) {
    const double y = (static_cast<double>(k) - low) / std::max(0.001, high - low);
    const double ramp = 1.0 - std::min(1.0, std::max(0.0, y));  // 1: the original angle, 0: interpolated
    const double mix = ramp * static_cast<double>(p.ext_factor);
    out[static_cast<size_t>(k)] =
        static_cast<float>(1.0 / (static_cast<double>(p.freq_scale) * (1.0 - mix) + mix));
  }
  return out;
}

float yarn_mscale(const YarnParams& p) {
  if (p.ext_factor == 0.0f) return p.attn_factor;
  return p.attn_factor * (1.0f + 0.1f * std::log(1.0f / p.freq_scale));
}

}  // namespace loom::llm
