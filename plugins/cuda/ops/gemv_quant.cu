// B's 8-bit blocks (act_quant.cuh: a warp per block, lanes take elements
// lane, lane + 32, ...) and the GEMVs of the 32-element weight types (Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) on them (gemv_kernel.cuh).
#include "act_quant.cuh"
#include "dequant.cuh"
#include "gemv_kernel.cuh"

namespace loom::cuda {
namespace {

constexpr int kQuantWarps = 8;

// One warp per activation block of `block` elements of column col (n + N *
// (i2 + b2 * i3)). kToF32: write d * q as f32 [K, cols] instead of the
// quants and scales.
template <bool kToF32>
__global__ void quantize_b_kernel(TArg b, int block, int64_t total, int8_t* qs, float* ds, float* f32) {
  const int64_t id = blockIdx.x * static_cast<int64_t>(kQuantWarps) + threadIdx.x / kWarp;
  if (id >= total) return;
  const int lane = threadIdx.x % kWarp;
  const int64_t k = b.ne[0], per_col = k / block, col = id / per_col, kb = id % per_col;
  const int64_t n = col % b.ne[1], z = col / b.ne[1];
  const float* x = reinterpret_cast<const float*>(b.data + n * b.nb[1] + (z % b.ne[2]) * b.nb[2] +
                                                  (z / b.ne[2]) * b.nb[3]) + kb * block;
  float v[8];
  float amax = 0.0f;
  bool nan = false;
  const int per_lane = block / kWarp;
  for (int j = 0; j < per_lane; ++j) {
    v[j] = x[lane + kWarp * j];
    amax = fmaxf(amax, fabsf(v[j]));
    nan = nan || v[j] != v[j];
  }
  for (int s = kWarp / 2; s > 0; s /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, s));
  nan = __any_sync(0xFFFFFFFFu, nan);
  const float inv = act_inverse(amax / 127.0f), d = act_scale(amax, nan);
  const int64_t base = col * k + kb * block;
  for (int j = 0; j < per_lane; ++j) {
    const int8_t q = act_quant(v[j], inv);
    if (kToF32) {
      f32[base + lane + kWarp * j] = d * static_cast<float>(q);
    } else {
      qs[base + lane + kWarp * j] = q;
    }
  }
  if (!kToF32 && lane == 0) ds[id] = d;
}

int64_t b_columns(const loom_tensor_t* b) { return b->ne[1] * b->ne[2] * b->ne[3]; }

template <bool kToF32>
loom_status_t* run_quantize(const LaunchContext& ctx, const loom_tensor_t* node, int8_t* qs, float* ds, float* f32) {
  const loom_tensor_t* b = node->src[1];
  const int block = act_block_elems(node->src[0]->type);
  const int64_t total = b_columns(b) * (b->ne[0] / block);
  if (total == 0) return nullptr;
  const unsigned grid = static_cast<unsigned>((total + kQuantWarps - 1) / kQuantWarps);
  LOOM_LAUNCH(grid, kQuantWarps * kWarp, 0, ctx.stream, quantize_b_kernel<kToF32>)(targ(b), block, total, qs, ds, f32);
  return launch_status(node, "quantize B");
}

size_t align16(size_t n) { return (n + 15) / 16 * 16; }

}  // namespace

size_t act_q8_bytes(int type, const loom_tensor_t* b) {
  const size_t cols = static_cast<size_t>(b_columns(b)), k = static_cast<size_t>(b->ne[0]);
  return align16(cols * k) + cols * (k / static_cast<size_t>(act_block_elems(type))) * sizeof(float);
}

loom_status_t* quantize_b(const LaunchContext& ctx, const loom_tensor_t* node, uint8_t* scratch, ActQ8* out) {
  const loom_tensor_t* b = node->src[1];
  int8_t* qs = reinterpret_cast<int8_t*>(scratch);
  float* ds = reinterpret_cast<float*>(scratch + align16(static_cast<size_t>(b_columns(b) * b->ne[0])));
  out->qs = qs;
  out->d = ds;
  return run_quantize<false>(ctx, node, qs, ds, nullptr);
}

loom_status_t* round_b_f32(const LaunchContext& ctx, const loom_tensor_t* node, float* out) {
  return run_quantize<true>(ctx, node, nullptr, nullptr, out);
}

loom_status_t* quantized_b_in_scratch(const LaunchContext& ctx, const loom_tensor_t* node, ActQ8* act) {
  loom_status_t* st = nullptr;
  uint8_t* mem = static_cast<uint8_t*>(ctx.scratch->get(act_q8_bytes(node->src[0]->type, node->src[1]), &st));
  if (st != nullptr) return st;
  return quantize_b(ctx, node, mem, act);
}

loom_status_t* rounded_b_in_scratch(const LaunchContext& ctx, const loom_tensor_t* node, TArg* b) {
  loom_status_t* st = nullptr;
  float* dense = static_cast<float*>(ctx.scratch->get(static_cast<size_t>(b->nelements()) * 4, &st));
  if (st != nullptr) return st;
  if ((st = round_b_f32(ctx, node, dense)) != nullptr) return st;
  b->data = reinterpret_cast<uint8_t*>(dense);
  b->nb[0] = 4;
  b->nb[1] = 4 * b->ne[0];
  b->nb[2] = b->nb[1] * b->ne[1];
  b->nb[3] = b->nb[2] * b->ne[2];
  return nullptr;
}

bool gemv_quant_fits(const loom_tensor_t* a) {
  // Lane<T> reads 4-byte words where the block size allows, else 2-byte.
  const uintptr_t align = block_shape(a->type).bytes % 4 == 0 ? 4 : 2;
  return reinterpret_cast<uintptr_t>(a->data) % align == 0 && a->nb[1] % align == 0 && a->nb[2] % align == 0 &&
         a->nb[3] % align == 0;
}

#define LOOM_QUANT_GEMV(T)                                                                                \
  template <>                                                                                             \
  loom_status_t* launch_gemv_typed<T>(const LaunchContext& ctx, const loom_tensor_t* node, const ActQ8* act) { \
    return launch_quant_kernels<T>(ctx, node, *act);                                                      \
  }
LOOM_QUANT_GEMV(LOOM_TYPE_Q8_0)
LOOM_QUANT_GEMV(LOOM_TYPE_Q4_0)
LOOM_QUANT_GEMV(LOOM_TYPE_Q4_1)
LOOM_QUANT_GEMV(LOOM_TYPE_Q5_0)
LOOM_QUANT_GEMV(LOOM_TYPE_Q5_1)
LOOM_QUANT_GEMV(LOOM_TYPE_IQ4_NL)

}  // namespace loom::cuda
