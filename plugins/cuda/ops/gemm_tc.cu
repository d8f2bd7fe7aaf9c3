// MUL_MAT of more than kGemvMaxCols columns on tensor cores without cuBLAS
// (a machine with the NVIDIA driver and no CUDA toolkit, or
// LOOM_CUDA_CUBLAS=off): F16 and quantized A, the F16-inputs rule of
// docs/plugin-abi.md (A dequantized and B's f32, each rounded to the
// nearest F16; f32 sums), as cublasGemmEx's path does. A block of 4 warps
// computes a 64 x 64 tile of the result (rows of A by columns of B), each
// warp a 32 x 32 quarter as 2 x 2 wmma accumulators; per step of 32 along
// K the block stages A's 64 rows (dequantized in place from any layout:
// GGUF's blocks, the split layout, strided float rows) and B's 64 columns
// as halves in shared memory, zero past the edges. The result goes out a
// 16 x 16 tile at a time through shared memory (a fragment's lanes are
// unspecified). Batches broadcast A over B's dims 2 and 3 as every MUL_MAT
// path does.
#include "dequant.cuh"
#include "gemv.h"
#include "gemv_split.cuh"
#include "launch.cuh"
#include "ops.h"
#include "tc.cuh"
#include "tensor.cuh"

#include "../weight_layout.h"

namespace loom::cuda {
namespace {

// z0 + blockIdx.z: the batch matrix (i2, i3) of B and the result.
// split: A in the split layout (one 2-D matrix of `blocks` blocks).
__global__ void __launch_bounds__(kTcGemmThreads)
    gemm_tc_kernel(TArg dst, TArg a, TArg b, int64_t z0, bool split, int64_t blocks) {
  LOOM_DYNAMIC_SHARED_ALIGNED(uint8_t, sh, 128);
  TcHalf* as = reinterpret_cast<TcHalf*>(sh);
  TcHalf* bs = as + kTcGemmTile * kTcGemmLd;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  float* cs = reinterpret_cast<float*>(bs + kTcGemmTile * kTcGemmLd) + warp * 256;
  const int64_t K = a.ne[0], M = a.ne[1], N = b.ne[1];
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kTcGemmTile, n0 = static_cast<int64_t>(blockIdx.y) * kTcGemmTile;
  const int64_t z = z0 + blockIdx.z, i2 = z % b.ne[2], i3 = z / b.ne[2];
  const int64_t a2 = i2 / (b.ne[2] / a.ne[2]), a3 = i3 / (b.ne[3] / a.ne[3]);
  const uint8_t* abase = a.data + a2 * a.nb[2] + a3 * a.nb[3];
  const uint8_t* bbase = b.data + i2 * b.nb[2] + i3 * b.nb[3];
  const int wm = warp / 2, wn = warp % 2;  // the warp's 32 x 32 quarter

  TcFragC acc[2][2];
  tc_gemm_tile(
      acc, as, bs, wm, wn, K,
      [&](int r, int64_t k) {
        const int64_t m = m0 + r;
        if (m >= M || k >= K) return 0.0f;
        return split ? split_elem(a.type, a.data, blocks, m * K + k) : row_elem(a.type, abase + m * a.nb[1], k, a.nb[0]);
      },
      [&](int r, int64_t k) {
        const int64_t n = n0 + r;
        return n < N && k < K ? *reinterpret_cast<const float*>(bbase + k * b.nb[0] + n * b.nb[1]) : 0.0f;
      });
  tc_gemm_out(acc, cs, wm, wn, lane, [&](int r, int c, float v) {
    const int64_t m = m0 + r, n = n0 + c;
    if (m < M && n < N) *reinterpret_cast<float*>(dst.data + m * dst.nb[0] + n * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3]) = v;
  });
}

constexpr int64_t kMaxGridYZ = 65535;

}  // namespace

bool gemm_tc_fits(const loom_tensor_t* node) {
  const int32_t ta = node->src[0]->type;
  const bool f16_or_blocks = ta == LOOM_TYPE_F16 || block_shape(ta).elems > 1;
  return f16_or_blocks && node->src[1]->type == LOOM_TYPE_F32 && node->nb[0] == 4 &&
         node->src[1]->ne[1] > kGemvMaxCols && (node->src[0]->ne[1] + kTcGemmTile - 1) / kTcGemmTile <= 0x7FFFFFFF &&
         (node->src[1]->ne[1] + kTcGemmTile - 1) / kTcGemmTile <= kMaxGridYZ;
}

loom_status_t* launch_gemm_tc(const LaunchContext& ctx, const loom_tensor_t* node) {
  const TArg a = targ(node->src[0]);
  const TArg b = targ(node->src[1]);
  const bool split = is_split(node->src[0]);
  const int64_t mats = b.ne[2] * b.ne[3];
  const int64_t gx = (a.ne[1] + kTcGemmTile - 1) / kTcGemmTile, gy = (b.ne[1] + kTcGemmTile - 1) / kTcGemmTile;
  for (int64_t z0 = 0; z0 < mats; z0 += kMaxGridYZ) {
    const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                    static_cast<unsigned>(mats - z0 < kMaxGridYZ ? mats - z0 : kMaxGridYZ));
    LOOM_LAUNCH(grid, kTcGemmThreads, kTcGemmSmem, ctx.stream, gemm_tc_kernel)(targ(node), a, b, z0, split,
                                                                                a.nelements() / 32);
    if (loom_status_t* st = launch_status(node, "gemm_tc kernel")) return st;
  }
  return nullptr;
}

}  // namespace loom::cuda
