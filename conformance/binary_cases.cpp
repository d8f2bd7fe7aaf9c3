// ADD, SUB, MUL, DIV: every float type pair, broadcast shapes, strided
// views, in-place placement, 1 vs 3 threads.
#include "loom/runtime/ops.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

struct BinaryCase {
  Shape a;
  Shape b;
};
const BinaryCase kBinaryCases[] = {
    {{17, 3, 2, 1}, {17, 3, 2, 1}},  // same shape
    {{33, 5, 3, 2}, {33, 1, 3, 1}},  // broadcast over rows and dim 3
    {{65, 3, 1, 1}, {1, 3, 1, 1}},   // one value per row
    {{1, 1, 1, 1}, {1, 1, 1, 1}},   {{3, 17, 2, 2}, {3, 1, 1, 2}},
};

StatusOr<Tensor*> build(Context& ctx, loom_op_t op, Tensor* a, Tensor* b) {
  switch (op) {
    case LOOM_OP_ADD: return op::add(ctx, a, b);
    case LOOM_OP_SUB: return op::sub(ctx, a, b);
    case LOOM_OP_MUL: return op::mul(ctx, a, b);
    default: return op::div(ctx, a, b);
  }
}

double apply(loom_op_t op, double x, double y) {
  switch (op) {
    case LOOM_OP_ADD: return x + y;
    case LOOM_OP_SUB: return x - y;
    case LOOM_OP_MUL: return x * y;
    default: return x / y;
  }
}

class BinaryTest : public OpTest {
 protected:
  // Runs one case; returns the result tensor (for in-place checks).
  Tensor* check(loom_op_t op, loom_type_t ta, loom_type_t tb, const BinaryCase& c, Layout la, Layout lb) {
    LOOM_TRACE(std::string(op_name(op)) + " " + type_str(ta) + "/" + type_str(tb) + " a " +
                 shape_str(c.a) + " " + layout_name(la) + ", b " + shape_str(c.b) + " " + layout_name(lb));
    Operand a = make(ta, c.a, la);
    // Divisors kept away from zero.
    Operand b = op == LOOM_OP_DIV ? make(tb, c.b, lb, 0.5f, 2.0f) : make(tb, c.b, lb);
    Tensor* out = unwrap(build(ctx_, op, a.t, b.t), "build");
    Status st = run_threads({out});
    LOOM_EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return out;
    std::vector<double> ref, tol;
    for_each_index(c.a, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      const double x = a.h.at(i0, i1, i2, i3);
      const double y = b.h.at(i0 % c.b[0], i1 % c.b[1], i2 % c.b[2], i3 % c.b[3]);
      const double r = apply(op, x, y);
      ref.push_back(r);
      tol.push_back(tol_for(ta, r, std::fabs(x) + std::fabs(y) + std::fabs(r), 1));
    });
    expect_close(read(out), ref, tol, c.a, "binary result");
    return out;
  }
};

LOOM_CASE(BinaryTest, EveryOpAndTypePair) {
  seed(101);
  int k = 0;
  for (loom_op_t op : {LOOM_OP_ADD, LOOM_OP_SUB, LOOM_OP_MUL, LOOM_OP_DIV}) {
    for (loom_type_t ta : kFloatTypes) {
      for (loom_type_t tb : kFloatTypes) {
        check(op, ta, tb, kBinaryCases[k % 5], Layout::kDense, Layout::kDense);
        ++k;
      }
    }
  }
}

LOOM_CASE(BinaryTest, StridedViews) {
  seed(102);
  int k = 0;
  for (loom_type_t t : kFloatTypes) {
    for (Layout la : layouts_for(t)) {
      for (Layout lb : layouts_for(t)) {
        check(k % 2 ? LOOM_OP_MUL : LOOM_OP_SUB, t, LOOM_TYPE_F32, kBinaryCases[k % 5], la, lb);
        ++k;
      }
    }
  }
}

LOOM_CASE(BinaryTest, InPlaceOverFirstSource) {
  seed(103);
  for (loom_type_t t : kFloatTypes) {
    // a is dense and dies at the node, so the allocator gives out its memory.
    Operand a = input(t, {33, 7, 2, 1});
    Operand b = input(t, {33, 1, 2, 1});
    Tensor* s = unwrap(op::add(ctx_, a.t, b.t), "add");
    Tensor* out = unwrap(op::mul(ctx_, s, b.t), "mul");
    LOOM_ASSERT_OK(run_threads({out}));
    LOOM_EXPECT_EQ(out->data, a.t->data) << "expected the allocator to run in place";
    std::vector<double> ref, tol;
    for_each_index(a.h.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      const double x = a.h.at(i0, i1, i2, i3);
      const double y = b.h.at(i0, 0, i2, 0);
      // Intermediate s is rounded to t once.
      ref.push_back((x + y) * y);
      tol.push_back(2 * tol_for(t, (x + y) * y, (std::fabs(x) + std::fabs(y) + 1) * std::fabs(y), 2));
    });
    expect_close(read(out), ref, tol, a.h.ne, "in-place add then mul " + type_str(t));
  }
}

}  // namespace
}  // namespace loom::conformance
