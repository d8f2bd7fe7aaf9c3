// MUL_MAT: A in F32/F16/BF16/Q8_0/Q4_0, B F32, broadcast over dims 2 and 3,
// odd sizes, strided A and B, 1 vs 3 threads.
#include "loom/ops.hpp"
#include "op_test_util.hpp"

namespace loom::optest {
namespace {

const loom_type_t kATypes[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};

struct MatCase {
  int64_t k, m, n;
  int64_t a2, a3, b2, b3;
};

class MatMulTest : public OpTest {
 protected:
  void check(loom_type_t ta, const MatCase& c, Layout la, Layout lb) {
    const Shape sa{c.k, c.m, c.a2, c.a3};
    const Shape sb{c.k, c.n, c.b2, c.b3};
    SCOPED_TRACE("mul_mat " + type_str(ta) + " A " + shape_str(sa) + " " + layout_name(la) + ", B " +
                 shape_str(sb) + " " + layout_name(lb));
    Operand a = make(ta, sa, la);
    Operand b = make(LOOM_TYPE_F32, sb, lb);
    Tensor* out = unwrap(op::mul_mat(ctx_, a.t, b.t), "mul_mat");
    LOOM_ASSERT_OK(run_threads({out}));
    const Shape so{c.m, c.n, c.b2, c.b3};
    const int64_t r2 = c.b2 / c.a2;
    const int64_t r3 = c.b3 / c.a3;
    std::vector<double> ref, tol;
    for_each_index(so, [&](int64_t m, int64_t n, int64_t i2, int64_t i3) {
      double sum = 0.0, mag = 0.0;
      for (int64_t k = 0; k < c.k; ++k) {
        const double p = a.h.at(k, m, i2 / r2, i3 / r3) * b.h.at(k, n, i2, i3);
        sum += p;
        mag += std::fabs(p);
      }
      ref.push_back(sum);
      tol.push_back(tol_for(LOOM_TYPE_F32, sum, mag, c.k));
    });
    expect_close(read(out), ref, tol, so, "mul_mat result");
  }
};

TEST_F(MatMulTest, FloatTypesOddSizes) {
  seed(401);
  const MatCase cases[] = {
      {1, 1, 1, 1, 1, 1, 1},  {3, 17, 5, 1, 1, 1, 1}, {17, 3, 1, 2, 1, 2, 1},
      {33, 5, 3, 1, 1, 2, 3}, {65, 7, 2, 2, 3, 4, 3},
  };
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    for (const MatCase& c : cases) {
      check(t, c, layouts_for(t)[k % 4], layouts_for(LOOM_TYPE_F32)[(k / 4 + k) % 4]);
      ++k;
    }
  }
}

TEST_F(MatMulTest, QuantizedA) {
  seed(402);
  const MatCase cases[] = {
      {32, 1, 1, 1, 1, 1, 1}, {64, 17, 3, 1, 1, 1, 1}, {96, 5, 2, 2, 1, 4, 3}, {32, 3, 5, 1, 3, 2, 3},
  };
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0}) {
    for (const MatCase& c : cases) {
      check(t, c, layouts_for(t)[k % 3], layouts_for(LOOM_TYPE_F32)[k % 4]);
      ++k;
    }
  }
}

TEST_F(MatMulTest, EveryLayoutPair) {
  seed(403);
  const MatCase c{33, 4, 3, 1, 2, 2, 2};
  const MatCase cq{64, 4, 3, 1, 2, 2, 2};
  for (loom_type_t t : kATypes) {
    for (Layout la : layouts_for(t)) {
      for (Layout lb : layouts_for(LOOM_TYPE_F32)) check(t, is_quant(t) ? cq : c, la, lb);
    }
  }
}

TEST_F(MatMulTest, DecodeShapesEveryTypeAndLayout) {
  // Rows of 128 and more with up to 8 columns: the decode kernels of GPU
  // plugins (a workgroup per row; one column with contiguous B has its own
  // path), with B dense and strided.
  const MatCase cases[] = {{256, 40, 1, 1, 1, 1, 1}, {160, 7, 3, 2, 1, 2, 1}, {1024, 9, 1, 1, 2, 2, 2},
                           {128, 5, 8, 1, 1, 1, 1}};
  int k = 0;
  for (loom_type_t t : kATypes) {
    for (const MatCase& c : cases) {
      check(t, c, Layout::kDense, Layout::kDense);
      check(t, c, layouts_for(t)[1 + k % (layouts_for(t).size() - 1)], layouts_for(LOOM_TYPE_F32)[1 + k % 3]);
      ++k;
    }
  }
}

TEST_F(MatMulTest, LargerProductStaysAccurate) {
  seed(404);
  check(LOOM_TYPE_Q4_0, {256, 48, 9, 1, 1, 1, 1}, Layout::kDense, Layout::kDense);
  check(LOOM_TYPE_F16, {255, 33, 17, 1, 1, 1, 1}, Layout::kDense, Layout::kPermuted);
}

}  // namespace
}  // namespace loom::optest
