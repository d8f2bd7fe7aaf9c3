// MUL_MAT on the blas device: every A type, odd sizes, broadcast over dims 2
// and 3, strided A and B, against a double-precision reference and against
// the cpu plugin's result for the same graph.
#include <cmath>

#include "blas_test_util.hpp"
#include "loom/runtime/ops.hpp"

namespace loom::blastest {
namespace {

using optest::expect_close;
using optest::for_each_index;
using optest::layout_name;
using optest::layouts_for;
using optest::shape_str;
using optest::type_str;
using optest::unwrap;

const loom_type_t kFloatTypes[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16};
const loom_type_t kQuantTypes[] = {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};
const loom_type_t kATypes[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0,
                               LOOM_TYPE_Q4_0};
const int64_t kMN[] = {1, 3, 17, 64};

struct MatCase {
  int64_t k, m, n;
  int64_t a2 = 1, a3 = 1, b2 = 1, b3 = 1;
};

// Reference and tolerance of one MUL_MAT from the host mirrors. A's decoded
// values are exact in f32 for every A type, so the only error is f32
// accumulation: |d| <= 1e-5 * sum_k |a_k b_k| + the op tests' f32 rule.
void reference(const Operand& a, const Operand& b, const MatCase& c, std::vector<double>* ref,
               std::vector<double>* tol) {
  const Shape so{c.m, c.n, c.b2, c.b3};
  const int64_t r2 = c.b2 / c.a2;
  const int64_t r3 = c.b3 / c.a3;
  for_each_index(so, [&](int64_t m, int64_t n, int64_t i2, int64_t i3) {
    double sum = 0.0, mag = 0.0;
    for (int64_t k = 0; k < c.k; ++k) {
      const double p = a.h.at(k, m, i2 / r2, i3 / r3) * b.h.at(k, n, i2, i3);
      sum += p;
      mag += std::fabs(p);
    }
    ref->push_back(sum);
    tol->push_back(1e-5 * mag + optest::tol_for(LOOM_TYPE_F32, sum, mag, c.k));
  });
}

class BlasMatMulTest : public BlasTest {
 protected:
  // One MUL_MAT on cpu then blas; both checked against the reference, and
  // blas against cpu (twice the tolerance: both sides round). With quantized
  // A the cpu plugin's int8 path rounds B to 8 bits (its own op suite checks
  // that); blas keeps f32 B, so only blas is held to the f32 reference then.
  void check(loom_type_t ta, const MatCase& c, Layout la, Layout lb) {
    const Shape sa{c.k, c.m, c.a2, c.a3};
    const Shape sb{c.k, c.n, c.b2, c.b3};
    SCOPED_TRACE("mul_mat " + type_str(ta) + " A " + shape_str(sa) + " " + layout_name(la) +
                 ", B " + shape_str(sb) + " " + layout_name(lb));
    Operand a = make(ta, sa, la);
    Operand b = make(LOOM_TYPE_F32, sb, lb);
    Tensor* out = unwrap(op::mul_mat(ctx_, a.t, b.t), "mul_mat");
    ASSERT_TRUE(blas_->supports_op(out)) << "blas refuses " << out->describe();
    LOOM_ASSERT_OK(run_on(cpu_, {out}));
    const std::vector<double> got_cpu = read(out);
    LOOM_ASSERT_OK(run_on(blas_, {out}));
    const std::vector<double> got = read(out);
    std::vector<double> ref, tol;
    reference(a, b, c, &ref, &tol);
    const Shape so{c.m, c.n, c.b2, c.b3};
    expect_close(got, ref, tol, so, "blas vs reference");
    if (optest::is_quant(ta)) {
      ++n_checked_;
      return;
    }
    expect_close(got_cpu, ref, tol, so, "cpu vs reference");
    std::vector<double> tol2(tol.size());
    for (size_t i = 0; i < tol.size(); ++i) tol2[i] = 2.0 * tol[i];
    expect_close(got, got_cpu, tol2, so, "blas vs cpu");
    ++n_checked_;
  }

  int n_checked_ = 0;
};

TEST_F(BlasMatMulTest, FloatTypesOddSizes) {
  seed(501);
  int i = 0;
  for (loom_type_t t : kFloatTypes) {
    for (int64_t k : {1, 3, 17, 65}) {
      for (int64_t m : kMN) {
        for (int64_t n : kMN) {
          const std::vector<Layout> la = layouts_for(t);
          const std::vector<Layout> lb = layouts_for(LOOM_TYPE_F32);
          check(t, MatCase{k, m, n}, la[i % la.size()], lb[(i / 4 + i) % lb.size()]);
          ++i;
        }
      }
    }
  }
  EXPECT_EQ(n_checked_, 3 * 4 * 16);
}

TEST_F(BlasMatMulTest, QuantizedAOddSizes) {
  seed(502);
  int i = 0;
  for (loom_type_t t : kQuantTypes) {
    for (int64_t k : {32, 64, 96}) {
      for (int64_t m : kMN) {
        for (int64_t n : kMN) {
          const std::vector<Layout> la = layouts_for(t);
          const std::vector<Layout> lb = layouts_for(LOOM_TYPE_F32);
          check(t, MatCase{k, m, n}, la[i % la.size()], lb[(i / 3 + i) % lb.size()]);
          ++i;
        }
      }
    }
  }
  EXPECT_EQ(n_checked_, 2 * 3 * 16);
}

TEST_F(BlasMatMulTest, BroadcastOverDims2And3) {
  seed(503);
  for (loom_type_t t : kATypes) {
    const int64_t k = optest::is_quant(t) ? 64 : 17;
    check(t, MatCase{k, 5, 3, 2, 1, 4, 1}, Layout::kDense, Layout::kDense);     // a2=2, b2=4
    check(t, MatCase{k, 3, 17, 2, 1, 4, 3}, Layout::kDense, Layout::kDense);    // + b3=3 over a3=1
    check(t, MatCase{k, 4, 1, 1, 3, 2, 3}, Layout::kPermuted, Layout::kDense);  // gemv, a2=1
    check(t, MatCase{k, 7, 3, 2, 3, 4, 6}, Layout::kPadded, Layout::kPermuted);
  }
}

TEST_F(BlasMatMulTest, EveryLayoutPair) {
  seed(504);
  for (loom_type_t t : kATypes) {
    const int64_t k = optest::is_quant(t) ? 64 : 33;
    for (Layout la : layouts_for(t)) {
      for (Layout lb : layouts_for(LOOM_TYPE_F32)) {
        check(t, MatCase{k, 4, 3, 1, 2, 2, 2}, la, lb);
        check(t, MatCase{k, 5, 1, 2, 1, 2, 1}, la, lb);  // N == 1: the sgemv path
      }
    }
  }
}

TEST_F(BlasMatMulTest, LargerShapesUseParallelConversion) {
  // M * K >= 2^15 converts A over the device's pool; transposed B is gathered.
  seed(505);
  for (loom_type_t t : kATypes) {
    check(t, MatCase{512, 96, 33}, Layout::kDense, Layout::kDense);
    check(t, MatCase{256, 160, 7}, t == LOOM_TYPE_F32 ? Layout::kTransposed : Layout::kPermuted,
          Layout::kTransposed);
  }
}

}  // namespace
}  // namespace loom::blastest
