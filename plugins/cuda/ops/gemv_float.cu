// The GEMV of float weights (F32, F16, BF16): a lane takes 8 consecutive
// elements of A's row per step in one 16-byte load (two for F32), widens
// them to f32 (half2 -> float2 pairs for F16) and multiplies in f32 against
// each column's 8 values of B (two float4 loads). B stays f32: the suite's
// f32 tolerance for float A leaves no room for half products. Arithmetic
// per lane: gemv_lane.cuh's float_lane_sum, which the host test replays.
#include "gemv_kernel.cuh"

namespace loom::cuda {
namespace {

template <int T, int NC>
__global__ void __launch_bounds__(kGemvWarps * 32) gemv_float_kernel(GemvGroup grp, TArg b, int64_t b2, int64_t b3,
                                                                     int64_t n0, int64_t z0, AddEpilogue epi) {
  constexpr int kSize = T == LOOM_TYPE_F32 ? 4 : 2;
  TArg a, dst;
  int64_t bx;
  gemv_member_args(grp, &a, &dst, &bx);
  GemvPos p;
  if (!gemv_pos<NC>(a, b.ne[1], b2, b3, n0, z0, bx, &p)) return;
  const int lane = threadIdx.x % kWarp;
  const int64_t k = a.ne[0];
  // Columns past the group's last (c >= ncols) read the last one and are
  // never stored: no branch in the loop, so the unrolled steps' loads are
  // all in flight before the first product needs them.
  const uint8_t* bcol[NC];
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    bcol[c] = b.data + p.i2 * b.nb[2] + p.i3 * b.nb[3] + (p.c0 + (c < p.ncols ? c : p.ncols - 1)) * b.nb[1];
  }
  float acc[NC];
#pragma unroll
  for (int c = 0; c < NC; ++c) acc[c] = 0.0f;
#pragma unroll 4
  for (int64_t e = 8 * lane; e < k; e += 8 * kWarp) {
    float v[8];
    load8<T>(p.arow + e * kSize, v);
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      float x[8];
      load8<LOOM_TYPE_F32>(bcol[c] + e * 4, x);
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) s += v[i] * x[i];
      acc[c] += s;
    }
  }
  gemv_store<NC>(acc, dst, p.m, p.c0, p.ncols, p.i2, p.i3, epi);
}

template <int T>
loom_status_t* launch_float(const LaunchContext& ctx, const loom_tensor_t* node) {
  const TArg b = targ(node->src[1]);
  return launch_gemv_grids(ctx, node, "gemv kernel",
                           [&](auto nc, dim3 grid, const GemvGroup& grp, int64_t n0, int64_t z0, const AddEpilogue& epi) {
                             LOOM_LAUNCH(grid, kGemvWarps * kWarp, 0, ctx.stream, gemv_float_kernel<T, decltype(nc)::value>)(grp, b, b.ne[2], b.ne[3], n0, z0, epi);
                           });
}

bool aligned16(const loom_tensor_t* t) {
  return reinterpret_cast<uintptr_t>(t->data) % 16 == 0 && t->nb[1] % 16 == 0 && t->nb[2] % 16 == 0 &&
         t->nb[3] % 16 == 0;
}

}  // namespace

bool gemv_float_fits(const loom_tensor_t* node) {
  const loom_tensor_t* a = node->src[0];
  const loom_tensor_t* b = node->src[1];
  const size_t size = a->type == LOOM_TYPE_F32 ? 4 : 2;
  return a->nb[0] == size && b->nb[0] == 4 && a->ne[0] % 8 == 0 && aligned16(a) && aligned16(b);
}

#define LOOM_FLOAT_GEMV(T)                                                                                \
  template <>                                                                                             \
  loom_status_t* launch_gemv_typed<T>(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8*) { \
    return launch_float<T>(ctx, node);                                                                    \
  }
LOOM_FLOAT_GEMV(LOOM_TYPE_F32)
LOOM_FLOAT_GEMV(LOOM_TYPE_F16)
LOOM_FLOAT_GEMV(LOOM_TYPE_BF16)

}  // namespace loom::cuda
