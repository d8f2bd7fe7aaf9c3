// Tensor cores through wmma (mma.h: 16 x 16 x 16 tiles of F16 inputs with
// F32 sums, compute capability 7.0+), for the kernels that use them
// (attention_tc.cu, gemm_tc.cu). Under the host emulation (LOOM_CUDA_EMU,
// tests/cuda/emu/emu.h) wmma is emulated and TcHalf is a plain 16-bit
// value that converts to float the way hd.cuh does. A tile's pointer must
// sit on 32 bytes and its leading dimension be a multiple of 16 bytes; the
// kernels never index a fragment's elements (their lanes are unspecified).
#pragma once

#include <stdint.h>

#include "hd.cuh"

#if !defined(LOOM_CUDA_EMU)
#include <cuda_fp16.h>
#include <mma.h>
#endif

namespace loom::cuda {

#if defined(LOOM_CUDA_EMU)
struct TcHalf {
  uint16_t bits;
  explicit operator float() const { return f16_to_f32(bits); }
};
inline TcHalf tc_half(float x) { return {f32_to_f16(x)}; }
inline TcHalf tc_half_bits(uint16_t b) { return {b}; }
#else
using TcHalf = __half;
__device__ __forceinline__ TcHalf tc_half(float x) { return __float2half_rn(x); }
__device__ __forceinline__ TcHalf tc_half_bits(uint16_t b) { return __ushort_as_half(b); }
#endif

namespace wmma = nvcuda::wmma;
using TcFragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, TcHalf, wmma::row_major>;
using TcFragBCol = wmma::fragment<wmma::matrix_b, 16, 16, 16, TcHalf, wmma::col_major>;
using TcFragBRow = wmma::fragment<wmma::matrix_b, 16, 16, 16, TcHalf, wmma::row_major>;
using TcFragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// The GEMM tiles of gemm_tc.cu and mul_mat_id_grouped.cu's moe_tc_kernel:
// a block of 4 warps computes a 64 x 64 result tile (rows of A by columns
// of B), warp w the 32 x 32 quarter (w / 2, w % 2) as 2 x 2 accumulators;
// per step of kTcGemmK along K the block stages A's 64 rows and B's 64
// columns as halves, row-major at kTcGemmLd halves a row.
constexpr int kTcGemmTile = 64;
constexpr int kTcGemmK = 32;
constexpr int kTcGemmLd = kTcGemmK + 8;  // bank spread
constexpr int kTcGemmThreads = 128;
// Shared memory: A's and B's staged rows, then a 16 x 16 f32 staging tile
// per warp.
constexpr size_t kTcGemmSmem = 2 * kTcGemmTile * kTcGemmLd * 2 + 4 * 16 * 16 * 4;

// One staged step: the warp's quarter of as (A's rows) times bs (B's
// columns) added to acc.
__device__ inline void tc_gemm_step(TcFragC (&acc)[2][2], const TcHalf* as, const TcHalf* bs, int wm, int wn) {
  for (int kk = 0; kk < kTcGemmK; kk += 16) {
    TcFragA fa[2];
    TcFragBCol fb[2];
    for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], as + (wm * 32 + i * 16) * kTcGemmLd + kk, kTcGemmLd);
    for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], bs + (wn * 32 + j * 16) * kTcGemmLd + kk, kTcGemmLd);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
  }
}

// The warp's quarter of the tile over K elements: acc = A's rows times B's
// columns, where a_at(r, k) and b_at(r, k) give element k of the tile's A
// row r and B column r (0 past the edges), staged kTcGemmK at a time.
template <typename AAt, typename BAt>
__device__ void tc_gemm_tile(TcFragC (&acc)[2][2], TcHalf* as, TcHalf* bs, int wm, int wn, int64_t K, AAt a_at,
                             BAt b_at) {
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  for (int64_t k0 = 0; k0 < K; k0 += kTcGemmK) {
    __syncthreads();  // every warp is done with the last step's tiles
    for (int i = threadIdx.x; i < kTcGemmTile * kTcGemmK; i += kTcGemmThreads) {
      const int r = i / kTcGemmK, c = i % kTcGemmK;
      as[r * kTcGemmLd + c] = tc_half(a_at(r, k0 + c));
      bs[r * kTcGemmLd + c] = tc_half(b_at(r, k0 + c));
    }
    __syncthreads();
    tc_gemm_step(acc, as, bs, wm, wn);
  }
}

// The warp's quarter out through its staging tile cs: put(r, c, v) for
// every element (r, c) of the 64 x 64 tile, lane l taking rows l % 16 of
// each 16 x 16 piece (the lanes of a column write consecutive rows).
template <typename Put>
__device__ void tc_gemm_out(const TcFragC (&acc)[2][2], float* cs, int wm, int wn, int lane, Put put) {
  const int r = lane % 16, c0 = (lane / 16) * 8;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(cs, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int c = c0; c < c0 + 8; ++c) put(wm * 32 + i * 16 + r, wn * 32 + j * 16 + c, cs[r * 16 + c]);
      __syncwarp();
    }
  }
}

}  // namespace loom::cuda
