// MUL_MAT of the ABI 1.2 weight types on integer dots (LOOM_CPU_INT8_DOT
// builds): the K-quants Q2_K..Q6_K against B quantized to ActBlockK (256
// activations, one f32 scale, sums per 16), and Q4_1 / Q5_0 / Q5_1 /
// IQ4_NL against the int8 path's 32-element ActBlock. A's blocks are read in
// place (GGUF's bytes, no widened or repacked copy); each pair of 32
// elements is an exact 8-bit integer dot (matmul_kquant_dot.cpp,
// matmul_q32.cpp), B is quantized once per node (matmul_kquant.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ops/matmul.h"

namespace loom::cpu {

// 256 activations quantized to 8 bits for the K-quants (one per A
// super-block): x[i] ~= d * qs[i], d = max|x| / 127 over the 256,
// qs[i] = round-to-nearest-even(x[i] * (1 / d)) (0 when d = 0, d NaN when a
// NaN is among them), bsums[j] = sum of qs[16 j .. 16 j + 15] (what the
// min / offset terms of the K-quants multiply).
struct ActBlockK {
  float d;
  int16_t bsums[16];
  int8_t qs[256];
};

// Whether `type` is one of the types this path runs (Q4_1, Q5_0, Q5_1,
// IQ4_NL, Q2_K..Q6_K), and whether it is a 256-element K-quant.
bool kquant_type(int32_t type);
bool kquant_superblock(int32_t type);

// Whether the node runs on this path: A of a kquant_type, B rows dense
// f32, a LOOM_CPU_INT8_DOT build, LOOM_CPU_REFERENCE unset (matmul.cpp).
bool kquant_path(const loom_tensor_t* dst);
// Runs such a node (B quantized first).
void run_mul_mat_kquant(const loom_tensor_t* dst, Exec& ex);

// B's rows [r0, r1) (flat over n, i2, i3) into act: ActBlockK
// (matmul_kquant.cpp) and the int8 path's ActBlock (matmul_int8.cpp).
void quantize_act_rows_k(const loom_tensor_t* b, int64_t r0, int64_t r1, ActBlockK* act);
void quantize_act_rows(const loom_tensor_t* b, int64_t r0, int64_t r1, ActBlock* act);

// Thread ith's share of the node, B already quantized into act ([rows of
// B][blocks per row]): K-quant A (matmul_kquant_dot.cpp), 32-element A
// (matmul_q32.cpp).
void mul_mat_kquant_k(const loom_tensor_t* dst, const ActBlockK* act, int ith, int nth);
void mul_mat_kquant_32(const loom_tensor_t* dst, const ActBlock* act, int ith, int nth);

// Elements of B per activation block.
constexpr int64_t act_elems(const ActBlock*) { return 32; }
constexpr int64_t act_elems(const ActBlockK*) { return 256; }

// Columns of B per dot call: each unpacked chunk of A serves this many.
constexpr int kQuantCols = 4;

// The share of thread ith: its contiguous rows of A (per batch), each row
// against every column of B in tiles of up to kQuantCols:
// dot(row, cols, nc, out) with row = A's row (block pointer), cols = the nc
// columns' Act blocks, out[nc] the results. Each result is computed by one
// thread in a fixed order (independent of the thread count).
template <typename Block, typename Act, typename Dot>
void quant_rows_times_b(const loom_tensor_t* dst, const Act* act, int ith, int nth, Dot dot) {
  const loom_tensor_t* a = dst->src[0];
  const MatDims d(dst);
  const int64_t nblk = d.k / act_elems(act);
  for_share(d, d.m, ith, nth, [&](int64_t m, int64_t i2, int64_t i3) {
    const auto* row = reinterpret_cast<const Block*>(row_ptr(a, m, i2 / d.r2, i3 / d.r3));
    const Act* batch = act + ((i3 * d.b2 + i2) * d.n) * nblk;
    for (int64_t n = 0; n < d.n; n += kQuantCols) {
      const int nc = static_cast<int>(std::min<int64_t>(kQuantCols, d.n - n));
      const Act* cols[kQuantCols];
      for (int c = 0; c < nc; ++c) cols[c] = batch + (n + c) * nblk;
      float out[kQuantCols];
      dot(row, cols, nc, out);
      for (int c = 0; c < nc; ++c) std::memcpy(elem_ptr(dst, m, n + c, i2, i3), &out[c], 4);
    }
  });
}

}  // namespace loom::cpu
