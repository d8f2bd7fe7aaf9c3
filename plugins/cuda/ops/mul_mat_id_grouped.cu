// MUL_MAT_ID's prefill grouped by expert (more than 8 tokens): the
// (slot u, token t) pairs listed expert by expert on the device
// (moe_group_kernel, one block), then a 64x64 tiled product per (tile of
// A's rows, tile of 64 pairs, expert) whose columns are gathered through
// the list (moe_tiled_kernel), so each chosen expert's rows are read once
// per 64 of its pairs instead of once per pair as the GEMV path does. The
// same design as the vulkan plugin's moe_group.comp + mul_mat.comp
// -DLOOM_ID_GROUPED. B is the f32 B of the node's rule (rounded to 8-bit
// blocks and written back as f32 for quantized A with dense rows,
// round_b_f32; else B itself); sums in f32, k in order. An id outside
// [0, E) is reported (kErrExpert) and its pair left out. Nothing waits for
// the host: the counts stay on the device and a block past its expert's
// count exits. LOOM_CUDA_MOE_GROUPED=0 keeps the per-pair kernels.
// With F16 or quantized A on tensor cores (ctx.tc_gemm): moe_tc_kernel, the
// same grid on wmma (gemm_tc.cu's tiles: A dequantized and B's f32 each
// rounded to F16 in shared memory, f32 sums; the F16-inputs rule, which
// the suite accepts for more than 8 tokens), B not rounded to 8-bit blocks.
#include <algorithm>

#include "dequant.cuh"
#include "fault.cuh"
#include "gemv.h"
#include "launch.cuh"
#include "ops.h"
#include "tc.cuh"
#include "tensor.cuh"

#include "common/env.h"

namespace loom::cuda {
namespace {

constexpr int kGroupThreads = 256;
constexpr int64_t kMaxExperts = 256;  // moe_group_kernel's shared counts
constexpr int kTile = 64;
constexpr int kBk = 16;

// list: [0, E) counts, [E, 2E) first entries, [2E, 2E + U*T) pairs u + U t.
__global__ void __launch_bounds__(kGroupThreads) moe_group_kernel(TArg ids, int64_t n_expert, int32_t* list,
                                                                  KernelFault* err) {
  __shared__ int32_t count[kMaxExperts];
  __shared__ int32_t first[kMaxExperts];
  const int64_t u_n = ids.ne[0], pairs = ids.ne[0] * ids.ne[1];
  for (int64_t e = threadIdx.x; e < n_expert; e += blockDim.x) count[e] = 0;
  __syncthreads();
  for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const int64_t u = p % u_n, t = p / u_n;
    const int32_t e = *reinterpret_cast<const int32_t*>(ids.data + u * ids.nb[0] + t * ids.nb[1]);
    if (e < 0 || e >= n_expert) {
      report_fault(err, kErrExpert, LOOM_OP_MUL_MAT_ID, t, (u << 32) | static_cast<int64_t>(static_cast<uint32_t>(e)),
                   n_expert);
      continue;
    }
    atomicAdd(&count[e], 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t run = 0;
    for (int64_t e = 0; e < n_expert; ++e) {
      list[e] = count[e];
      list[n_expert + e] = run;
      first[e] = run;
      run += count[e];
      count[e] = 0;
    }
  }
  __syncthreads();
  for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const int64_t u = p % u_n, t = p / u_n;
    const int32_t e = *reinterpret_cast<const int32_t*>(ids.data + u * ids.nb[0] + t * ids.nb[1]);
    if (e >= 0 && e < n_expert) list[2 * n_expert + first[e] + atomicAdd(&count[e], 1)] = static_cast<int32_t>(p);
  }
}

// blockIdx: x a tile of A's rows, y the first tile of 64 pairs (then y +
// gridDim.y, ...), z the expert. 256 threads, each a 4x4 block of the tile
// (rows tm + 16i, columns tn + 16j); per 16 k, A's 64 rows (dequantized)
// and the 64 gathered columns of B staged in shared memory.
__global__ void __launch_bounds__(256) moe_tiled_kernel(TArg dst, TArg a, TArg b, int64_t n_used, const int32_t* list) {
  __shared__ float s_a[kTile][kBk + 1];
  __shared__ float s_b[kTile][kBk + 1];
  const int64_t e = blockIdx.z, n_expert = a.ne[2];
  const int64_t k_len = a.ne[0], m_len = a.ne[1];
  const int64_t n_len = list[e], first = list[n_expert + e];
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int l = threadIdx.x, tm = l % 16, tn = l / 16, sk = l % kBk, sr = l / kBk;
  const uint8_t* abase = a.data + e * a.nb[2];
  for (int64_t n0 = static_cast<int64_t>(blockIdx.y) * kTile; n0 < n_len; n0 += static_cast<int64_t>(gridDim.y) * kTile) {
    // The staging share's 4 columns: the pair's column of B (the token's
    // one column when Nb = 1), or none past the expert's count.
    const uint8_t* bcol[4];
    for (int s = 0; s < 4; ++s) {
      const int64_t n = n0 + sr + 16 * s;
      bcol[s] = nullptr;
      if (n < n_len) {
        const int64_t p = list[2 * n_expert + first + n];
        const int64_t u = p % n_used, t = p / n_used;
        bcol[s] = b.data + (b.ne[1] == 1 ? 0 : u) * b.nb[1] + t * b.nb[2];
      }
    }
    float acc[4][4] = {};
    for (int64_t k0 = 0; k0 < k_len; k0 += kBk) {
      const int64_t k = k0 + sk;
      for (int s = 0; s < 4; ++s) {
        const int64_t m = m0 + sr + 16 * s;
        s_a[sr + 16 * s][sk] = (m < m_len && k < k_len) ? row_elem(a.type, abase + m * a.nb[1], k, a.nb[0]) : 0.0f;
        s_b[sr + 16 * s][sk] = (bcol[s] != nullptr && k < k_len) ? *reinterpret_cast<const float*>(bcol[s] + k * b.nb[0])
                                                                 : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kBk; ++kk) {
        float av[4], bv[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) av[i] = s_a[tm + 16 * i][kk];
#pragma unroll
        for (int j = 0; j < 4; ++j) bv[j] = s_b[tn + 16 * j][kk];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
      }
      __syncthreads();
    }
    for (int j = 0; j < 4; ++j) {
      const int64_t n = n0 + tn + 16 * j;
      if (n >= n_len) continue;
      const int64_t p = list[2 * n_expert + first + n];
      const int64_t u = p % n_used, t = p / n_used;
      for (int i = 0; i < 4; ++i) {
        const int64_t m = m0 + tm + 16 * i;
        if (m < m_len) *reinterpret_cast<float*>(dst.data + m * dst.nb[0] + u * dst.nb[1] + t * dst.nb[2]) = acc[i][j];
      }
    }
  }
}

// The pair column n of expert e (its list entry): B's column and the
// result's (slot u, token t).
struct PairCol {
  int64_t u, t;
};
__device__ PairCol pair_col(const int32_t* list, int64_t n_expert, int64_t first, int64_t n, int64_t n_used) {
  const int64_t p = list[2 * n_expert + first + n];
  return {p % n_used, p / n_used};
}

// moe_tiled_kernel's grid on tensor cores: per step of 32 along K, the
// tile's 64 rows of A (dequantized) and its 64 gathered columns of B as
// halves; each warp 2 x 2 accumulators; results out through a 16 x 16
// staging tile per warp to their (slot, token) columns.
__global__ void __launch_bounds__(kTcGemmThreads) moe_tc_kernel(TArg dst, TArg a, TArg b, int64_t n_used,
                                                              const int32_t* list) {
  LOOM_DYNAMIC_SHARED_ALIGNED(uint8_t, sh, 128);
  TcHalf* as = reinterpret_cast<TcHalf*>(sh);
  TcHalf* bs = as + kTcGemmTile * kTcGemmLd;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, wm = warp / 2, wn = warp % 2;
  float* cs = reinterpret_cast<float*>(bs + kTcGemmTile * kTcGemmLd) + warp * 256;
  const int64_t e = blockIdx.z, n_expert = a.ne[2];
  const int64_t k_len = a.ne[0], m_len = a.ne[1];
  const int64_t n_len = list[e], first = list[n_expert + e];
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const uint8_t* abase = a.data + e * a.nb[2];
  for (int64_t n0 = static_cast<int64_t>(blockIdx.y) * kTile; n0 < n_len; n0 += static_cast<int64_t>(gridDim.y) * kTile) {
    TcFragC acc[2][2];
    tc_gemm_tile(
        acc, as, bs, wm, wn, k_len,
        [&](int r, int64_t k) {
          const int64_t m = m0 + r;
          return m < m_len && k < k_len ? row_elem(a.type, abase + m * a.nb[1], k, a.nb[0]) : 0.0f;
        },
        [&](int r, int64_t k) {
          const int64_t n = n0 + r;
          if (n >= n_len || k >= k_len) return 0.0f;
          const PairCol pc = pair_col(list, n_expert, first, n, n_used);
          return *reinterpret_cast<const float*>(b.data + k * b.nb[0] + (b.ne[1] == 1 ? 0 : pc.u) * b.nb[1] +
                                                 pc.t * b.nb[2]);
        });
    tc_gemm_out(acc, cs, wm, wn, lane, [&](int r, int c, float v) {
      const int64_t m = m0 + r, n = n0 + c;
      if (m >= m_len || n >= n_len) return;
      const PairCol pc = pair_col(list, n_expert, first, n, n_used);
      *reinterpret_cast<float*>(dst.data + m * dst.nb[0] + pc.u * dst.nb[1] + pc.t * dst.nb[2]) = v;
    });
  }
}

}  // namespace

bool mul_mat_id_grouped_fits(const loom_tensor_t* node) {
  static const bool on = common::plugin_env_flag("LOOM_CUDA_MOE_GROUPED", true);
  const loom_tensor_t* a = node->src[0];
  const loom_tensor_t* ids = node->src[2];
  const int64_t row_tiles = (a->ne[1] + kTile - 1) / kTile;
  const int64_t tok_tiles = (ids->ne[1] + kTile - 1) / kTile;
  return on && ids->ne[1] > kGemvMaxCols && a->ne[2] <= kMaxExperts && row_tiles <= 0x7FFFFFFF &&
         tok_tiles <= 65535 && node->src[1]->type == LOOM_TYPE_F32;
}

loom_status_t* launch_mul_mat_id_grouped(const LaunchContext& ctx, const loom_tensor_t* node, bool round) {
  const loom_tensor_t* a = node->src[0];
  const loom_tensor_t* ids = node->src[2];
  const bool tc = ctx.tc_gemm && (a->type == LOOM_TYPE_F16 || block_shape(a->type).elems > 1);
  if (tc) round = false;  // the F16 rule instead of B's 8-bit blocks
  TArg bx = targ(node->src[1]);
  const size_t b_bytes = round ? (static_cast<size_t>(bx.nelements()) * 4 + 255) / 256 * 256 : 0;
  const size_t list_bytes = 4 * static_cast<size_t>(2 * a->ne[2] + ids->ne[0] * ids->ne[1]);
  loom_status_t* st = nullptr;
  uint8_t* mem = static_cast<uint8_t*>(ctx.scratch->get(b_bytes + list_bytes, &st));
  if (st != nullptr) return st;
  if (round) {
    float* dense = reinterpret_cast<float*>(mem);
    if ((st = round_b_f32(ctx, node, dense)) != nullptr) return st;
    bx.data = mem;
    bx.nb[0] = 4;
    bx.nb[1] = 4 * bx.ne[0];
    bx.nb[2] = bx.nb[1] * bx.ne[1];
    bx.nb[3] = bx.nb[2] * bx.ne[2];
  }
  int32_t* list = reinterpret_cast<int32_t*>(mem + b_bytes);
  LOOM_LAUNCH(1, kGroupThreads, 0, ctx.stream, moe_group_kernel)(targ(ids), a->ne[2], list, ctx.error);
  if ((st = launch_status(node, "mul_mat_id grouping kernel")) != nullptr) return st;
  const dim3 grid(static_cast<unsigned>((a->ne[1] + kTile - 1) / kTile),
                  static_cast<unsigned>((ids->ne[1] + kTile - 1) / kTile), static_cast<unsigned>(a->ne[2]));
  if (tc) {
    LOOM_LAUNCH(grid, kTcGemmThreads, kTcGemmSmem, ctx.stream, moe_tc_kernel)(targ(node), targ(a), bx, ids->ne[0], list);
    return launch_status(node, "mul_mat_id tensor-core kernel");
  }
  LOOM_LAUNCH(grid, 256, 0, ctx.stream, moe_tiled_kernel)(targ(node), targ(a), bx, ids->ne[0], list);
  return launch_status(node, "mul_mat_id tiled kernel");
}

}  // namespace loom::cuda
