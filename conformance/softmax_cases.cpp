// SOFT_MAX: scale, no mask / F32 / F16 / BF16 mask broadcast over dims 2 and
// 3 (index modulo the mask's extent), -inf entries, every float source
// type, strided views, in place, 1 vs 3 threads.
#include <limits>

#include "loom/runtime/ops.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

struct SoftMaxCase {
  Shape ne;
  int64_t m1_extra;  // mask rows beyond ne1
  int64_t m2, m3;    // mask extents in dims 2, 3
  float scale;
};

const SoftMaxCase kSoftMaxCases[] = {
    {{17, 3, 2, 1}, 0, 1, 1, 1.0f},   {{33, 4, 4, 1}, 2, 2, 1, 0.5f}, {{1, 3, 1, 1}, 0, 1, 1, 2.0f},
    {{65, 2, 2, 3}, 1, 2, 3, 0.125f}, {{5, 5, 3, 2}, 0, 1, 2, 1.0f},
};

class SoftMaxTest : public OpTest {
 protected:
  // mask_type LOOM_TYPE_COUNT: no mask.
  void check(loom_type_t t, loom_type_t mask_type, const SoftMaxCase& c, Layout layout) {
    LOOM_TRACE("soft_max " + type_str(t) + " mask " +
                 (mask_type == LOOM_TYPE_COUNT ? std::string("none") : type_str(mask_type)) + " " +
                 shape_str(c.ne) + " " + layout_name(layout));
    Operand a = make(t, c.ne, layout, -3.0f, 3.0f);
    const Shape mne{c.ne[0], c.ne[1] + c.m1_extra, c.m2, c.m3};
    std::optional<Operand> mask;
    if (mask_type != LOOM_TYPE_COUNT) {
      // Causal-style: -inf above the diagonal (never a whole row), else small values.
      std::vector<float> mv = rand_floats(nelements(mne), -2.0f, 0.0f);
      for_each_index(mne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        if (i0 > i1 + 1) mv[flat(mne, i0, i1, i2, i3)] = -std::numeric_limits<float>::infinity();
      });
      mask = input_values(mask_type, mne, mv);
    }
    Tensor* out = unwrap(op::soft_max(ctx_, a.t, mask ? mask->t : nullptr, c.scale), "soft_max");
    LOOM_ASSERT_OK(run_threads({out}));
    std::vector<double> ref, tol;
    std::vector<double> z(static_cast<size_t>(c.ne[0]));
    for (int64_t i3 = 0; i3 < c.ne[3]; ++i3)
      for (int64_t i2 = 0; i2 < c.ne[2]; ++i2)
        for (int64_t i1 = 0; i1 < c.ne[1]; ++i1) {
          double max = -INFINITY, sum = 0.0;
          for (int64_t i = 0; i < c.ne[0]; ++i) {
            const double m = mask ? mask->h.at(i, i1, i2 % c.m2, i3 % c.m3) : 0.0;
            z[i] = a.h.at(i, i1, i2, i3) * c.scale + m;
            max = std::max(max, z[i]);
          }
          for (int64_t i = 0; i < c.ne[0]; ++i) sum += std::exp(z[i] - max);
          for (int64_t i = 0; i < c.ne[0]; ++i) {
            const double p = std::exp(z[i] - max) / sum;
            ref.push_back(p);
            const double spread = std::isinf(z[i]) ? 0.0 : std::fabs(z[i]) + std::fabs(max);
            tol.push_back(tol_for(LOOM_TYPE_F32, p, p * (2.0 + spread) + 1e-7, c.ne[0]));
          }
        }
    expect_close(read(out), ref, tol, c.ne, "soft_max result");
  }
};

LOOM_CASE(SoftMaxTest, TypesMasksAndBroadcast) {
  seed(601);
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    for (loom_type_t m : {LOOM_TYPE_COUNT, LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
      check(t, m, kSoftMaxCases[k % 5], Layout::kDense);
      ++k;
    }
  }
}

LOOM_CASE(SoftMaxTest, EveryLayout) {
  seed(602);
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16}) {
    for (Layout l : layouts_for(t)) check(t, LOOM_TYPE_F16, kSoftMaxCases[k++ % 5], l);
  }
}

LOOM_CASE(SoftMaxTest, RowsSumToOneAndRunInPlace) {
  seed(603);
  Operand a = input(LOOM_TYPE_F32, {65, 9, 1, 1}, -10.0f, 10.0f);
  Tensor* out = unwrap(op::soft_max(ctx_, a.t, nullptr, 1.0f), "soft_max");
  LOOM_ASSERT_OK(run_threads({out}));
  LOOM_EXPECT_EQ(out->data, a.t->data) << "expected the allocator to run in place";
  const std::vector<double> got = read(out);
  for (int64_t r = 0; r < 9; ++r) {
    double s = 0.0;
    for (int64_t i = 0; i < 65; ++i) s += got[r * 65 + i];
    LOOM_EXPECT_NEAR(s, 1.0, 1e-5) << "row " << r;
  }
}

// plugin.h leaves a row masked everywhere undefined; the CPU reference
// gives zeros (not NaN) so such rows cannot poison later sums.
LOOM_CASE(SoftMaxTest, FullyMaskedRowIsZero) {
  seed(604);
  const float ninf = -std::numeric_limits<float>::infinity();
  Operand a = input(LOOM_TYPE_F32, {3, 2, 1, 1});
  Operand m = input_values(LOOM_TYPE_F32, {3, 2, 1, 1}, {ninf, ninf, ninf, 0.0f, ninf, 0.0f});
  Tensor* out = unwrap(op::soft_max(ctx_, a.t, m.t, 1.0f), "soft_max");
  LOOM_ASSERT_OK(run({out}));
  const std::vector<double> got = read(out);
  LOOM_EXPECT_EQ(got[0], 0.0);
  LOOM_EXPECT_EQ(got[1], 0.0);
  LOOM_EXPECT_EQ(got[2], 0.0);
  LOOM_EXPECT_EQ(got[4], 0.0);
  LOOM_EXPECT_NEAR(got[3] + got[5], 1.0, 1e-6);
}

}  // namespace
}  // namespace loom::conformance
