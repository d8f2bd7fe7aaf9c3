// ATTENTION's online softmax: a query row folds KV rows one chunk at a time
// into a running state (max m, sum l of exp(score - m), and the weighted V
// sum acc); chunk results merge with the running state by rescaling both
// sides to the larger max. Per element of acc the merge is one scalar
// formula, so the kernel applies it lane by lane and the host test checks
// it against the exact softmax.
#pragma once

#include <cstring>

#include "dequant.cuh"
#include "fault.h"
#include "hd.cuh"
#include "loom/plugin.h"

namespace loom::cuda {

// KV rows one block scores at a time (one per thread) before merging.
constexpr int kAttnChunk = 64;

// One KV row's score: scale * (q . k), q already in f32, k a row of a
// float type with element stride nb0, summed in order of d.
LOOM_HD float attn_score(const float* q, const uint8_t* k, int k_type, int64_t nb0, int64_t d, float scale) {
  float s = 0.0f;
  for (int64_t i = 0; i < d; ++i) s += q[i] * load_elem(k_type, k + i * nb0);
  return s * scale;
}

struct OnlineState {
  float m;  // max score so far (-inf: nothing yet)
  float l;  // sum of exp(score - m)
};

LOOM_HD OnlineState online_init() { return {-INFINITY, 0.0f}; }

// Factors that bring a's and b's sums (and accumulators) to the merged max.
struct MergeFactors {
  float ca, cb;
};
LOOM_HD MergeFactors online_factors(OnlineState a, OnlineState b) {
  if (a.m == -INFINITY) return {0.0f, 1.0f};
  if (b.m == -INFINITY) return {1.0f, 0.0f};
  const float m = fmaxf(a.m, b.m);
  return {expf(a.m - m), expf(b.m - m)};
}
LOOM_HD OnlineState online_merge(OnlineState a, OnlineState b, MergeFactors f) {
  return {fmaxf(a.m, b.m), a.l * f.ca + b.l * f.cb};
}
// acc element after the merge (acc_b: the other side's, for one row v_j
// with state {score, 1}).
LOOM_HD float online_merge_acc(float acc_a, float acc_b, MergeFactors f) { return acc_a * f.ca + acc_b * f.cb; }
// The output element: acc / l, or 0 when no row was visible.
LOOM_HD float online_finish(OnlineState s, float acc) { return s.l > 0.0f ? acc / s.l : 0.0f; }

// Query t's KV rows [first, end): [0, visible[t]) or, the ranges form
// (ABI 1.4, vis_nb1 != 0), the pair visible[:, t]. A bad value or pair
// reads as empty, with the fault (fault.h) the kernel reports: kErrVisible
// with the value, or kErrRange with the pair packed (first << 32 | end).
struct KvRows {
  int64_t first, end;
  int32_t fault;  // kErrNone, kErrVisible or kErrRange
  int64_t value;
};
LOOM_HD KvRows query_rows(const uint8_t* vis, int64_t nb0, int64_t nb1, int64_t t, int64_t n_kv) {
  if (nb1 == 0) {
    int32_t n;
    std::memcpy(&n, vis + t * nb0, sizeof n);
    if (n >= 0 && n <= n_kv) return {0, n, kErrNone, 0};
    return {0, 0, kErrVisible, n};
  }
  int32_t a, b;
  std::memcpy(&a, vis + t * nb1, sizeof a);
  std::memcpy(&b, vis + nb0 + t * nb1, sizeof b);
  if (a >= 0 && b >= a && b <= n_kv) return {a, b, kErrNone, 0};
  const auto packed = static_cast<int64_t>(static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32 |
                                           static_cast<uint32_t>(b));
  return {0, 0, kErrRange, packed};
}

// visible's dim-1 stride in the ranges form, 0 for lengths [T].
inline int64_t ranges_stride(const loom_tensor_t* node) {
  return node->op_params[1] == LOOM_ATTENTION_RANGES ? static_cast<int64_t>(node->src[3]->nb[1]) : 0;
}

// The decode path (attention_split.cu, flash-decoding): the KV range is
// cut into splits of kSplitRows rows, one block of kSplitWarps warps per
// (kv head, group of up to kSplitHeads query heads sharing it, token,
// split), so each K / V row is read once for all heads of its group. Warp
// w takes rows w, w + kSplitWarps, ... of its split, each row a one-row
// chunk merged into the warp's state per head (online_factors with
// {score, 1}), and writes its partials (m, l, acc[Dv]) per head. A second
// kernel merges the partials of (head, token) in order (split, then warp)
// and divides. Lane l holds elements l, l + 32, ... of a row, so head
// sizes up to kSplitMaxDim fit in registers.
constexpr int kSplitWarps = 4;
constexpr int kSplitRows = 256;
constexpr int kSplitMaxDim = 256;
constexpr int kSplitHeads = 4;
constexpr int64_t kSplitMaxTokens = 8;

// Lane `lane`'s parts of q_i . k for the nh query heads at q + i * q_stride
// (elements lane, lane + 32, ... in order, k read once for all heads); each
// head's 32 parts then sum in the halving tree (launch.cuh) and the sum is
// multiplied by the scale.
LOOM_HD void split_lane_dots(const float* q, int64_t q_stride, int nh, const uint8_t* k, int k_type, int64_t nb0,
                             int64_t d, int lane, float* out) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < kSplitHeads; ++i) out[i] = 0.0f;
  for (int64_t e = lane; e < d; e += 32) {
    const float kv = load_elem(k_type, k + e * nb0);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < kSplitHeads; ++i) {
      if (i < nh) out[i] += q[i * q_stride + e] * kv;
    }
  }
}

// Heads of one kv head's group a block takes: chunks of kSplitHeads.
LOOM_HD int64_t split_head_chunks(int64_t ratio) { return (ratio + kSplitHeads - 1) / kSplitHeads; }

// Block x of the split grid (kv heads x chunks): its kv head g and query
// heads h0 .. h0 + nh - 1 (ratio query heads per kv head).
struct SplitHeads {
  int64_t g, h0;
  int nh;
};
LOOM_HD SplitHeads split_block_heads(int64_t bx, int64_t ratio) {
  const int64_t chunks = split_head_chunks(ratio), g = bx / chunks, h0 = g * ratio + (bx % chunks) * kSplitHeads;
  const int64_t left = g * ratio + ratio - h0;
  return {g, h0, static_cast<int>(left < kSplitHeads ? left : kSplitHeads)};
}

// Prefill on tensor cores (attention_tc.cu, compute capability 7.0+, F16
// K and V, head sizes up to kTcMaxDim, more than kSplitMaxTokens queries):
// a block of kTcWarps warps takes kTcRows queries per warp of one head; K
// and V go through shared memory kTcKeys rows at a time, zero-padded to
// whole 16 x 16 tiles. Shared memory (bytes from the window's start, every
// tile on 32 bytes): K's chunk, V's chunk, then per warp a staging area
// (Q's rows as halves at the start, then the chunk's scores as floats, then
// 16 x 16 result tiles) and the chunk's weights as halves; last, the warps'
// KV row ranges.
constexpr int kTcWarps = 4;
constexpr int kTcRows = 16;
constexpr int kTcKeys = 32;
constexpr int kTcMaxDim = 128;
constexpr int kTcPad = 8;                // halves after each staged row (bank spread)
constexpr int kTcLds = kTcKeys + 8;      // floats per score row
constexpr int kTcLdp = kTcKeys + 8;      // halves per weight row

struct TcLayout {
  int dp, dvp;    // D and Dv rounded up to 16
  int ldk, ldv;   // halves per staged K (and Q) row, V row
  size_t v_off, warp_off, stage_bytes, warp_bytes, ranges_off, total;
};

LOOM_HD TcLayout tc_layout(int64_t d, int64_t dv) {
  TcLayout l;
  l.dp = static_cast<int>((d + 15) / 16 * 16);
  l.dvp = static_cast<int>((dv + 15) / 16 * 16);
  l.ldk = l.dp + kTcPad;
  l.ldv = l.dvp + kTcPad;
  const size_t q_bytes = static_cast<size_t>(kTcRows) * l.ldk * 2, s_bytes = static_cast<size_t>(kTcRows) * kTcLds * 4;
  l.stage_bytes = ((q_bytes > s_bytes ? q_bytes : s_bytes) + 31) / 32 * 32;
  l.warp_bytes = l.stage_bytes + static_cast<size_t>(kTcRows) * kTcLdp * 2;
  l.v_off = static_cast<size_t>(kTcKeys) * l.ldk * 2;
  l.warp_off = l.v_off + static_cast<size_t>(kTcKeys) * l.ldv * 2;
  l.ranges_off = l.warp_off + kTcWarps * l.warp_bytes;
  l.total = l.ranges_off + 2 * kTcWarps * sizeof(int64_t);
  return l;
}

}  // namespace loom::cuda
