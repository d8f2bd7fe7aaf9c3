// B (the activations of a MUL_MAT with quantized A) rounded to 8-bit
// blocks once per node, the rule the conformance suite accepts for a
// quantized A (conformance/matmul_ref.hpp, the cpu plugin's ActBlock):
// per block of 32 elements (256 for the K-quants, one per super-block),
// d = max|x| / 127, q = round-to-nearest-even(x * (1 / d)) (0 when d = 0),
// d NaN when the block holds a NaN. d stays f32 (not f16: the suite's
// reference keeps it exact).
//
// Layout in scratch, per column of B (n, i2, i3 flattened as n + N * (i2 +
// b2 * i3)): K int8 quants at qs + col * K, then K / block f32 scales at
// d + col * (K / block).
#pragma once

#include "hd.cuh"

namespace loom::cuda {

// Elements per activation block for A of `type`: 256 for the K-quants and
// IQ4_XS (23), one per super-block.
LOOM_HD int act_block_elems(int type) { return (type >= 10 && type <= 14) || type == 23 ? 256 : 32; }

// d of a block from its largest magnitude (NaN when `nan`).
LOOM_HD float act_scale(float amax, bool nan) { return nan ? NAN : amax / 127.0f; }

// One element's quant; id = 1 / d (0 when d = 0).
LOOM_HD int8_t act_quant(float x, float id) {
#if defined(__CUDA_ARCH__)
  int q = __float2int_rn(x * id);
#else
  // As the GPU's conversion: NaN gives 0, out of range saturates (a cast
  // of NaN or of a value past int's range is undefined in C++).
  const float r = std::nearbyint(x * id);
  int q = r != r ? 0 : (r < -128.0f ? -128 : (r > 127.0f ? 127 : static_cast<int>(r)));
#endif
  q = q < -128 ? -128 : (q > 127 ? 127 : q);
  return static_cast<int8_t>(q);
}

LOOM_HD float act_inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// The whole block sequentially (the host's replay; the kernel computes the
// same max over a warp: max is exact in any order).
LOOM_HD float quantize_act_block(const float* x, int n, int8_t* q) {
  float amax = 0.0f;
  bool nan = false;
  for (int i = 0; i < n; ++i) {
    amax = fmaxf(amax, fabsf(x[i]));
    nan = nan || x[i] != x[i];
  }
  // id from the finite max: a NaN block's quants are never used.
  const float id = act_inverse(amax / 127.0f);
  const float d = act_scale(amax, nan);
  for (int i = 0; i < n; ++i) q[i] = act_quant(x[i], id);
  return d;
}

}  // namespace loom::cuda
