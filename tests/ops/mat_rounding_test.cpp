// The rounding rules the conformance suite grants a product (matmul_ref.hpp):
// the F16 rounding of the reference is exact (ties to even, subnormals,
// overflow), the F16-inputs rule applies from 9 columns on and only when
// the suite accepts either result, and a result computed from F16-rounded
// inputs passes only through that rule (while one off by more still fails).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "conformance/matmul_ref.hpp"

namespace loom::conformance {
namespace {

TEST(MatRounding, F16RoundedIsTheNearestHalf) {
  EXPECT_EQ(f16_rounded(1.0), 1.0);
  EXPECT_EQ(f16_rounded(0.0), 0.0);
  EXPECT_EQ(f16_rounded(-2.5), -2.5);
  // 1 + 2^-10 is the F16 after 1; halfway (1 + 2^-11) ties to the even 1.
  EXPECT_EQ(f16_rounded(1.0 + std::ldexp(1.0, -11)), 1.0);
  EXPECT_EQ(f16_rounded(1.0 + 3 * std::ldexp(1.0, -11)), 1.0 + std::ldexp(1.0, -9));
  EXPECT_EQ(f16_rounded(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -20)), 1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(f16_rounded(0.1), 0.0999755859375);  // 0x2E66
  // Subnormals: steps of 2^-24.
  EXPECT_EQ(f16_rounded(std::ldexp(1.0, -24)), std::ldexp(1.0, -24));
  EXPECT_EQ(f16_rounded(std::ldexp(1.4, -24)), std::ldexp(1.0, -24));
  EXPECT_EQ(f16_rounded(std::ldexp(0.4, -24)), 0.0);
  EXPECT_EQ(f16_rounded(3 * std::ldexp(1.0, -16) + std::ldexp(1.0, -25)), 3 * std::ldexp(1.0, -16));
  // The top of the range: 65504 stays, 65519 rounds down, 65520 overflows.
  EXPECT_EQ(f16_rounded(65504.0), 65504.0);
  EXPECT_EQ(f16_rounded(65519.0), 65504.0);
  EXPECT_EQ(f16_rounded(65520.0), INFINITY);
  EXPECT_EQ(f16_rounded(-1e6), -INFINITY);
  EXPECT_TRUE(std::isnan(f16_rounded(NAN)));
}

TEST(MatRounding, RulesByModeAndColumns) {
  using R = MatRounding;
  EXPECT_EQ(mat_roundings(ActQ8::kExact, true, 64), std::vector<R>{R::kNone});
  EXPECT_EQ(mat_roundings(ActQ8::kRounded, true, 64), std::vector<R>{R::kQ8B});
  EXPECT_EQ(mat_roundings(ActQ8::kRounded, false, 64), std::vector<R>{R::kNone});
  EXPECT_EQ(mat_roundings(ActQ8::kEither, false, 8), std::vector<R>{R::kNone});
  EXPECT_EQ(mat_roundings(ActQ8::kEither, false, 9), (std::vector<R>{R::kNone, R::kF16}));
  EXPECT_EQ(mat_roundings(ActQ8::kEither, true, 16), (std::vector<R>{R::kNone, R::kQ8B, R::kF16}));
}

// A 1 x K by K x N product whose inputs are far from F16 values: the F16
// result is outside the exact tolerance, inside the rule's, and a result
// off by a few F16 steps of the sum fails both.
TEST(MatRounding, F16InputsPassOnlyThroughTheRule) {
  const int64_t K = 64, N = 12;
  std::vector<double> a(K), b(K * N);
  for (int64_t k = 0; k < K; ++k) a[k] = 1.0 + 0.37 * std::sin(0.7 * k) + std::ldexp(1.0, -13);
  for (int64_t i = 0; i < K * N; ++i) b[i] = 0.5 + 0.41 * std::cos(0.3 * i) + std::ldexp(1.0, -14);
  auto make = [&](MatRounding r, std::vector<double>* ref, std::vector<double>* tol) {
    ref->clear();
    tol->clear();
    for (int64_t n = 0; n < N; ++n) {
      double sum = 0.0, mag = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = a_value(a[k], r) * a_value(b[n * K + k], r);
        sum += p;
        mag += std::fabs(p);
      }
      ref->push_back(sum);
      tol->push_back(tol_for(LOOM_TYPE_F32, sum, mag, K));
    }
  };
  std::vector<double> f16_ref, f16_tol, exact_ref, exact_tol;
  make(MatRounding::kF16, &f16_ref, &f16_tol);
  make(MatRounding::kNone, &exact_ref, &exact_tol);
  ASSERT_GT(count_mismatches(f16_ref, exact_ref, exact_tol), 0) << "the case must tell the two apart";

  std::vector<double> ref, tol;
  pick_reference(mat_roundings(ActQ8::kEither, false, N), f16_ref, make, &ref, &tol);
  EXPECT_EQ(count_mismatches(f16_ref, ref, tol), 0);
  // Fewer columns, or a suite that wants exact results: no rule.
  pick_reference(mat_roundings(ActQ8::kEither, false, 8), f16_ref, make, &ref, &tol);
  EXPECT_GT(count_mismatches(f16_ref, ref, tol), 0);
  pick_reference(mat_roundings(ActQ8::kExact, false, N), f16_ref, make, &ref, &tol);
  EXPECT_GT(count_mismatches(f16_ref, ref, tol), 0);
  // Beyond the rounding: fails against every reference (and is reported
  // against the exact one).
  std::vector<double> off = f16_ref;
  off[3] += 64 * f16_tol[3];
  pick_reference(mat_roundings(ActQ8::kEither, false, N), off, make, &ref, &tol);
  EXPECT_GT(count_mismatches(off, ref, tol), 0);
  EXPECT_EQ(ref, exact_ref);
}

}  // namespace
}  // namespace loom::conformance
