// ROPE: normal and neox modes, n_dims < head_dim pass-through, freq_base and
// freq_scale, every float type, strided views, in place, 1 vs 3 threads.
#include "loom/ops.hpp"
#include "op_test_util.hpp"

namespace loom::optest {
namespace {

struct RopeCase {
  Shape ne;  // [head_dim, n_head, n_tok, n3]
  int n_dims;
  int mode;
  float base;
  float scale;
};

class RopeTest : public OpTest {
 protected:
  void check(loom_type_t t, const RopeCase& c, Layout layout) {
    SCOPED_TRACE("rope " + type_str(t) + " " + shape_str(c.ne) + " " + layout_name(layout) + " n_dims " +
                 std::to_string(c.n_dims) + " mode " + std::to_string(c.mode));
    Operand a = make(t, c.ne, layout);
    std::vector<int64_t> pos;
    for (int64_t i = 0; i < c.ne[2]; ++i) pos.push_back(rand_int(0, 300));
    Operand p = input_ints(LOOM_TYPE_I32, {c.ne[2], 1, 1, 1}, pos);
    Tensor* out = unwrap(op::rope(ctx_, a.t, p.t, c.n_dims, c.mode, c.base, c.scale), "rope");
    LOOM_ASSERT_OK(run_threads({out}));
    std::vector<double> ref(static_cast<size_t>(nelements(c.ne)));
    std::vector<double> tol(ref.size());
    const int half = c.n_dims / 2;
    for (int64_t i3 = 0; i3 < c.ne[3]; ++i3)
      for (int64_t i2 = 0; i2 < c.ne[2]; ++i2)
        for (int64_t i1 = 0; i1 < c.ne[1]; ++i1) {
          for (int64_t i0 = 0; i0 < c.ne[0]; ++i0) {
            const double x = a.h.at(i0, i1, i2, i3);
            ref[flat(c.ne, i0, i1, i2, i3)] = x;  // pass-through unless rotated below
            tol[flat(c.ne, i0, i1, i2, i3)] = 0.0;
          }
          for (int i = 0; i < half; ++i) {
            const double theta = static_cast<double>(pos[i2]) * c.scale *
                                 std::pow(static_cast<double>(c.base), -2.0 * i / c.n_dims);
            const int64_t j0 = c.mode == LOOM_ROPE_MODE_NEOX ? i : 2 * i;
            const int64_t j1 = c.mode == LOOM_ROPE_MODE_NEOX ? i + half : 2 * i + 1;
            const double x0 = a.h.at(j0, i1, i2, i3);
            const double x1 = a.h.at(j1, i1, i2, i3);
            const double y0 = x0 * std::cos(theta) - x1 * std::sin(theta);
            const double y1 = x0 * std::sin(theta) + x1 * std::cos(theta);
            // An f32 theta is off by about u * theta radians.
            const double mag = (std::fabs(x0) + std::fabs(x1)) * (1.0 + theta);
            ref[flat(c.ne, j0, i1, i2, i3)] = y0;
            ref[flat(c.ne, j1, i1, i2, i3)] = y1;
            tol[flat(c.ne, j0, i1, i2, i3)] = tol_for(t, y0, mag, 2);
            tol[flat(c.ne, j1, i1, i2, i3)] = tol_for(t, y1, mag, 2);
          }
        }
    expect_close(read(out), ref, tol, c.ne, "rope result");
  }
};

const RopeCase kCases[] = {
    {{8, 3, 5, 1}, 8, LOOM_ROPE_MODE_NORMAL, 10000.0f, 1.0f},
    {{8, 3, 5, 1}, 8, LOOM_ROPE_MODE_NEOX, 10000.0f, 1.0f},
    {{16, 2, 3, 2}, 6, LOOM_ROPE_MODE_NORMAL, 500.0f, 0.5f},  // partial: dims 6..15 pass through
    {{16, 2, 3, 2}, 10, LOOM_ROPE_MODE_NEOX, 500.0f, 0.25f},
    {{2, 1, 1, 1}, 2, LOOM_ROPE_MODE_NORMAL, 10000.0f, 1.0f},
    {{34, 3, 7, 1}, 32, LOOM_ROPE_MODE_NEOX, 1e6f, 1.0f},
};

TEST_F(RopeTest, ModesTypesAndLayouts) {
  seed(501);
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    for (const RopeCase& c : kCases) check(t, c, layouts_for(t)[k++ % 4]);
  }
}

TEST_F(RopeTest, EveryLayout) {
  seed(502);
  for (Layout l : layouts_for(LOOM_TYPE_F32)) {
    check(LOOM_TYPE_F32, kCases[2], l);
    check(LOOM_TYPE_F32, kCases[3], l);
  }
}

TEST_F(RopeTest, PositionZeroIsIdentityAndRunsInPlace) {
  seed(503);
  Operand a = input(LOOM_TYPE_F32, {8, 2, 3, 1});
  Operand p = input_ints(LOOM_TYPE_I32, {3, 1, 1, 1}, {0, 0, 0});
  Tensor* out = unwrap(op::rope(ctx_, a.t, p.t, 8, LOOM_ROPE_MODE_NORMAL, 10000.0f, 1.0f), "rope");
  LOOM_ASSERT_OK(run_threads({out}));
  EXPECT_EQ(out->data, a.t->data) << "expected the allocator to run in place";
  expect_equal(read(out), a.h.values(), a.h.ne, "rope at position 0");
}

}  // namespace
}  // namespace loom::optest
