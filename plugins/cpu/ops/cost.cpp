// loom.cost for the CPU plugin: the time of its kernels, calibrated with
// bench/ (loom_ops_bench, 2 threads on a 2-core Debian VM, 2026-11-23).
// MUL_MAT's fast path (B rows contiguous f32): widening each weight element
// to f32 (per thread: ~2000/us for F32, 1500 for F16/BF16, 1200 for Q8_0,
// 600 for Q4_0 — what bounds decode) plus ~4000 multiply-adds/us; the
// reference path ~800 multiply-adds/us. Other ops ~1 ns per element. The
// AVX2 variant (this file compiled with -mavx2) widens ~2x and multiplies
// ~2.5x faster, and runs Q8_0 / Q4_0 times at most 4 columns without
// widening (dequantized inside the dot): ~6000 multiply-adds/us per thread.
// Only the ranking against other devices matters.
#include <algorithm>

#include "ops.h"

namespace loom::cpu {
namespace {

#ifdef __AVX__
constexpr double kSpeedup = 2.0;       // widening
constexpr double kMacPerUs = 10000.0;  // fast-path multiply-adds per thread
#else
constexpr double kSpeedup = 1.0;
constexpr double kMacPerUs = 4000.0;
#endif
constexpr double kInt8MacPerUs = 12000.0;  // Q8_0 / Q4_0 A on the int8 path (LOOM_CPU_INT8_DOT)

double widen_per_us(int32_t type) {
  return kSpeedup * [&] {
    switch (type) {
      case LOOM_TYPE_F32:
        return 2000.0;
      case LOOM_TYPE_F16:
      case LOOM_TYPE_BF16:
        return 1500.0;
      case LOOM_TYPE_Q8_0:
        return 1200.0;
      default:
        return 600.0;  // Q4_0
    }
  }();
}

bool fast_mul_mat(const loom_tensor_t* node) {
  const loom_tensor_t* b = node->src[1];
  return b->type == LOOM_TYPE_F32 && b->nb[0] == sizeof(float);
}

}  // namespace

double op_time_us(const loom_tensor_t* node, int threads) {
  if (node == nullptr || node->op == LOOM_OP_NONE || is_view_op(node->op)) return 0.0;
  if (unsupported_reason(node) != nullptr) return -1.0;
  const auto work = static_cast<double>(work_estimate(node));
  const int nth = work < static_cast<double>(parallel_min_work()) ? 1 : std::max(threads, 1);
  const double wake_us = nth > 1 ? 3.0 : 0.5;  // waking the pool vs the calling thread alone
  if (node->op == LOOM_OP_MUL_MAT) {
    if (!fast_mul_mat(node)) return wake_us + work / (800.0 * nth);
    const loom_tensor_t* a = node->src[0];
    if (LOOM_CPU_INT8_DOT && (a->type == LOOM_TYPE_Q8_0 || a->type == LOOM_TYPE_Q4_0))
      return wake_us + work / (kInt8MacPerUs * nth);
    // Each weight row is widened once per (row, batch) slice of the result.
    const double widened = static_cast<double>(a->ne[0]) * static_cast<double>(a->ne[1]) *
                           static_cast<double>(node->ne[2] * node->ne[3]);
    return wake_us + widened / (widen_per_us(a->type) * nth) + work / (kMacPerUs * nth);
  }
  return wake_us + work / (1000.0 * nth);
}

}  // namespace loom::cpu
