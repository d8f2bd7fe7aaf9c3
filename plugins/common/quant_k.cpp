// Dequantization of the ABI 1.2 weight types, element for element ggml's
// (the order of float operations too, so results match its dequantized
// files bit for bit): the 32-element Q4_1, Q5_0, Q5_1, IQ4_NL and the
// 256-element K-quants Q2_K..Q6_K and IQ4_XS (ABI 1.4).
#include <cstring>

#include "common/fp16.h"
#include "common/quant.h"

namespace loom::common {

const int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

void dequantize_block_q4_1(const loom_block_q4_1_t* b, float* y) {
  const float d = f16_to_f32(b->d), m = f16_to_f32(b->m);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(b->qs[j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(b->qs[j] >> 4) * d + m;
  }
}

void dequantize_block_q5_0(const loom_block_q5_0_t* b, float* y) {
  const float d = f16_to_f32(b->d);
  uint32_t qh;
  std::memcpy(&qh, b->qh, sizeof qh);
  for (int j = 0; j < 16; ++j) {
    const uint8_t h0 = static_cast<uint8_t>(((qh >> j) << 4) & 0x10);
    const uint8_t h1 = static_cast<uint8_t>((qh >> (j + 12)) & 0x10);
    y[j] = static_cast<float>(((b->qs[j] & 0x0F) | h0) - 16) * d;
    y[j + 16] = static_cast<float>(((b->qs[j] >> 4) | h1) - 16) * d;
  }
}

void dequantize_block_q5_1(const loom_block_q5_1_t* b, float* y) {
  const float d = f16_to_f32(b->d), m = f16_to_f32(b->m);
  uint32_t qh;
  std::memcpy(&qh, b->qh, sizeof qh);
  for (int j = 0; j < 16; ++j) {
    const uint8_t h0 = static_cast<uint8_t>(((qh >> j) << 4) & 0x10);
    const uint8_t h1 = static_cast<uint8_t>((qh >> (j + 12)) & 0x10);
    y[j] = static_cast<float>((b->qs[j] & 0x0F) | h0) * d + m;
    y[j + 16] = static_cast<float>((b->qs[j] >> 4) | h1) * d + m;
  }
}

void dequantize_block_iq4_nl(const loom_block_iq4_nl_t* b, float* y) {
  const float d = f16_to_f32(b->d);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4nlValues[b->qs[j] & 0x0F]);
    y[j + 16] = d * static_cast<float>(kIq4nlValues[b->qs[j] >> 4]);
  }
}

int iq4_xs_scale(const loom_block_iq4_xs_t* b, int s) {
  return ((b->scales_l[s / 2] >> (4 * (s % 2))) & 0x0F) | (((b->scales_h >> (2 * s)) & 3) << 4);
}

// ggml's order: dl = d * (ls - 32) first, then dl * level.
void dequantize_block_iq4_xs(const loom_block_iq4_xs_t* b, float* y) {
  const float d = f16_to_f32(b->d);
  for (int s = 0; s < LOOM_QK_K / 32; ++s) {
    const float dl = d * static_cast<float>(iq4_xs_scale(b, s) - 32);
    const uint8_t* qs = b->qs + 16 * s;
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0x0F]);
      y[j + 16] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
    }
    y += 32;
  }
}

void k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

namespace {

// Q4_K / Q5_K: the float scale and min of sub-blocks is and is + 1.
void k_pair(float d, float min, int is, const uint8_t* packed, float* d1, float* m1, float* d2, float* m2) {
  uint8_t sc, m;
  k_scale_min(is + 0, packed, &sc, &m);
  *d1 = d * static_cast<float>(sc);
  *m1 = min * static_cast<float>(m);
  k_scale_min(is + 1, packed, &sc, &m);
  *d2 = d * static_cast<float>(sc);
  *m2 = min * static_cast<float>(m);
}

}  // namespace

void dequantize_block_q2_k(const loom_block_q2_k_t* b, float* y) {
  const float d = f16_to_f32(b->d), min = f16_to_f32(b->dmin);
  const uint8_t* q = b->qs;
  int is = 0;
  for (int n = 0; n < LOOM_QK_K; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      uint8_t sc = b->scales[is++];
      float dl = d * static_cast<float>(sc & 0x0F), ml = min * static_cast<float>(sc >> 4);
      for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[l] >> shift) & 3) - ml;
      sc = b->scales[is++];
      dl = d * static_cast<float>(sc & 0x0F);
      ml = min * static_cast<float>(sc >> 4);
      for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[l + 16] >> shift) & 3) - ml;
      shift += 2;
    }
    q += 32;
  }
}

void q3_k_scales(const uint8_t packed[12], int8_t out[16]) {
  constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  uint32_t aux[4];
  std::memcpy(aux, packed, 12);
  const uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  std::memcpy(out, aux, 16);
  for (int i = 0; i < 16; ++i) out[i] = static_cast<int8_t>(out[i] - 32);
}

void dequantize_block_q3_k(const loom_block_q3_k_t* b, float* y) {
  const float d_all = f16_to_f32(b->d);
  int8_t scales[16];
  q3_k_scales(b->scales, scales);
  const uint8_t* q = b->qs;
  const uint8_t* hm = b->hmask;
  uint8_t m = 1;
  int is = 0;
  for (int n = 0; n < LOOM_QK_K; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      float dl = d_all * static_cast<float>(scales[is++]);
      for (int l = 0; l < 16; ++l) {
        *y++ = dl * static_cast<float>(static_cast<int8_t>((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
      }
      dl = d_all * static_cast<float>(scales[is++]);
      for (int l = 0; l < 16; ++l) {
        *y++ = dl * static_cast<float>(static_cast<int8_t>((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
      }
      shift += 2;
      m = static_cast<uint8_t>(m << 1);
    }
    q += 32;
  }
}

void dequantize_block_q4_k(const loom_block_q4_k_t* b, float* y) {
  const float d = f16_to_f32(b->d), min = f16_to_f32(b->dmin);
  const uint8_t* q = b->qs;
  int is = 0;
  for (int j = 0; j < LOOM_QK_K; j += 64) {
    float d1, m1, d2, m2;
    k_pair(d, min, is, b->scales, &d1, &m1, &d2, &m2);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    q += 32;
    is += 2;
  }
}

void dequantize_block_q5_k(const loom_block_q5_k_t* b, float* y) {
  const float d = f16_to_f32(b->d), min = f16_to_f32(b->dmin);
  const uint8_t* ql = b->qs;
  const uint8_t* qh = b->qh;
  int is = 0;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0; j < LOOM_QK_K; j += 64) {
    float d1, m1, d2, m2;
    k_pair(d, min, is, b->scales, &d1, &m1, &d2, &m2);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0x0F) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    ql += 32;
    is += 2;
    u1 = static_cast<uint8_t>(u1 << 2);
    u2 = static_cast<uint8_t>(u2 << 2);
  }
}

void dequantize_block_q6_k(const loom_block_q6_k_t* b, float* y) {
  const float d = f16_to_f32(b->d);
  const uint8_t* ql = b->ql;
  const uint8_t* qh = b->qh;
  const int8_t* sc = b->scales;
  for (int n = 0; n < LOOM_QK_K; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

}  // namespace loom::common
