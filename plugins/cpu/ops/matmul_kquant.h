// MUL_MAT of the ABI 1.2 / 1.4 weight types on integer dots (LOOM_CPU_INT8_DOT
// builds): the K-quants Q2_K..Q6_K and IQ4_XS against B quantized to ActBlockK (256
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
// IQ4_NL, Q2_K..Q6_K, IQ4_XS), and whether it is a 256-element one (the
// K-quants and IQ4_XS: B as ActBlockK).
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
// Slot ith of nth's part of the node when A is a repacked (cpu_weights)
// Q4_K / Q5_K / Q6_K matrix (matmul_kquant_x8.cpp): groups of 8 rows claimed
// with ex.claim_chunk().
void mul_mat_kquant_x8(const loom_tensor_t* dst, const ActBlockK* act, Exec& ex, int ith, int nth);

// Elements of B per activation block.
constexpr int64_t act_elems(const ActBlock*) { return 32; }
constexpr int64_t act_elems(const ActBlockK*) { return 256; }

// Up to this many rows of B (decode), every slot quantizes all of B into
// its own scratch (no slot depends on another); more rows are quantized by
// one parallel run and the dots follow in a second (slots may run one after
// another on one thread, so they never wait for each other: no barrier).
constexpr int64_t kQuantSmallN = 4;

// Quantize B (quantize(b, r0, r1, act) for rows [r0, r1)) into the
// executor's scratch as above, then body(act, ith, nth) on every slot.
// One driver for the int8 path and the ABI 1.2 types.
template <typename Act, typename Quantize, typename Body>
void run_on_quantized_b(const loom_tensor_t* dst, Exec& ex, Quantize quantize, Body body) {
  const loom_tensor_t* b = dst->src[1];
  const int64_t rows = nrows(b);
  const size_t act_bytes = static_cast<size_t>(rows * (b->ne[0] / act_elems(static_cast<const Act*>(nullptr)))) *
                           sizeof(Act);
  if (rows <= kQuantSmallN) {
    // One private copy per slot: quantizing a few rows costs less than a
    // second hand-off.
    auto* base = static_cast<uint8_t*>(ex.scratch(act_bytes * static_cast<size_t>(ex.threads())));
    ex.run([&](int ith, int nth) {
      auto* act = reinterpret_cast<Act*>(base + act_bytes * static_cast<size_t>(ith));
      quantize(b, 0, rows, act);
      body(static_cast<const Act*>(act), ith, nth);
    });
    return;
  }
  auto* act = static_cast<Act*>(ex.scratch(act_bytes));
  ex.run([&](int ith, int nth) {
    int64_t r0, r1;
    common::split_range(rows, ith, nth, &r0, &r1);
    quantize(b, r0, r1, act);
  });
  ex.run([&](int ith, int nth) { body(static_cast<const Act*>(act), ith, nth); });
}

// Columns of B per dot call (each unpacked chunk of A serves them all), and
// rows of A per call (decode: independent chains, one reduction).
constexpr int kQuantCols = 4;
constexpr int kQuantRows = 4;

// The share of thread ith: its contiguous run of rows of A over (row, i2,
// i3), in groups of up to kQuantRows rows of one batch, each group against
// every column of B in tiles of up to kQuantCols:
// dot(rows, mr, cols, nc, out) with rows = mr row pointers of A (blocks),
// cols = the nc columns' Act blocks, out[r][c] the results. Each result is
// computed by one call in a fixed order (independent of the thread count).
// Rows are short (a few super-blocks), so index math stays out of the loop.
template <typename Block, typename Act, typename Dot>
void quant_rows_times_b(const loom_tensor_t* dst, const Act* act, int ith, int nth, Dot dot) {
  const loom_tensor_t* a = dst->src[0];
  const MatDims d(dst);
  const int64_t nblk = d.k / act_elems(act);
  int64_t w0, w1;
  common::split_range(d.m * d.b2 * d.b3, ith, nth, &w0, &w1);
  int64_t m = w0 % d.m, i2 = (w0 / d.m) % d.b2, i3 = w0 / (d.m * d.b2);
  const auto os0 = static_cast<int64_t>(dst->nb[0]), os1 = static_cast<int64_t>(dst->nb[1]);
  for (int64_t w = w0; w < w1; m = 0, i3 += ++i2 / d.b2, i2 %= d.b2) {
    const int64_t m_end = std::min(d.m, m + (w1 - w));
    w += m_end - m;
    const Act* batch = act + ((i3 * d.b2 + i2) * d.n) * nblk;
    char* out0 = elem_ptr(dst, 0, 0, i2, i3);
    for (; m < m_end; m += kQuantRows) {
      const int mr = static_cast<int>(std::min<int64_t>(kQuantRows, m_end - m));
      const Block* rows[kQuantRows];
      for (int r = 0; r < mr; ++r) rows[r] = reinterpret_cast<const Block*>(row_ptr(a, m + r, i2 / d.r2, i3 / d.r3));
      for (int64_t n = 0; n < d.n; n += kQuantCols) {
        const int nc = static_cast<int>(std::min<int64_t>(kQuantCols, d.n - n));
        const Act* cols[kQuantCols];
        for (int c = 0; c < nc; ++c) cols[c] = batch + (n + c) * nblk;
        float out[kQuantRows][kQuantCols];
        dot(rows, mr, cols, nc, out);
        for (int r = 0; r < mr; ++r) {
          for (int c = 0; c < nc; ++c) std::memcpy(out0 + (m + r) * os0 + (n + c) * os1, &out[r][c], 4);
        }
      }
    }
  }
}

}  // namespace loom::cpu
