// loom.cost for the CPU plugin: the time of its plain kernels, calibrated
// with bench/ (loom_ops_bench on a 2-core Debian VM, 2026-11-23: MUL_MAT at
// ~0.8 G multiply-adds/s per thread for every weight type, other ops about
// 1 ns per element). Only the ranking against other devices matters.
#include <algorithm>

#include "ops.h"

namespace loom::cpu {

double op_time_us(const loom_tensor_t* node, int threads) {
  if (node == nullptr || node->op == LOOM_OP_NONE || is_view_op(node->op)) return 0.0;
  if (unsupported_reason(node) != nullptr) return -1.0;
  const auto work = static_cast<double>(work_estimate(node));
  const int nth = work < static_cast<double>(parallel_min_work()) ? 1 : std::max(threads, 1);
  const double per_thread_per_us = node->op == LOOM_OP_MUL_MAT ? 800.0 : 1000.0;
  const double wake_us = nth > 1 ? 3.0 : 0.5;  // waking the pool vs the calling thread alone
  return wake_us + work / (per_thread_per_us * nth);
}

}  // namespace loom::cpu
