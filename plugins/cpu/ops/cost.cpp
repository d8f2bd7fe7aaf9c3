// loom.cost for the CPU plugin: the time of its kernels, calibrated with
// bench/ (loom_ops_bench on a 2-core Zen 4 VM, 2026-11-24; per thread):
//  - int8 path (Q8_0 / Q4_0 weights, LOOM_CPU_INT8_DOT builds): ~50k
//    multiply-adds/us with many columns; with at most 4 columns (decode)
//    bound by reading the weights, ~15 GB/s per thread from memory; on AMX
//    tiles (32+ columns, matmul_amx.cpp) ~100k (loom_ops_bench, 2-core
//    Xeon VM with AMX, 2026-11-29: a 1024-cube Q4_0 product in 5.2-5.6 ms
//    on 2 threads, 10.3-14.3 ms on the AVX-512 kernels);
//  - the ABI 1.2 weight types (K-quants, Q4_1, Q5_0, Q5_1, IQ4_NL) and IQ4_XS on
//    their integer dots (LOOM_CPU_INT8_DOT builds): ~35k multiply-adds/us
//    (Q4_K / Q5_K / Q6_K 55k, Q3_K / IQ4_NL ~35k), decode bound by reading their
//    real bytes (row_size: 4.5 bits per weight for Q4_K, 6.56 for Q6_K);
//  - float weights (LOOM_CPU_GEMM builds): the packed GEMM ~45k
//    multiply-adds/us; the decode GEMV bound by reading the weights;
//  - other float MUL_MAT paths: widening each weight element to f32 (~2000
//    F32 .. 600 Q4_0 elements/us, x2 in AVX builds) plus ~4000 (x2.5)
//    multiply-adds/us; the reference path ~800 multiply-adds/us;
//  - ATTENTION: the (D + Dv) multiply-adds of each key at ~half the GEMV
//    rate (strided cache rows), half the padded KV length visible on
//    average (the real length is data, unseen when planning);
//  - the sparse products: 15% of the weight's rows per column (the active
//    share is data), the rows active in any column read at the decode read
//    rate, or the multiply-adds at the row-dot rate (sparse_us);
//  - GET_ROWS ~1 ns per gathered element; other ops ~1 ns per element.
// Only the ranking against other devices matters.
#include <algorithm>
#include <cmath>

#include "common/type_traits.h"
#include "ops/matmul.h"
#include "ops/matmul_kquant.h"
#include "ops/ops.h"
#include "weight_layout.h"

namespace loom::cpu {
namespace {

#ifdef __AVX__
constexpr double kSpeedup = 2.0;       // widening
constexpr double kMacPerUs = 10000.0;  // row-dot multiply-adds per thread
#else
constexpr double kSpeedup = 1.0;
constexpr double kMacPerUs = 4000.0;
#endif
constexpr double kInt8MacPerUs = 50000.0;   // int8 path, many columns
constexpr double kAmxMacPerUs = 100000.0;   // int8 path on AMX tiles
constexpr double kKquantMacPerUs = 35000.0;  // ABI 1.2 weight types' integer dots, many columns
constexpr double kGemmMacPerUs = 45000.0;   // packed GEMM
constexpr double kReadBytesPerUs = 15000.0;  // weights streamed from memory, per thread

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
        return 600.0;  // Q4_0 and the ABI 1.2 types (baseline build)
    }
  }();
}

bool fast_mul_mat(const loom_tensor_t* node) {
  const loom_tensor_t* b = node->src[1];
  return b->type == LOOM_TYPE_F32 && b->nb[0] == sizeof(float);
}

double weight_bytes(const loom_tensor_t* a) {
  return static_cast<double>(common::row_size(a->type, a->ne[0])) * static_cast<double>(a->ne[1] * a->ne[2] * a->ne[3]);
}

double mul_mat_us(const loom_tensor_t* node, double work, int nth) {
  if (!fast_mul_mat(node)) return work / (800.0 * nth);
  const loom_tensor_t* a = node->src[0];
  const bool decode = node->ne[1] <= 4;
  const double read = weight_bytes(a) / (kReadBytesPerUs * nth);
  if (LOOM_CPU_INT8_DOT && (a->type == LOOM_TYPE_Q8_0 || a->type == LOOM_TYPE_Q4_0)) {
    const bool amx = amx_takes(a->type, nrows(node)) && is_repacked(a);
    return std::max(read, work / ((amx ? kAmxMacPerUs : kInt8MacPerUs) * nth));
  }
  if (LOOM_CPU_INT8_DOT && kquant_type(a->type)) return std::max(read, work / (kKquantMacPerUs * nth));
  const bool float_a = a->type == LOOM_TYPE_F32 || a->type == LOOM_TYPE_F16 || a->type == LOOM_TYPE_BF16;
  if (LOOM_CPU_GEMM && float_a && (decode || node->ne[1] >= kGemmMinN)) {
    return decode ? std::max(read, work / (kMacPerUs * nth)) : work / (kGemmMacPerUs * nth);
  }
  // Each weight row is widened once per (row, batch) slice of the result.
  const double widened = static_cast<double>(a->ne[0]) * static_cast<double>(a->ne[1]) *
                         static_cast<double>(node->ne[2] * node->ne[3]);
  return widened / (widen_per_us(a->type) * nth) + work / (kMacPerUs * nth);
}

// The sparse products (ABI 1.3): which rows are active is data; planned as
// kSparseShare of the weight's rows per column. A column's active rows are
// scattered (no better than streaming the weight at the decode read
// rate); N columns read the rows active in any of them, 1 - (1 - share)^N
// of the weight, each row from memory once (the other columns find it in
// cache); their multiply-adds run at the row-dot rate. Checked against
// LOOM_CPU_PROFILE on the bench models (8 layers, dim 512, ffn 4096, one
// thread, decode, ~13% predicted active): F32 rows 72 us measured / 84
// planned, cols 60 / 84; Q8_0 rows 40 / 32, cols 33 / 32; a [512, 3276]
// F32 cold share 35 / 68; N = 4 on a [512, 3276] weight, 8 in turn, one
// thread: F32 ~170-240 / 214, Q8_0 ~80-95 / 101.
constexpr double kSparseShare = 0.15;
double sparse_us(const loom_tensor_t* node, int nth) {
  const loom_tensor_t* a = node->src[0];
  const double cols = static_cast<double>(node->ne[1]);
  const double rows_read = 1.0 - std::pow(1.0 - kSparseShare, cols);
  const double macs = static_cast<double>(a->ne[0] * a->ne[1]) * cols * kSparseShare;
  return std::max(weight_bytes(a) * rows_read / (kReadBytesPerUs * nth), macs / (kMacPerUs * nth));
}

// GET_ROWS reads only the rows it gathers (work_estimate counts the whole
// table: a token embedding lookup is not a pass over the embeddings).
double get_rows_us(const loom_tensor_t* node) {
  const double n = static_cast<double>(node->ne[0] * node->ne[1] * node->ne[2] * node->ne[3]);
  return n / 1000.0;
}

double attention_us(const loom_tensor_t* node, int nth) {
  const loom_tensor_t* q = node->src[0];
  const double keys = static_cast<double>(q->ne[1] * q->ne[2]) * static_cast<double>(node->src[1]->ne[1]) * 0.5;
  return keys * static_cast<double>(q->ne[0] + node->ne[0]) / (0.5 * kMacPerUs * nth);
}

// MUL_MAT_ID: T tokens each picking U of E experts read, with picks
// spread evenly, E (1 - (1 - U/E)^T) experts' weights; the multiply-adds at
// MUL_MAT's rate for the type (the same kernels run per expert).
double mul_mat_id_us(const loom_tensor_t* node, double work, int nth) {
  const loom_tensor_t* a = node->src[0];
  const double e = static_cast<double>(a->ne[2]);
  const double picks = static_cast<double>(node->ne[1]);
  const double touched = e * (1.0 - std::pow(1.0 - std::min(1.0, picks / e), static_cast<double>(node->ne[2])));
  const double read = weight_bytes(a) / e * touched / (kReadBytesPerUs * nth);
  return std::max(read, work / (kMacPerUs * nth)) + 2.0 * touched;  // + a pool wake per expert
}

}  // namespace

double op_time_us(const loom_tensor_t* node, int threads) {
  if (node == nullptr || node->op == LOOM_OP_NONE || is_view_op(node->op)) return 0.0;
  if (unsupported_reason(node) != nullptr) return -1.0;
  const auto work = static_cast<double>(work_estimate(node));
  const int nth = work < static_cast<double>(parallel_min_work()) ? 1 : std::max(threads, 1);
  const double wake_us = nth > 1 ? 3.0 : 0.5;  // waking the pool vs the calling thread alone
  if (node->op == LOOM_OP_MUL_MAT) return wake_us + mul_mat_us(node, work, nth);
  if (node->op == LOOM_OP_MUL_MAT_ID) return wake_us + mul_mat_id_us(node, work, nth);
  if (node->op == LOOM_OP_ATTENTION) return wake_us + attention_us(node, std::max(threads, 1));
  if (node->op == LOOM_OP_MUL_MAT_SPARSE_ROWS || node->op == LOOM_OP_MUL_MAT_SPARSE_COLS) {
    return wake_us + sparse_us(node, nth);
  }
  if (node->op == LOOM_OP_GET_ROWS) return 0.5 + get_rows_us(node);
  return wake_us + work / (1000.0 * nth);
}

}  // namespace loom::cpu
