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

}  // namespace loom::cuda
