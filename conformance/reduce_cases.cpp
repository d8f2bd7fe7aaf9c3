// ARGMAX (first index on ties, strided rows) and SUM_ROWS (every float type,
// strided views), 1 vs 3 threads.
#include "loom/runtime/ops.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

class ReduceTest : public OpTest {};

LOOM_CASE(ReduceTest, ArgmaxFirstOnTiesEveryLayout) {
  seed(901);
  const Shape shapes[] = {{17, 3, 2, 1}, {1, 4, 1, 1}, {65, 2, 1, 3}, {33, 1, 1, 1}};
  int k = 0;
  for (Layout l : layouts_for(LOOM_TYPE_F32)) {
    for (const Shape& ne : shapes) {
      LOOM_TRACE("argmax " + shape_str(ne) + " " + layout_name(l) + (k % 2 ? " ties" : ""));
      // Odd cases draw from five levels only, so maxima repeat.
      Operand a = make(LOOM_TYPE_F32, ne, l, -1.0f, 1.0f);
      if (k++ % 2) {
        Operand base = input_values(LOOM_TYPE_F32, ne, [&] {
          std::vector<float> v;
          for (int64_t i = 0; i < nelements(ne); ++i) v.push_back(static_cast<float>(rand_int(0, 4)));
          return v;
        }());
        a = base;
      }
      Tensor* out = unwrap(op::argmax(ctx_, a.t), "argmax");
      LOOM_ASSERT_OK(run_threads({out}));
      std::vector<double> ref;
      for (int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ne[2]; ++i2)
          for (int64_t i1 = 0; i1 < ne[1]; ++i1) {
            int64_t best = 0;
            for (int64_t i = 1; i < ne[0]; ++i) {
              if (a.h.at(i, i1, i2, i3) > a.h.at(best, i1, i2, i3)) best = i;
            }
            ref.push_back(static_cast<double>(best));
          }
      expect_equal(read(out), ref, {ne[1], ne[2], ne[3], 1}, "argmax result");
    }
  }
}

LOOM_CASE(ReduceTest, SumRowsEveryTypeAndLayout) {
  seed(902);
  const Shape shapes[] = {{17, 3, 2, 1}, {1, 4, 1, 1}, {65, 2, 1, 3}, {33, 1, 1, 1}};
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    for (Layout l : layouts_for(t)) {
      const Shape ne = shapes[k++ % 4];
      LOOM_TRACE("sum_rows " + type_str(t) + " " + shape_str(ne) + " " + layout_name(l));
      Operand a = make(t, ne, l, -2.0f, 3.0f);
      Tensor* out = unwrap(op::sum_rows(ctx_, a.t), "sum_rows");
      LOOM_ASSERT_OK(run_threads({out}));
      std::vector<double> ref, tol;
      for (int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ne[2]; ++i2)
          for (int64_t i1 = 0; i1 < ne[1]; ++i1) {
            double s = 0.0, mag = 0.0;
            for (int64_t i = 0; i < ne[0]; ++i) {
              s += a.h.at(i, i1, i2, i3);
              mag += std::fabs(a.h.at(i, i1, i2, i3));
            }
            ref.push_back(s);
            tol.push_back(tol_for(LOOM_TYPE_F32, s, mag, ne[0]));
          }
      expect_close(read(out), ref, tol, {1, ne[1], ne[2], ne[3]}, "sum_rows result");
    }
  }
}

}  // namespace
}  // namespace loom::conformance
