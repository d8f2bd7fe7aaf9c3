// loom.cost for the BLAS plugin: a fixed call overhead, the conversion of a
// non-F32 (or non-contiguous) weight to F32 scratch, then sgemm, bound by
// either its arithmetic or reading the F32 weight. Calibrated with bench/
// (loom_ops_bench, OpenBLAS 0.3.21 on a 2-core Debian VM, 2026-11-23:
// ~35 G multiply-adds/s per thread at N >= 64, ~18 GB/s reading the weight
// at N = 1). Only the ranking against other devices matters: decode-size
// products of quantized weights come out slower than the CPU plugin's,
// prefill-size ones far faster.
#include <algorithm>

#include "ops.h"

namespace loom::blas {

double op_time_us(const loom_tensor_t* node, int threads) {
  if (node == nullptr || node->op == LOOM_OP_NONE || is_view_op(node->op)) return 0.0;
  if (unsupported_reason(node) != nullptr) return -1.0;
  const loom_tensor_t* a = node->src[0];
  const double nth = std::max(threads, 1);
  const double m = static_cast<double>(node->ne[0]);
  const double n = static_cast<double>(node->ne[1]);
  const double k = static_cast<double>(a->ne[0]);
  const double batches = static_cast<double>(node->ne[2] * node->ne[3]);
  const double a_elems = static_cast<double>(a->ne[0] * a->ne[1] * a->ne[2] * a->ne[3]);
  constexpr double kCallUs = 10.0;                 // per node: thread hand-off, sgemm setup
  constexpr double kConvertPerThreadPerUs = 500.0;  // elements dequantized/gathered
  constexpr double kMacPerThreadPerUs = 35e3;
  constexpr double kReadBytesPerUs = 18e3;
  const bool dense_f32 = a->type == LOOM_TYPE_F32 && a->nb[0] == 4 &&
                         a->nb[1] == static_cast<size_t>(a->ne[0]) * 4;
  const double convert = dense_f32 ? 0.0 : a_elems / (kConvertPerThreadPerUs * nth);
  const double gemm = std::max(m * n * k * batches / (kMacPerThreadPerUs * nth), 4.0 * m * k * batches / kReadBytesPerUs);
  return kCallUs + convert + gemm;
}

}  // namespace loom::blas
