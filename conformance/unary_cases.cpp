// SILU, GELU (tanh form), RELU, TANH (ABI 1.5), SCALE and SWIGLU: every float type, strided
// views, in place, 1 vs 3 threads.
#include <cmath>

#include "loom/runtime/ops.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

const Shape kUnaryShapes[] = {{17, 3, 2, 1}, {65, 1, 1, 1}, {1, 33, 1, 2}, {33, 5, 3, 2}};

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.79788456080286535588 /* sqrt(2/pi) */ * (x + 0.044715 * x * x * x)));
}

class UnaryTest : public OpTest {
 protected:
  void check(loom_op_t op, loom_type_t t, const Shape& ne, Layout layout) {
    LOOM_TRACE(std::string(op_name(op)) + " " + type_str(t) + " " + shape_str(ne) + " " + layout_name(layout));
    Operand a = make(t, ne, layout, -4.0f, 4.0f);
    const float s = 0.75f;
    const float bias = -0.5f;
    Tensor* out = nullptr;
    switch (op) {
      case LOOM_OP_SILU: out = unwrap(op::silu(ctx_, a.t), "silu"); break;
      case LOOM_OP_GELU: out = unwrap(op::gelu(ctx_, a.t), "gelu"); break;
      case LOOM_OP_RELU: out = unwrap(op::relu(ctx_, a.t), "relu"); break;
      case LOOM_OP_TANH: out = unwrap(op::tanh(ctx_, a.t), "tanh"); break;
      default: out = unwrap(op::scale(ctx_, a.t, s, bias), "scale"); break;
    }
    LOOM_ASSERT_OK(run_threads({out}));
    std::vector<double> ref, tol;
    for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      const double x = a.h.at(i0, i1, i2, i3);
      double r = 0.0, mag = 0.0;
      switch (op) {
        case LOOM_OP_SILU: r = silu(x); mag = std::fabs(x); break;
        case LOOM_OP_GELU: r = gelu(x); mag = std::fabs(x); break;
        case LOOM_OP_RELU: r = x > 0 ? x : 0.0; mag = 0.0; break;
        case LOOM_OP_TANH: r = std::tanh(x); mag = 1.0; break;
        default: r = x * s + bias; mag = std::fabs(x * s) + std::fabs(bias); break;
      }
      ref.push_back(r);
      tol.push_back(tol_for(t, r, mag, 2));
    });
    expect_close(read(out), ref, tol, ne, "unary result");
  }
};

LOOM_CASE(UnaryTest, EveryOpTypeAndLayout) {
  seed(201);
  int k = 0;
  for (loom_op_t op : {LOOM_OP_SILU, LOOM_OP_GELU, LOOM_OP_RELU, LOOM_OP_SCALE}) {
    for (loom_type_t t : kFloatTypes) {
      for (Layout l : layouts_for(t)) check(op, t, kUnaryShapes[k++ % 4], l);
    }
  }
}

LOOM_CASE(UnaryTest, TanhEveryTypeAndLayout) {
  seed(204);
  int k = 0;
  for (loom_type_t t : kFloatTypes) {
    for (Layout l : layouts_for(t)) check(LOOM_OP_TANH, t, kUnaryShapes[k++ % 4], l);
  }
  // Saturation, zero signs and infinities.
  Operand a = input_values(LOOM_TYPE_F32, {6, 1, 1, 1}, {-30.0f, -0.0f, 0.0f, 30.0f, -INFINITY, INFINITY});
  Tensor* out = unwrap(op::tanh(ctx_, a.t), "tanh");
  LOOM_ASSERT_OK(run({out}));
  expect_close(read(out), {-1.0, 0.0, 0.0, 1.0, -1.0, 1.0}, std::vector<double>(6, 1e-7), a.h.ne, "tanh limits");
}

LOOM_CASE(UnaryTest, ReluIsExactAndKeepsZeroes) {
  seed(202);
  Operand a = input_values(LOOM_TYPE_F32, {5, 1, 1, 1}, {-1.0f, -0.0f, 0.0f, 2.5f, 1e-30f});
  Tensor* out = unwrap(op::relu(ctx_, a.t), "relu");
  LOOM_ASSERT_OK(run({out}));
  expect_equal(read(out), {0.0, 0.0, 0.0, 2.5, static_cast<double>(1e-30f)}, a.h.ne, "relu");
}

LOOM_CASE(UnaryTest, SwigluEveryTypePairAndLayout) {
  seed(203);
  int k = 0;
  for (loom_type_t ta : kFloatTypes) {
    for (loom_type_t tb : kFloatTypes) {
      const Shape ne = kUnaryShapes[k % 4];
      const Layout la = layouts_for(ta)[k % 4];
      const Layout lb = layouts_for(tb)[(k + 1) % 4];
      ++k;
      LOOM_TRACE("swiglu " + type_str(ta) + "/" + type_str(tb) + " " + shape_str(ne) + " " +
                   layout_name(la) + "/" + layout_name(lb));
      Operand a = make(ta, ne, la, -4.0f, 4.0f);
      Operand b = make(tb, ne, lb, -2.0f, 2.0f);
      Tensor* out = unwrap(op::swiglu(ctx_, a.t, b.t), "swiglu");
      LOOM_ASSERT_OK(run_threads({out}));
      std::vector<double> ref, tol;
      for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const double x = a.h.at(i0, i1, i2, i3);
        const double g = b.h.at(i0, i1, i2, i3);
        ref.push_back(silu(x) * g);
        tol.push_back(tol_for(ta, silu(x) * g, std::fabs(x * g), 3));
      });
      expect_close(read(out), ref, tol, ne, "swiglu result");
    }
  }
}

LOOM_CASE(UnaryTest, ChainRunsInPlace) {
  seed(204);
  for (loom_type_t t : kFloatTypes) {
    Operand a = input(t, {65, 3, 2, 1}, -3.0f, 3.0f);
    Tensor* s = unwrap(op::scale(ctx_, a.t, 2.0f, 0.25f), "scale");
    Tensor* out = unwrap(op::silu(ctx_, s), "silu");
    LOOM_ASSERT_OK(run_threads({out}));
    LOOM_EXPECT_EQ(out->data, a.t->data) << "expected the allocator to run in place";
    std::vector<double> ref, tol;
    for (double x : a.h.values()) {
      // The intermediate is rounded to t: allow for it in the tolerance.
      const double y = x * 2.0 + 0.25;
      ref.push_back(silu(y));
      tol.push_back(tol_for(t, silu(y), 2 * (std::fabs(y) + 1), 2) + 2 * conv_tol(t, y) * 1.2);
    }
    expect_close(read(out), ref, tol, a.h.ne, "scale then silu " + type_str(t));
  }
}

}  // namespace
}  // namespace loom::conformance
