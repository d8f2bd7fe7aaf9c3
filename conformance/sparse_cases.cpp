// MUL_MAT_SPARSE_ROWS and MUL_MAT_SPARSE_COLS (ABI 1.3) against the dense
// product on masked data: every weight type MUL_MAT takes, decode (1
// column) and prefill (several), dense and strided weights, activations and
// scores, F32 and F16 scores, all / none / some rows active, 1 vs 3 threads.
// Inactive outputs of the row-sparse product must be exactly 0.
#include <cmath>

#include "loom/runtime/ops.hpp"
#include "conformance/matmul_ref.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

struct SparseCase {
  int64_t k, m, n;  // rows: A [k, m]; cols: W [m, k] (k neurons of m outputs)
  float threshold;  // scores are uniform in [-1, 1)
};

class SparseMatMulTest : public OpTest {
 protected:
  // Row-sparse: A [K, M] in layout la, B [K, N] in lb, scores [M, N].
  void check_rows(loom_type_t ta, const SparseCase& c, Layout la, Layout lb, loom_type_t ts) {
    LOOM_TRACE("mul_mat_sparse_rows " + type_str(ta) + " A " + shape_str({c.k, c.m, 1, 1}) + " " +
               layout_name(la) + ", B N " + std::to_string(c.n) + " " + layout_name(lb) + ", scores " +
               type_str(ts) + " > " + std::to_string(c.threshold));
    Operand a = make(ta, {c.k, c.m, 1, 1}, la);
    Operand b = make(LOOM_TYPE_F32, {c.k, c.n, 1, 1}, lb);
    Operand s = make(ts, {c.m, c.n, 1, 1}, Layout::kDense);
    Tensor* out = unwrap(op::mul_mat_sparse_rows(ctx_, a.t, b.t, s.t, c.threshold), "mul_mat_sparse_rows");
    LOOM_ASSERT_OK(run_threads({out}));
    auto reference = [&](bool q8, std::vector<double>* ref, std::vector<double>* tol) {
      ref->clear();
      tol->clear();
      for (int64_t n = 0; n < c.n; ++n) {
        const std::vector<double> bq = q8 ? q8_column(b.h, n, 0, 0, act_block(ta)) : std::vector<double>();
        for (int64_t m = 0; m < c.m; ++m) {
          double sum = 0.0, mag = 0.0;
          if (s.h.at(m, n) > c.threshold) {
            for (int64_t k = 0; k < c.k; ++k) {
              const double p = a.h.at(k, m) * (q8 ? bq[static_cast<size_t>(k)] : b.h.at(k, n));
              sum += p;
              mag += std::fabs(p);
            }
          }
          ref->push_back(sum);
          tol->push_back(tol_for(LOOM_TYPE_F32, sum, mag, c.k));
        }
      }
    };
    std::vector<double> ref, tol;
    const bool may_round = may_round_b(ta, b.t);
    reference(may_round && act_q8_ == ActQ8::kRounded, &ref, &tol);
    const std::vector<double> got = read(out);
    if (may_round && act_q8_ == ActQ8::kEither && count_mismatches(got, ref, tol) > 0) reference(true, &ref, &tol);
    expect_close(got, ref, tol, {c.m, c.n, 1, 1}, "mul_mat_sparse_rows result");
    int64_t nonzero_inactive = 0;
    for (int64_t n = 0; n < c.n; ++n) {
      for (int64_t m = 0; m < c.m; ++m) {
        if (!(s.h.at(m, n) > c.threshold) && got[static_cast<size_t>(n * c.m + m)] != 0.0) ++nonzero_inactive;
      }
    }
    LOOM_EXPECT_EQ(nonzero_inactive, 0) << "inactive rows must be exactly 0";
  }

  // Column-sparse: W [M, K] in layout lw, H [K, N] in lh, scores [K, N].
  void check_cols(loom_type_t tw, const SparseCase& c, Layout lw, Layout lh, loom_type_t ts) {
    LOOM_TRACE("mul_mat_sparse_cols " + type_str(tw) + " W " + shape_str({c.m, c.k, 1, 1}) + " " +
               layout_name(lw) + ", H N " + std::to_string(c.n) + " " + layout_name(lh) + ", scores " +
               type_str(ts) + " > " + std::to_string(c.threshold));
    Operand w = make(tw, {c.m, c.k, 1, 1}, lw);
    Operand h = make(LOOM_TYPE_F32, {c.k, c.n, 1, 1}, lh);
    Operand s = make(ts, {c.k, c.n, 1, 1}, Layout::kDense);
    Tensor* out = unwrap(op::mul_mat_sparse_cols(ctx_, w.t, h.t, s.t, c.threshold), "mul_mat_sparse_cols");
    LOOM_ASSERT_OK(run_threads({out}));
    // The dense product W^T (H masked).
    std::vector<double> ref, tol;
    for (int64_t n = 0; n < c.n; ++n) {
      for (int64_t m = 0; m < c.m; ++m) {
        double sum = 0.0, mag = 0.0;
        for (int64_t k = 0; k < c.k; ++k) {
          const double hk = s.h.at(k, n) > c.threshold ? h.h.at(k, n) : 0.0;
          const double p = w.h.at(m, k) * hk;
          sum += p;
          mag += std::fabs(p);
        }
        ref.push_back(sum);
        tol.push_back(tol_for(LOOM_TYPE_F32, sum, mag, c.k));
      }
    }
    expect_close(read(out), ref, tol, {c.m, c.n, 1, 1}, "mul_mat_sparse_cols result");
  }
};

LOOM_CASE(SparseMatMulTest, RowsEveryWeightType) {
  seed(1601);
  int i = 0;
  for (loom_type_t t : kMulMatWeightTypes) {
    const int64_t kb = block_elems(t) > 1 ? block_elems(t) : 48;
    const SparseCase cases[] = {{kb, 37, 1, 0.6f}, {2 * kb, 20, 3, 0.2f}, {kb, 9, 6, -2.0f}, {kb, 5, 2, 2.0f}};
    for (const SparseCase& c : cases) {
      const std::vector<Layout> la = layouts_for(t);
      const std::vector<Layout> lb = layouts_for(LOOM_TYPE_F32);
      check_rows(t, c, Layout::kDense, Layout::kDense, LOOM_TYPE_F32);
      check_rows(t, c, la[1 % la.size()], lb[1 + i % 3], i % 2 ? LOOM_TYPE_F16 : LOOM_TYPE_F32);
      ++i;
    }
  }
}

LOOM_CASE(SparseMatMulTest, ColsEveryWeightType) {
  seed(1602);
  int i = 0;
  for (loom_type_t t : kMulMatWeightTypes) {
    const int64_t mb = block_elems(t) > 1 ? block_elems(t) : 40;
    // For the 32-blocks m = 23 blocks: past one 512-output slice of the cpu
    // kernel, and (Q8_0 / Q4_0: 128-output slices) a last slice of 3 blocks,
    // one register group of 2 and a single block with AVX2, single blocks
    // with AVX-512 (groups of 4).
    const SparseCase cases[] = {{53, mb, 1, 0.6f}, {20, mb * (mb == 32 ? 23 : 2), 3, 0.2f}, {9, mb, 5, -2.0f},
                                {7, mb, 2, 2.0f}};
    for (const SparseCase& c : cases) {
      const std::vector<Layout> lw = layouts_for(t);
      const std::vector<Layout> lh = layouts_for(LOOM_TYPE_F32);
      check_cols(t, c, Layout::kDense, Layout::kDense, LOOM_TYPE_F32);
      check_cols(t, c, lw[1 % lw.size()], lh[1 + i % 3], i % 2 ? LOOM_TYPE_F16 : LOOM_TYPE_F32);
      ++i;
    }
  }
}

LOOM_CASE(SparseMatMulTest, DecodeSizedFfn) {
  // An FFN of 256 -> 1024 -> 256 at ~90% sparsity, one token and four.
  seed(1603);
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_K}) {
    for (int64_t n : {1, 4}) {
      check_rows(t, {256, 1024, n, 0.8f}, Layout::kDense, Layout::kDense, LOOM_TYPE_F32);
      check_cols(t, {1024, 256, n, 0.8f}, Layout::kDense, Layout::kDense, LOOM_TYPE_F32);
    }
  }
}

}  // namespace
}  // namespace loom::conformance
