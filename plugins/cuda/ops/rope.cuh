// ROPE: which pair of a head a rotation index touches and the angle, as
// plugin.h defines them (normal: (2i, 2i+1); neox: (i, i + n_dims/2);
// theta_i = pos * freq_scale * freq_base^(-2i/n_dims) / factor_i). The
// angle and the rotation are evaluated in double, as the CPU plugin does,
// so long positions keep their precision.
#pragma once

#include "hd.cuh"

namespace loom::cuda {

struct RopePair {
  int64_t j0, j1;
};
LOOM_HD RopePair rope_pair(int mode, int64_t i, int64_t n_dims) {
  if (mode == 2) return {i, i + n_dims / 2};
  return {2 * i, 2 * i + 1};
}

LOOM_HD double rope_theta(int32_t pos, int64_t i, int64_t n_dims, float freq_base, float freq_scale,
                          float factor) {
  return static_cast<double>(pos) * freq_scale *
         pow(static_cast<double>(freq_base), -2.0 * static_cast<double>(i) / static_cast<double>(n_dims)) /
         static_cast<double>(factor);
}

// Rotate (x0, x1) by theta in place.
LOOM_HD void rope_rotate(double theta, float* x0, float* x1) {
  const double c = cos(theta), s = sin(theta);
  const double a = *x0, b = *x1;
  *x0 = static_cast<float>(a * c - b * s);
  *x1 = static_cast<float>(a * s + b * c);
}

}  // namespace loom::cuda
