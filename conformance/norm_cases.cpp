// RMS_NORM and NORM: every float source type (result F32), odd row lengths,
// strided views, in place, 1 vs 3 threads.
#include "loom/runtime/ops.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

const Shape kNormShapes[] = {
    {17, 3, 2, 1}, {65, 2, 1, 3}, {1, 5, 1, 1}, {33, 1, 3, 2}, {3, 4, 1, 1}};

class NormTest : public OpTest {
 protected:
  void check(loom_op_t op, loom_type_t t, const Shape& ne, Layout layout, float eps) {
    LOOM_TRACE(std::string(op_name(op)) + " " + type_str(t) + " " + shape_str(ne) + " " + layout_name(layout));
    Operand a = make(t, ne, layout, -2.0f, 3.0f);
    Tensor* out = op == LOOM_OP_NORM ? unwrap(op::norm(ctx_, a.t, eps), "norm")
                                     : unwrap(op::rms_norm(ctx_, a.t, eps), "rms_norm");
    LOOM_ASSERT_OK(run_threads({out}));
    std::vector<double> ref, tol;
    for (int64_t i3 = 0; i3 < ne[3]; ++i3)
      for (int64_t i2 = 0; i2 < ne[2]; ++i2)
        for (int64_t i1 = 0; i1 < ne[1]; ++i1) {
          double mean = 0.0, sq = 0.0, amax = 0.0;
          for (int64_t i = 0; i < ne[0]; ++i) mean += a.h.at(i, i1, i2, i3);
          mean = op == LOOM_OP_NORM ? mean / ne[0] : 0.0;
          for (int64_t i = 0; i < ne[0]; ++i) {
            const double d = a.h.at(i, i1, i2, i3) - mean;
            sq += d * d;
            amax = std::max(amax, std::fabs(a.h.at(i, i1, i2, i3)));
          }
          const double inv = 1.0 / std::sqrt(sq / ne[0] + eps);
          for (int64_t i = 0; i < ne[0]; ++i) {
            const double r = (a.h.at(i, i1, i2, i3) - mean) * inv;
            ref.push_back(r);
            tol.push_back(tol_for(LOOM_TYPE_F32, r, (amax + std::fabs(mean)) * inv + std::fabs(r), ne[0]));
          }
        }
    expect_close(read(out), ref, tol, ne, "norm result");
  }
};

LOOM_CASE(NormTest, RmsNormEveryTypeAndLayout) {
  seed(301);
  int k = 0;
  for (loom_type_t t : kFloatTypes) {
    for (Layout l : layouts_for(t)) check(LOOM_OP_RMS_NORM, t, kNormShapes[k++ % 5], l, 1e-5f);
  }
}

LOOM_CASE(NormTest, NormEveryTypeAndLayout) {
  seed(302);
  int k = 0;
  for (loom_type_t t : kFloatTypes) {
    for (Layout l : layouts_for(t)) check(LOOM_OP_NORM, t, kNormShapes[k++ % 5], l, 1e-6f);
  }
}

LOOM_CASE(NormTest, EpsDominatesSmallRows) {
  seed(303);
  // Constant row: NORM gives 0, RMS_NORM x / sqrt(x^2 + eps).
  Operand a = input_values(LOOM_TYPE_F32, {4, 1, 1, 1}, {0.01f, 0.01f, 0.01f, 0.01f});
  Tensor* n = unwrap(op::norm(ctx_, a.t, 1e-3f), "norm");
  Tensor* r = unwrap(op::rms_norm(ctx_, a.t, 1e-3f), "rms_norm");
  LOOM_ASSERT_OK(run({n, r}));
  const double x = static_cast<double>(0.01f);
  const double want = x / std::sqrt(x * x + static_cast<double>(1e-3f));
  expect_close(read(n), std::vector<double>(4, 0.0), std::vector<double>(4, 1e-6), a.h.ne, "norm");
  expect_close(read(r), std::vector<double>(4, want), std::vector<double>(4, 1e-6), a.h.ne, "rms_norm");
}

LOOM_CASE(NormTest, RunsInPlaceOnF32) {
  seed(304);
  Operand a = input(LOOM_TYPE_F32, {65, 7, 1, 1}, -1.0f, 1.0f);
  Tensor* out = unwrap(op::rms_norm(ctx_, a.t, 1e-6f), "rms_norm");
  LOOM_ASSERT_OK(run_threads({out}));
  LOOM_EXPECT_EQ(out->data, a.t->data) << "expected the allocator to run in place";
  std::vector<double> ref, tol;
  for (int64_t i1 = 0; i1 < 7; ++i1) {
    double sq = 0.0;
    for (int64_t i = 0; i < 65; ++i) sq += a.h.at(i, i1) * a.h.at(i, i1);
    const double inv = 1.0 / std::sqrt(sq / 65 + static_cast<double>(1e-6f));
    for (int64_t i = 0; i < 65; ++i) {
      ref.push_back(a.h.at(i, i1) * inv);
      tol.push_back(tol_for(LOOM_TYPE_F32, ref.back(), 2 * std::fabs(ref.back()) + inv, 65));
    }
  }
  expect_close(read(out), ref, tol, a.h.ne, "in-place rms_norm");
}

}  // namespace
}  // namespace loom::conformance
