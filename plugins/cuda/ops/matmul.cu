// MUL_MAT. A quantized and B's rows dense f32: B is rounded to 8-bit
// blocks first, on every path (the rule the conformance suite accepts for a
// quantized A; act_quant.cuh). Decode-sized batches (N <= kGemvMaxCols) and
// every batch when cuBLAS is absent run a GEMV templated on A's type
// (gemv.h: integer dot products against B's 8-bit blocks for quantized A,
// f32 for float A). Larger batches: A dequantized to f32 scratch (F32 rows
// used in place), B rounded or densified to f32, one cuBLAS SGEMM per
// matrix of the batch, f32 compute (no TF32); or, for F16 and quantized A
// on a device with tensor cores (ctx.f16_gemm), A and B rounded to F16
// (round to nearest even; dense F16 A used in place) and one cublasGemmEx
// per matrix with f32 accumulation: the F16-inputs rule of
// docs/plugin-abi.md (MUL_MAT), which the conformance suite accepts for B
// of more than 8 columns. Without cuBLAS, those batches run the plugin's own
// tensor-core GEMM (gemm_tc.cu, same rule). A layout the GEMVs do not
// read (strided float A, misaligned blocks, B with strided elements) runs
// the exact per-block kernel below (gemv.cuh: a lane per block). A in the
// split layout (plugins/cuda/weight_layout.h, the weights buffer type) takes
// the same paths through gemv_split.h: its own GEMV, its own
// dequantization, and the exact kernel over rebuilt blocks.
#include <cuda_fp16.h>

#include <algorithm>

#include "act_cache.h"
#include "act_quant.cuh"
#include "dequant.cuh"
#include "gemv.cuh"
#include "gemv.h"
#include "gemv_split.cuh"
#include "gemv_split.h"
#include "weight_types.h"
#include "launch.cuh"
#include "ops.h"
#include "tensor.cuh"

#include "../weight_layout.h"
#include "common/glue.h"
#include "common/op_info.h"

namespace loom::cuda {
namespace {

// x: B's column n of batch (i2, i3), contiguous along K.
// Columns n0 + blockIdx.y and batch matrices z0 + blockIdx.z (launches are
// split where B exceeds the grid's y / z limits).
// split: A in the split layout (one 2-D matrix; its blocks rebuilt).
__global__ void gemv_exact_kernel(TArg dst, TArg a, TArg b, int64_t n0, int64_t z0, bool split) {
  const int lane = threadIdx.x % kWarp;
  const int64_t m = blockIdx.x * static_cast<int64_t>(kGemvWarps) + threadIdx.x / kWarp;
  const int64_t n = n0 + blockIdx.y;
  const int64_t z = z0 + blockIdx.z;
  const int64_t i2 = z % b.ne[2], i3 = z / b.ne[2];
  if (m >= a.ne[1]) return;
  const int64_t a2 = i2 / (b.ne[2] / a.ne[2]), a3 = i3 / (b.ne[3] / a.ne[3]);
  const uint8_t* arow = a.data + m * a.nb[1] + a2 * a.nb[2] + a3 * a.nb[3];
  const float* x = reinterpret_cast<const float*>(b.data + n * b.nb[1] + i2 * b.nb[2] + i3 * b.nb[3]);
  const int64_t nblk = a.ne[0] / 32;
  float acc = split ? split_exact_lane_sum(a.type, a.data, a.nelements() / 32, m * nblk, nblk, x, lane)
                    : gemv_lane_sum(a.type, arow, a.nb[0], a.ne[0], x, lane);
  for (int s = kWarp / 2; s > 0; s /= 2) acc += __shfl_down_sync(0xFFFFFFFFu, acc, s);
  if (lane == 0) *reinterpret_cast<float*>(dst.data + m * dst.nb[0] + n * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3]) = acc;
}

// A (all its matrices) to dense f32 [K, M, a2, a3].
__global__ void dequant_kernel(float* out, TArg a) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= a.nelements()) return;
  int64_t i[4];
  a.index(e, i);
  out[e] = row_elem(a.type, a.data + a.offset(0, i[1], i[2], i[3]), i[0], a.nb[0]);
}

// Any source (all its matrices) to dense F16 [ne0, ne1, ne2, ne3], each
// element rounded to nearest even (A dequantized first; B's f32 as given).
__global__ void to_half_kernel(__half* out, TArg t) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= t.nelements()) return;
  int64_t i[4];
  t.index(e, i);
  out[e] = __float2half_rn(row_elem(t.type, t.data + t.offset(0, i[1], i[2], i[3]), i[0], t.nb[0]));
}

// B to dense f32 when its rows are not contiguous.
__global__ void dense_kernel(float* out, TArg b) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= b.nelements()) return;
  int64_t i[4];
  b.index(e, i);
  out[e] = *reinterpret_cast<const float*>(b.data + b.offset(i[0], i[1], i[2], i[3]));
}

unsigned grid_for(int64_t n) { return static_cast<unsigned>((n + kElemThreads - 1) / kElemThreads); }

bool quantized(int32_t type) { return block_shape(type).elems > 1; }

// The suite's condition for rounding B (conformance/matmul_cases.cpp's
// may_round_b): A quantized, B's rows dense f32.
bool rounds_b(const loom_tensor_t* node) {
  const loom_tensor_t* b = node->src[1];
  return quantized(node->src[0]->type) && b->nb[0] == 4 && b->nb[1] % 4 == 0 && b->nb[2] % 4 == 0 && b->nb[3] % 4 == 0;
}

// B as dense f32 [K, N, b2, b3] in `out`: rounded to 8-bit blocks when the
// node rounds B, else copied.
loom_status_t* dense_b(const LaunchContext& ctx, const loom_tensor_t* node, float* out) {
  if (rounds_b(node)) return round_b_f32(ctx, node, out);
  const TArg b = targ(node->src[1]);
  LOOM_LAUNCH(grid_for(b.nelements()), kElemThreads, 0, ctx.stream, dense_kernel)(out, b);
  return launch_status(node, "densify B");
}

loom_status_t* gemm(const LaunchContext& ctx, const loom_tensor_t* node) {
  const TArg a = targ(node->src[0]);
  TArg b = targ(node->src[1]);
  const TArg dst = targ(node);
  const int64_t K = a.ne[0], M = a.ne[1], N = b.ne[1];
  // cuBLAS reads columns at a leading dimension: rows contiguous, apart.
  const bool a_direct = a.type == LOOM_TYPE_F32 && a.nb[0] == 4 && a.nb[1] % 4 == 0 && a.nb[1] >= 4 * K &&
                        a.nb[2] % 4 == 0 && a.nb[3] % 4 == 0;
  const bool b_direct = !rounds_b(node) && b.nb[0] == 4 && b.nb[1] % 4 == 0 && b.nb[1] >= 4 * K &&
                        b.nb[2] % 4 == 0 && b.nb[3] % 4 == 0;
  const size_t a_bytes = a_direct ? 0 : static_cast<size_t>(a.nelements()) * 4;
  const size_t b_bytes = b_direct ? 0 : static_cast<size_t>(b.nelements()) * 4;
  loom_status_t* st = nullptr;
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch->get(a_bytes + b_bytes, &st));
  if (st != nullptr) return st;
  int64_t lda = a.nb[1] / 4, sa2 = a.nb[2] / 4, sa3 = a.nb[3] / 4;
  const float* A = reinterpret_cast<const float*>(a.data);
  if (!a_direct) {
    if (is_split(node->src[0])) {
      st = split_to_f32(ctx, node, reinterpret_cast<float*>(scratch));
    } else {
      LOOM_LAUNCH(grid_for(a.nelements()), kElemThreads, 0, ctx.stream, dequant_kernel)(reinterpret_cast<float*>(scratch), a);
      st = launch_status(node, "dequantize A");
    }
    if (st != nullptr) return st;
    A = reinterpret_cast<const float*>(scratch);
    lda = K;
    sa2 = K * M;
    sa3 = K * M * a.ne[2];
  }
  int64_t ldb = b.nb[1] / 4, sb2 = b.nb[2] / 4, sb3 = b.nb[3] / 4;
  const float* B = reinterpret_cast<const float*>(b.data);
  if (!b_direct) {
    float* dense = reinterpret_cast<float*>(scratch + a_bytes);
    if ((st = dense_b(ctx, node, dense)) != nullptr) return st;
    B = dense;
    ldb = K;
    sb2 = K * N;
    sb3 = K * N * b.ne[2];
  }
  const float one = 1.0f, zero = 0.0f;
  for (int64_t i3 = 0; i3 < b.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < b.ne[2]; ++i2) {
      const int64_t a2 = i2 / (b.ne[2] / a.ne[2]), a3 = i3 / (b.ne[3] / a.ne[3]);
      float* C = reinterpret_cast<float*>(dst.data + i2 * dst.nb[2] + i3 * dst.nb[3]);
      const cublasStatus_t r = ctx.cublas->sgemm(ctx.blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(M), static_cast<int>(N),
                                                 static_cast<int>(K), &one, A + a2 * sa2 + a3 * sa3, static_cast<int>(lda),
                                                 B + i2 * sb2 + i3 * sb3, static_cast<int>(ldb), &zero, C,
                                                 static_cast<int>(dst.nb[1] / 4));
      if (r != CUBLAS_STATUS_SUCCESS) {
        return common::make_status(LOOM_STATUS_INTERNAL, "[cuda.compute] " + std::string(node->name) +
                                                             " (MUL_MAT): cublasSgemm: " + ctx.cublas->status_string(r));
      }
    }
  }
  return nullptr;
}

// The tensor-core GEMM: A's type F16 or quantized (F32 and BF16 A keep the
// SGEMM), cublasGemmEx present and wanted.
bool f16_gemm_applies(const LaunchContext& ctx, const loom_tensor_t* node) {
  const int32_t ta = node->src[0]->type;
  return ctx.f16_gemm && ctx.cublas->gemm_ex != nullptr && (ta == LOOM_TYPE_F16 || quantized(ta));
}

// dst = A^T B per matrix with A and B as F16 (rounded into scratch unless A
// is already dense-rowed F16), f32 accumulation and result.
loom_status_t* gemm_f16(const LaunchContext& ctx, const loom_tensor_t* node) {
  const TArg a = targ(node->src[0]);
  const TArg b = targ(node->src[1]);
  const TArg dst = targ(node);
  const int64_t K = a.ne[0], M = a.ne[1], N = b.ne[1];
  const bool a_direct = a.type == LOOM_TYPE_F16 && a.nb[0] == 2 && a.nb[1] % 2 == 0 && a.nb[1] >= 2 * K &&
                        a.nb[2] % 2 == 0 && a.nb[3] % 2 == 0;
  // Byte counts kept 256-aligned so B's half of the scratch starts aligned.
  const size_t a_bytes = a_direct ? 0 : (static_cast<size_t>(a.nelements()) * 2 + 255) / 256 * 256;
  const size_t b_bytes = static_cast<size_t>(b.nelements()) * 2;
  loom_status_t* st = nullptr;
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch->get(a_bytes + b_bytes, &st));
  if (st != nullptr) return st;
  int64_t lda = a.nb[1] / 2, sa2 = a.nb[2] / 2, sa3 = a.nb[3] / 2;
  const __half* A = reinterpret_cast<const __half*>(a.data);
  if (!a_direct) {
    if (is_split(node->src[0])) {
      st = split_to_half(ctx, node, reinterpret_cast<__half*>(scratch));
    } else {
      LOOM_LAUNCH(grid_for(a.nelements()), kElemThreads, 0, ctx.stream, to_half_kernel)(reinterpret_cast<__half*>(scratch), a);
      st = launch_status(node, "A to f16");
    }
    if (st != nullptr) return st;
    A = reinterpret_cast<const __half*>(scratch);
    lda = K;
    sa2 = K * M;
    sa3 = K * M * a.ne[2];
  }
  __half* B = reinterpret_cast<__half*>(scratch + a_bytes);
  LOOM_LAUNCH(grid_for(b.nelements()), kElemThreads, 0, ctx.stream, to_half_kernel)(B, b);
  if ((st = launch_status(node, "B to f16")) != nullptr) return st;
  const int64_t ldb = K, sb2 = K * N, sb3 = K * N * b.ne[2];
  const float one = 1.0f, zero = 0.0f;
  for (int64_t i3 = 0; i3 < b.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < b.ne[2]; ++i2) {
      const int64_t a2 = i2 / (b.ne[2] / a.ne[2]), a3 = i3 / (b.ne[3] / a.ne[3]);
      float* C = reinterpret_cast<float*>(dst.data + i2 * dst.nb[2] + i3 * dst.nb[3]);
      const cublasStatus_t r = ctx.cublas->gemm_ex(
          ctx.blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), &one,
          A + a2 * sa2 + a3 * sa3, CUDA_R_16F, static_cast<int>(lda), B + i2 * sb2 + i3 * sb3, CUDA_R_16F,
          static_cast<int>(ldb), &zero, C, CUDA_R_32F, static_cast<int>(dst.nb[1] / 4), CUBLAS_COMPUTE_32F,
          CUBLAS_GEMM_DEFAULT);
      if (r != CUBLAS_STATUS_SUCCESS) {
        return common::make_status(LOOM_STATUS_INTERNAL, "[cuda.compute] " + std::string(node->name) +
                                                             " (MUL_MAT): cublasGemmEx: " + ctx.cublas->status_string(r));
      }
    }
  }
  return nullptr;
}

// Every batch size without cuBLAS, on the per-block kernel: B densified
// (or rounded) into scratch unless it is already dense f32 and not rounded.
loom_status_t* gemv_exact(const LaunchContext& ctx, const loom_tensor_t* node) {
  const TArg b = targ(node->src[1]);
  TArg bx = b;
  if (node->src[1]->nb[0] != 4 || rounds_b(node)) {
    loom_status_t* st = nullptr;
    float* dense = static_cast<float*>(ctx.scratch->get(static_cast<size_t>(b.nelements()) * 4, &st));
    if (st != nullptr) return st;
    if ((st = dense_b(ctx, node, dense)) != nullptr) return st;
    bx.data = reinterpret_cast<uint8_t*>(dense);
    bx.nb[0] = 4;
    bx.nb[1] = 4 * b.ne[0];
    bx.nb[2] = bx.nb[1] * b.ne[1];
    bx.nb[3] = bx.nb[2] * b.ne[2];
  }
  constexpr int64_t kMaxGridYZ = 65535;
  const int64_t rows = (node->src[0]->ne[1] + kGemvWarps - 1) / kGemvWarps, mats = b.ne[2] * b.ne[3];
  if (rows > 0x7FFFFFFF) return launch_status(node, "gemv: too many rows");
  for (int64_t z0 = 0; z0 < mats; z0 += kMaxGridYZ) {
    for (int64_t n0 = 0; n0 < b.ne[1]; n0 += kMaxGridYZ) {
      const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(std::min(kMaxGridYZ, b.ne[1] - n0)),
                      static_cast<unsigned>(std::min(kMaxGridYZ, mats - z0)));
      LOOM_LAUNCH(grid, kGemvWarps * kWarp, 0, ctx.stream, gemv_exact_kernel)(targ(node), targ(node->src[0]), bx, n0, z0,
                                                                      is_split(node->src[0]));
      if (loom_status_t* st = launch_status(node, "gemv kernel")) return st;
    }
  }
  return nullptr;
}

// B's 8-bit blocks: the ones the previous MUL_MAT of this graph made when
// it read the same B (act_cache.h), else quantized now into the stream's
// act scratch and kept.
loom_status_t* quantized_b(const LaunchContext& ctx, const loom_tensor_t* node, ActQ8* act) {
  const loom_tensor_t* b = node->src[1];
  const int block = act_block_elems(node->src[0]->type);
  Scratch* buf = ctx.act_scratch != nullptr ? ctx.act_scratch : ctx.scratch;
  ActCache* cache = ctx.act_scratch != nullptr ? ctx.act_cache : nullptr;
  if (cache != nullptr && cache->find(b, block, buf->generation(), act)) return nullptr;
  loom_status_t* st = nullptr;
  uint8_t* mem = static_cast<uint8_t*>(buf->get(act_q8_bytes(node->src[0]->type, b), &st));
  if (st != nullptr) return st;
  if ((st = quantize_b(ctx, node, mem, act)) != nullptr) return st;
  if (cache != nullptr) cache->store(b, block, buf->generation(), *act);
  return nullptr;
}

// The GEMV of A's type (one switch over weight_types.h's list).
loom_status_t* gemv_typed(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8* act) {
  return with_weight_type(
      node->src[0]->type, [&](auto t) { return launch_gemv_typed<decltype(t)::value>(ctx, node, act); },
      [&] {
        return common::make_status(LOOM_STATUS_INTERNAL,
                                   "[cuda.compute] " + common::describe_node(node) + ": no GEMV for its type");
      });
}

}  // namespace

namespace {

enum class MulMatPath { kBlas, kTensorCore, kGemvQuant, kGemvFloat, kExact };

MulMatPath mul_mat_path(const LaunchContext& ctx, const loom_tensor_t* node) {
  const loom_tensor_t* a = node->src[0];
  const bool use_blas = ctx.cublas != nullptr && ctx.cublas->ok() && ctx.blas != nullptr &&
                        node->src[1]->ne[1] > kGemvMaxCols && a->ne[0] <= 0x7FFFFFFF && a->ne[1] <= 0x7FFFFFFF;
  if (use_blas) return MulMatPath::kBlas;
  if (ctx.tc_gemm && gemm_tc_fits(node)) return MulMatPath::kTensorCore;
  if (rounds_b(node) && (is_split(a) || gemv_quant_fits(a))) return MulMatPath::kGemvQuant;
  if (!quantized(a->type) && gemv_float_fits(node)) return MulMatPath::kGemvFloat;
  return MulMatPath::kExact;
}

}  // namespace

bool gemv_takes(const LaunchContext& ctx, const loom_tensor_t* node) {
  const MulMatPath p = mul_mat_path(ctx, node);
  return p == MulMatPath::kGemvQuant || p == MulMatPath::kGemvFloat;
}

bool gemv_reads_b(const LaunchContext& ctx, const loom_tensor_t* node) {
  return mul_mat_path(ctx, node) != MulMatPath::kGemvQuant;
}

loom_status_t* launch_mul_mat(const LaunchContext& ctx, const loom_tensor_t* node) {
  if (targ(node).nelements() == 0) return nullptr;
  const MulMatPath path = mul_mat_path(ctx, node);
  if ((ctx.fused_add != nullptr || ctx.gemv_peers[0] != nullptr) && path != MulMatPath::kGemvQuant &&
      path != MulMatPath::kGemvFloat) {
    return common::make_status(LOOM_STATUS_INTERNAL, "[cuda.compute] " + common::describe_node(node) +
                                                         ": a fused ADD or product beside a product that runs no GEMV");
  }
  switch (path) {
    case MulMatPath::kBlas: return f16_gemm_applies(ctx, node) ? gemm_f16(ctx, node) : gemm(ctx, node);
    case MulMatPath::kTensorCore: return launch_gemm_tc(ctx, node);
    case MulMatPath::kGemvQuant: {
      ActQ8 act{};
      if (loom_status_t* st = quantized_b(ctx, node, &act)) return st;
      return is_split(node->src[0]) ? launch_gemv_split(ctx, node, act) : gemv_typed(ctx, node, &act);
    }
    case MulMatPath::kGemvFloat: return gemv_typed(ctx, node, nullptr);
    case MulMatPath::kExact: break;
  }
  return gemv_exact(ctx, node);
}

}  // namespace loom::cuda
