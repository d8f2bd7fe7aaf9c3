// The arithmetic over Q4_0 / Q8_0 weights in the split layout
// (plugins/cuda/weight_layout.h: every block's quants, then every block's
// f16 scale), shared by the kernels (gemv_split.cu) and the host test.
//
// The decode GEMV gives each lane whole blocks (lane, lane + 32, ... of a
// row): a block's quants are one 16-byte load (Q4_0) or two (Q8_0), its
// scale one 2-byte load, B's 8-bit block two 16-byte loads, so a warp's
// step reads 32 consecutive blocks of A in 16-byte words. The block's 32
// products are 8 integer dot products of 4 (exact in int32), then one
// float step: d * db * sum.
//
// The other readers (cuBLAS's dequantized A, the exact kernel) rebuild a
// canonical block (split_canonical) and use dequant.cuh's code on it, so
// they compute what they compute over GGUF's blocks, bit for bit.
#pragma once

#include "dequant.cuh"
#include "gemv_lane.cuh"
#include "hd.cuh"

namespace loom::cuda {

// Quant bytes of a split block; 0 for other types.
LOOM_HD int split_quant_bytes(int type) {
  return type == LOOM_TYPE_Q4_0 ? 16 : type == LOOM_TYPE_Q8_0 ? 32 : 0;
}

// 16 bytes at a 16-byte aligned address as four words.
LOOM_HD void ld_words4(const uint8_t* p, uint32_t* w) {
#if defined(__CUDA_ARCH__)
  const uint4 v = *reinterpret_cast<const uint4*>(p);
  w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
#else
  std::memcpy(w, p, 16);
#endif
}

// Block `blk` of a split tensor (quants at q, scales at s): its 32 quants
// as 8 words of int8 in element order (word k: elements 4k .. 4k + 3) and
// its scale.
struct SplitBlock {
  uint32_t w[8];
  float d;
};

template <int T>
LOOM_HD SplitBlock split_load(const uint8_t* q, const uint8_t* s, int64_t blk) {
  SplitBlock b;
  b.d = f16_to_f32(*reinterpret_cast<const uint16_t*>(s + 2 * blk));
  if (T == LOOM_TYPE_Q8_0) {
    ld_words4(q + 32 * blk, b.w);
    ld_words4(q + 32 * blk + 16, b.w + 4);
  } else {
    // Q4_0: byte i holds element i (low nibble) and i + 16 (high), q - 8.
    uint32_t raw[4];
    ld_words4(q + 16 * blk, raw);
    for (int k = 0; k < 4; ++k) {
      b.w[k] = sub_bytes(raw[k] & 0x0F0F0F0Fu, 0x08080808u);
      b.w[4 + k] = sub_bytes((raw[k] >> 4) & 0x0F0F0F0Fu, 0x08080808u);
    }
  }
  return b;
}

// The block against B's 8-bit block xq (32 quants, 16-byte aligned) with
// scale db.
LOOM_HD float split_dot(const SplitBlock& b, const int8_t* xq, float db) {
  uint32_t x[8];
  ld_words4(reinterpret_cast<const uint8_t*>(xq), x);
  ld_words4(reinterpret_cast<const uint8_t*>(xq) + 16, x + 4);
  int32_t sum = 0;
  for (int k = 0; k < 8; ++k) sum = dp4a_hd(b.w[k], x[k], sum);
  return b.d * db * static_cast<float>(sum);
}

// Lane `lane`'s sum over one row (its blocks first .. first + nblk - 1 of
// the tensor) against one column of B's 8-bit blocks (xq: the row's K
// quants, xd: its K / 32 scales), in the kernel's order: blocks lane, lane
// + 32, ...; the 32 lane sums then combine in the halving tree.
template <int T>
LOOM_HD float split_lane_sum(const uint8_t* q, const uint8_t* s, int64_t first, int64_t nblk,
                             const int8_t* xq, const float* xd, int lane) {
  float acc = 0.0f;
  for (int64_t b = lane; b < nblk; b += 32)
    acc += split_dot(split_load<T>(q, s, first + b), xq + 32 * b, xd[b]);
  return acc;
}

// Block `blk` as GGUF stores it (out: the canonical block's bytes, 2-byte
// aligned): d, then the quants.
LOOM_HD void split_canonical(int type, const uint8_t* q, const uint8_t* s, int64_t blk,
                             uint8_t* out) {
  const int qb = split_quant_bytes(type);
  out[0] = s[2 * blk];
  out[1] = s[2 * blk + 1];
  for (int i = 0; i < qb; ++i) out[2 + i] = q[qb * blk + i];
}

// Element e (canonical element order) of a split tensor of `total` blocks:
// dq_q8_0 / dq_q4_0's product on the same quant and scale.
LOOM_HD float split_elem(int type, const uint8_t* data, int64_t total, int64_t e) {
  const int qb = split_quant_bytes(type);
  const int64_t blk = e / 32;
  const int i = static_cast<int>(e % 32);
  const uint8_t* qs = data + qb * blk;
  const float d = f16_to_f32(load_u16(data + total * qb + 2 * blk));
  return type == LOOM_TYPE_Q8_0 ? d * static_cast<float>(static_cast<int8_t>(qs[i]))
                                : d * static_cast<float>(nibble32(qs, i) - 8);
}

// The exact kernel's lane sum (gemv.cuh's gemv_lane_sum over the rebuilt
// blocks): blocks lane, lane + 32, ... of the row against x.
LOOM_HD float split_exact_lane_sum(int type, const uint8_t* data, int64_t total, int64_t first,
                                   int64_t nblk, const float* x, int lane) {
  const int qb = split_quant_bytes(type);
  float acc = 0.0f;
  for (int64_t b = lane; b < nblk; b += 32) {
    alignas(4) uint8_t block[34];
    split_canonical(type, data, data + total * qb, first + b, block);
    acc += block_dot(type, block, x + 32 * b);
  }
  return acc;
}

}  // namespace loom::cuda
