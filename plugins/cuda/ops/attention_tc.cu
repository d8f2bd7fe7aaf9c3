// ATTENTION for prefill on tensor cores (wmma: 16 x 16 x 16 tiles of F16
// inputs with F32 sums, compute capability 7.0+). A block of kTcWarps warps
// takes hpb heads of one kv head (hpb = tc_heads_per_block: up to 4 query
// heads sharing K and V under GQA) and kTcWarps / hpb tiles of kTcRows
// consecutive queries: warp w the head w % hpb, the tile w / hpb
// (attention.cuh's TcLayout says where everything sits in shared memory).
// K and V are staged once for all the block's heads. Q is rounded to
// F16 once into fragments; K and V (F16 caches, read as they are) are
// staged kTcKeys rows at a time for the whole block. Two passes over the
// block's KV rows: the first takes each query's largest score, the second
// its weights p = exp(s - max) (F16 in the product with V, summed
// unrounded for the divisor) and accumulates P . V in fragments, so the
// accumulators never need a rescale (a fragment's element-to-lane mapping
// is unspecified). The score products run twice; on tensor cores that is
// cheaper than staging the result through shared memory at every chunk.
// docs/plugin-abi.md states the rounding rule the conformance suite
// accepts (Q and the weights as F16 above 8 queries per node).
#include <cstring>

#include "attention.cuh"
#include "dequant.cuh"
#include "fault.cuh"
#include "launch.cuh"
#include "ops.h"
#include "tc.cuh"
#include "tensor.cuh"

namespace loom::cuda {
namespace {

using FragQ = TcFragA;     // Q or P rows
using FragKt = TcFragBCol;  // K's rows as columns
using FragV = TcFragBRow;
using FragS = TcFragC;
constexpr int kTcMaxTiles = kTcMaxDim / 16;

// Rows [j0, j0 + kTcKeys) of kv head g of an F16 cache as halves at s (ld
// halves a row); rows past n_kv and columns past dim are zeros. wide: the
// rows are dense, dim is a multiple of 8 and every row starts on 16 bytes
// (tc_wide_rows), so a thread copies 8 halves in one 16-byte load.
__device__ void stage_rows(TcHalf* s, int ld, const TArg& x, int64_t j0, int64_t g, int dim, int dimp, bool wide) {
  const int64_t n_kv = x.ne[1];
  if (wide) {
    const int units = dimp / 8;
    for (int i = threadIdx.x; i < kTcKeys * units; i += kTcWarps * kWarp) {
      const int r = i / units, c = (i % units) * 8;
      const int64_t j = j0 + r;
      uint4 w = make_uint4(0, 0, 0, 0);
      if (j < n_kv && c < dim) w = *reinterpret_cast<const uint4*>(x.data + c * 2 + j * x.nb[1] + g * x.nb[2]);
      *reinterpret_cast<uint4*>(s + r * ld + c) = w;
    }
    return;
  }
  for (int i = threadIdx.x; i < kTcKeys * dimp; i += kTcWarps * kWarp) {
    const int r = i / dimp, c = i % dimp;
    const int64_t j = j0 + r;
    uint16_t bits = 0;
    if (j < n_kv && c < dim) bits = *reinterpret_cast<const uint16_t*>(x.data + c * x.nb[0] + j * x.nb[1] + g * x.nb[2]);
    s[r * ld + c] = tc_half_bits(bits);
  }
}

// The warp's 16 x kTcKeys scores (unscaled) against the staged chunk, at ss.
__device__ void chunk_scores(const FragQ* qf, int nd, const TcHalf* ks, int ldk, float* ss) {
  for (int n = 0; n < kTcKeys / 16; ++n) {
    FragS c;
    wmma::fill_fragment(c, 0.0f);
#pragma unroll
    for (int i = 0; i < kTcMaxTiles; ++i) {
      if (i < nd) {
        FragKt b;
        wmma::load_matrix_sync(b, ks + n * 16 * ldk + i * 16, ldk);
        wmma::mma_sync(c, qf[i], b, c);
      }
    }
    wmma::store_matrix_sync(ss + n * 16, c, kTcLds, wmma::mem_row_major);
  }
}

__global__ void __launch_bounds__(kTcWarps * kWarp)
    attention_tc_kernel(TArg dst, TArg q, TArg k, TArg v, const uint8_t* vis, int64_t vis_stride, int64_t vis_nb1,
                        float scale, bool wide_k, bool wide_v, int hpb, KernelFault* err) {
  LOOM_DYNAMIC_SHARED_ALIGNED(uint8_t, sh, 128);
  const int D = static_cast<int>(q.ne[0]), Dv = static_cast<int>(v.ne[0]);
  const int64_t n_kv = k.ne[1], T = q.ne[2];
  const TcLayout L = tc_layout(D, Dv);
  const int nd = L.dp / 16, nv = L.dvp / 16;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t h0 = static_cast<int64_t>(blockIdx.y) * hpb;  // the block's first head
  const int64_t h = h0 + warp % hpb, g = h0 / (q.ne[1] / k.ne[2]);
  TcHalf* ks = reinterpret_cast<TcHalf*>(sh);
  TcHalf* vs = reinterpret_cast<TcHalf*>(sh + L.v_off);
  uint8_t* wb = sh + L.warp_off + warp * L.warp_bytes;
  TcHalf* qs = reinterpret_cast<TcHalf*>(wb);
  float* ss = reinterpret_cast<float*>(wb);
  TcHalf* ps = reinterpret_cast<TcHalf*>(wb + L.stage_bytes);
  int64_t* lo_w = reinterpret_cast<int64_t*>(sh + L.ranges_off);
  int64_t* hi_w = lo_w + kTcWarps;

  // Lane pair (2r, 2r + 1) owns query row r of the warp, each half of a
  // chunk's columns.
  const int64_t tw = (static_cast<int64_t>(blockIdx.x) * (kTcWarps / hpb) + warp / hpb) * kTcRows;
  const int r = lane / 2, part = lane % 2;
  const int64_t t = tw + r;
  KvRows rows{0, 0, kErrNone, 0};
  if (t < T) rows = query_rows(vis, vis_stride, vis_nb1, t, n_kv);
  if (rows.fault != kErrNone && part == 0 && h == 0) report_fault(err, rows.fault, LOOM_OP_ATTENTION, t, rows.value, n_kv);

  for (int i = lane; i < kTcRows * L.dp; i += kWarp) {
    const int rr = i / L.dp, c = i % L.dp;
    const int64_t tt = tw + rr;
    const float x = tt < T && c < D ? load_elem(q.type, q.data + q.offset(c, h, tt, 0)) : 0.0f;
    qs[rr * L.ldk + c] = tc_half(x);
  }
  __syncwarp();
  FragQ qf[kTcMaxTiles];
#pragma unroll
  for (int i = 0; i < kTcMaxTiles; ++i) {
    if (i < nd) wmma::load_matrix_sync(qf[i], qs + i * 16, L.ldk);
  }
  __syncwarp();  // the staging area holds scores from here on

  // The warp's rows (union of its queries' ranges), then the block's.
  int64_t lo = rows.end > rows.first ? rows.first : n_kv, hi = rows.end > rows.first ? rows.end : 0;
  for (int s = 16; s > 0; s /= 2) {
    const int64_t olo = __shfl_xor_sync(0xFFFFFFFFu, lo, s), ohi = __shfl_xor_sync(0xFFFFFFFFu, hi, s);
    lo = olo < lo ? olo : lo;
    hi = ohi > hi ? ohi : hi;
  }
  if (lane == 0) {
    lo_w[warp] = lo;
    hi_w[warp] = hi;
  }
  __syncthreads();
  int64_t blo = n_kv, bhi = 0;
  for (int w = 0; w < kTcWarps; ++w) {
    blo = lo_w[w] < blo ? lo_w[w] : blo;
    bhi = hi_w[w] > bhi ? hi_w[w] : bhi;
  }

  // Stages rows [j0, j0 + kTcKeys) of K (and of V) for the block; when the
  // warp's rows meet them, writes the warp's scores at ss and says so.
  auto scores = [&](int64_t j0, bool with_v) {
    __syncthreads();  // every warp is done with the last chunk
    stage_rows(ks, L.ldk, k, j0, g, D, L.dp, wide_k);
    if (with_v) stage_rows(vs, L.ldv, v, j0, g, Dv, L.dvp, wide_v);
    __syncthreads();
    if (hi <= j0 || lo >= j0 + kTcKeys) return false;
    chunk_scores(qf, nd, ks, L.ldk, ss);
    __syncwarp();
    return true;
  };

  // Pass 1: each query's largest scaled score.
  float m = -INFINITY;
  for (int64_t j0 = blo; j0 < bhi; j0 += kTcKeys) {
    if (scores(j0, false)) {
      for (int c = part * (kTcKeys / 2); c < (part + 1) * (kTcKeys / 2); ++c) {
        const int64_t j = j0 + c;
        if (j >= rows.first && j < rows.end) m = fmaxf(m, ss[r * kTcLds + c] * scale);
      }
      __syncwarp();
    }
  }
  m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 1));

  // Pass 2: weights and P . V.
  FragS of[kTcMaxTiles];
#pragma unroll
  for (int i = 0; i < kTcMaxTiles; ++i) {
    if (i < nv) wmma::fill_fragment(of[i], 0.0f);
  }
  float l = 0.0f;
  for (int64_t j0 = blo; j0 < bhi; j0 += kTcKeys) {
    if (scores(j0, true)) {
      for (int c = part * (kTcKeys / 2); c < (part + 1) * (kTcKeys / 2); ++c) {
        const int64_t j = j0 + c;
        float p = 0.0f;
        if (j >= rows.first && j < rows.end) p = expf(ss[r * kTcLds + c] * scale - m);
        l += p;
        ps[r * kTcLdp + c] = tc_half(p);
      }
      __syncwarp();
      for (int kk = 0; kk < kTcKeys / 16; ++kk) {
        FragQ pa;
        wmma::load_matrix_sync(pa, ps + kk * 16, kTcLdp);
#pragma unroll
        for (int i = 0; i < kTcMaxTiles; ++i) {
          if (i < nv) {
            FragV vb;
            wmma::load_matrix_sync(vb, vs + kk * 16 * L.ldv + i * 16, L.ldv);
            wmma::mma_sync(of[i], pa, vb, of[i]);
          }
        }
      }
      __syncwarp();  // the next chunk rewrites the scores and weights
    }
  }
  l += __shfl_xor_sync(0xFFFFFFFFu, l, 1);

  // The result, a 16 x 16 tile at a time through the staging area, each
  // row divided by its sum (0 where no row was visible).
#pragma unroll
  for (int i = 0; i < kTcMaxTiles; ++i) {
    if (i >= nv) continue;
    wmma::store_matrix_sync(ss, of[i], kTcLds, wmma::mem_row_major);
    __syncwarp();
    if (t < T) {
      for (int c = part * 8; c < part * 8 + 8; ++c) {
        const int col = i * 16 + c;
        if (col < Dv) {
          *reinterpret_cast<float*>(dst.data + col * dst.nb[0] + h * dst.nb[1] + t * dst.nb[2]) =
              online_finish({m, l}, ss[r * kTcLds + c]);
        }
      }
    }
    __syncwarp();
  }
}

// Query heads per block: the most (1, 2 or 4) that divide both the GQA
// group (query heads per kv head) and kTcWarps, so a block's heads share
// one kv head.
int tc_heads_per_block(const loom_tensor_t* q, const loom_tensor_t* k) {
  const int64_t group = q->ne[1] / k->ne[2];
  for (int hpb = kTcWarps; hpb > 1; hpb /= 2) {
    if (group % hpb == 0) return hpb;
  }
  return 1;
}

// K or V rows a thread can stage 16 bytes at a time (stage_rows' wide).
bool tc_wide_rows(const loom_tensor_t* x) {
  return x->nb[0] == 2 && x->ne[0] % 8 == 0 && x->nb[1] % 16 == 0 && x->nb[2] % 16 == 0 &&
         reinterpret_cast<uintptr_t>(x->data) % 16 == 0;
}

}  // namespace

bool attention_tc_fits(const loom_tensor_t* node) {
  const loom_tensor_t* q = node->src[0];
  const loom_tensor_t* k = node->src[1];
  const loom_tensor_t* v = node->src[2];
  return k->type == LOOM_TYPE_F16 && v->type == LOOM_TYPE_F16 && q->ne[0] <= kTcMaxDim && v->ne[0] <= kTcMaxDim &&
         q->ne[2] > kSplitMaxTokens && q->ne[1] <= 65535;
}

loom_status_t* launch_attention_tc(const LaunchContext& ctx, const loom_tensor_t* node) {
  const loom_tensor_t* q = node->src[0];
  float scale;
  std::memcpy(&scale, node->op_params, sizeof scale);
  const TcLayout L = tc_layout(q->ne[0], node->src[2]->ne[0]);
  const int hpb = tc_heads_per_block(q, node->src[1]);
  const int64_t per_block = kTcWarps / hpb * kTcRows;  // queries of each head
  const dim3 grid(static_cast<unsigned>((q->ne[2] + per_block - 1) / per_block),
                  static_cast<unsigned>(q->ne[1] / hpb));
  LOOM_LAUNCH(grid, kTcWarps * kWarp, L.total, ctx.stream, attention_tc_kernel)(
      targ(node), targ(q), targ(node->src[1]), targ(node->src[2]), static_cast<const uint8_t*>(node->src[3]->data),
      static_cast<int64_t>(node->src[3]->nb[0]), ranges_stride(node), scale, tc_wide_rows(node->src[1]),
      tc_wide_rows(node->src[2]), hpb, ctx.error);
  return launch_status(node, "attention_tc kernel");
}

}  // namespace loom::cuda
