// CPY (float <-> float, float -> Q8_0/Q4_0, Q8_0/Q4_0 -> float, I32 -> I32;
// strided sources, reshaping copies, copies into views) and CONT (every
// type from strided views).
#include <cmath>
#include <cstring>
#include <limits>

#include "loom/runtime/ops.hpp"
#include "loom/runtime/types.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

const loom_type_t kQuantTypes[] = {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};

Tensor* base_of(Tensor* t) { return t->view_src ? static_cast<Tensor*>(t->view_src) : t; }

class CopyTest : public OpTest {
 protected:
  // Copies src into dst (a leaf or a view of one) and checks dst's base.
  void check_cpy(const Operand& src, const Operand& dst, const std::string& what) {
    LOOM_TRACE(what);
    Tensor* out = unwrap(op::cpy(ctx_, src.t, dst.t), "cpy");
    Tensor* base = base_of(dst.t);
    LOOM_ASSERT_OK(run_threads({out, base}));
    expect_written(dst.h, src.h.values(), read_bytes(base), what);
  }
};

LOOM_CASE(CopyTest, FloatToFloatEveryPairAndLayout) {
  seed(701);
  int k = 0;
  for (loom_type_t ts : kFloatTypes) {
    for (loom_type_t td : kFloatTypes) {
      for (Layout l : layouts_for(ts)) {
        const Shape ne = k % 2 ? Shape{17, 3, 2, 1} : Shape{1, 5, 3, 2};
        Operand src = make(ts, ne, l, -70000.0f, 70000.0f);  // beyond f16 range: inf
        Operand dst = input(td, ne);
        check_cpy(src, dst, type_str(ts) + " -> " + type_str(td) + " " + layout_name(l));
        ++k;
      }
    }
  }
}

// Half conversions bit for bit (the cpu variants convert rows 8 at a time
// with F16C, elsewhere one by one): every half pattern widened to f32, and
// f32 values at the rounding edges (ties to even, subnormal halves, the
// overflow threshold 65520, infinities) narrowed to f16 as loom::from_float
// does. NaN must stay NaN (payloads may differ between devices).
LOOM_CASE(CopyTest, HalfConversionsAreExact) {
  seed(709);
  std::vector<float> halves;
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    float f;
    loom::to_float(LOOM_TYPE_F16, &bits, &f, 1);
    halves.push_back(f);
  }
  Operand src16 = input_values(LOOM_TYPE_F16, {256, 256, 1, 1}, halves);
  Tensor* wide = unwrap(op::cpy(ctx_, src16.t, input(LOOM_TYPE_F32, {256, 256, 1, 1}).t), "cpy f16 -> f32");

  std::vector<float> edges;
  const float pos[] = {0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 1e9f, 0x1p-14f, 0x1p-24f, 0x1p-25f,
                       0x1.000002p-25f, 0x1.8p-24f, 0x1.4p-24f, 0x1.004p0f, 0x1.006p0f, 0x1.002p0f, 0x1.0020001p0f,
                       0x1.ffep-15f, 0x1.fffp-15f, 3.0e-8f, 1e-40f};
  for (float f : pos) {
    edges.push_back(f);
    edges.push_back(-f);
  }
  edges.push_back(std::numeric_limits<float>::infinity());
  edges.push_back(-std::numeric_limits<float>::infinity());
  edges.push_back(std::numeric_limits<float>::quiet_NaN());
  const int64_t n_rand = (1024 - static_cast<int64_t>(edges.size())) / 2;
  for (float f : rand_floats(n_rand, -70000.0f, 70000.0f)) edges.push_back(f);
  for (float f : rand_floats(1024 - static_cast<int64_t>(edges.size()), -1e-4f, 1e-4f)) edges.push_back(f);
  Operand src32 = input_values(LOOM_TYPE_F32, {1024, 1, 1, 1}, edges);
  Tensor* narrow = unwrap(op::cpy(ctx_, src32.t, input(LOOM_TYPE_F16, {1024, 1, 1, 1}).t), "cpy f32 -> f16");
  LOOM_ASSERT_OK(run_threads({wide, narrow}));

  const std::vector<uint8_t> wide_bytes = read_bytes(wide);
  const std::vector<uint8_t> narrow_bytes = read_bytes(narrow);
  int bad = 0;
  for (size_t i = 0; i < halves.size(); ++i) {
    float got;
    std::memcpy(&got, wide_bytes.data() + 4 * i, 4);
    const bool ok = std::isnan(halves[i]) ? std::isnan(got) : std::memcmp(&got, &halves[i], 4) == 0;
    if (!ok && ++bad < 10) LOOM_ADD_FAILURE() << std::hex << "half 0x" << i << std::dec << " -> " << got << ", want " << halves[i];
  }
  const std::vector<float>& in = edges;
  for (size_t i = 0; i < in.size(); ++i) {
    uint16_t want, got;
    loom::from_float(LOOM_TYPE_F16, &in[i], &want, 1);
    std::memcpy(&got, narrow_bytes.data() + 2 * i, 2);
    const bool nan = (want & 0x7C00u) == 0x7C00u && (want & 0x3FFu) != 0;
    const bool got_nan = (got & 0x7C00u) == 0x7C00u && (got & 0x3FFu) != 0;
    if ((nan ? !got_nan : got != want) && ++bad < 20) {
      LOOM_ADD_FAILURE() << std::hexfloat << in[i] << std::hex << " -> 0x" << got << ", want 0x" << want;
    }
  }
  LOOM_EXPECT_EQ(bad, 0);
}

LOOM_CASE(CopyTest, IntoStridedViewsAndOtherShapes) {
  seed(702);
  for (loom_type_t td : kFloatTypes) {
    // A padded view as destination (a KV-cache-like window).
    Operand src = make(LOOM_TYPE_F32, {17, 3, 2, 1}, Layout::kPermuted);
    check_cpy(src, padded(td, {17, 3, 2, 1}, 3, 2, 1), "into padded view " + type_str(td));
    // Same element count, different shape: row-major logical order.
    Operand src2 = make(LOOM_TYPE_F16, {6, 4, 1, 1}, Layout::kTransposed);
    check_cpy(src2, input(td, {8, 3, 1, 1}), "reshaping copy f16 -> " + type_str(td));
    check_cpy(make(LOOM_TYPE_BF16, {33, 2, 1, 1}, Layout::kPadded), transpose(input(td, {6, 11, 1, 1})),
              "into a transposed view " + type_str(td));
  }
}

LOOM_CASE(CopyTest, FloatToQuantized) {
  seed(703);
  for (loom_type_t tq : kQuantTypes) {
    for (loom_type_t ts : kFloatTypes) {
      for (Layout l : layouts_for(ts)) {
        Operand src = make(ts, {64, 3, 2, 1}, l, -5.0f, 5.0f);
        check_cpy(src, input(tq, {64, 3, 2, 1}), type_str(ts) + " -> " + type_str(tq) + " " + layout_name(l));
      }
    }
    // Rows of a padded quantized view stay contiguous blocks.
    check_cpy(make(LOOM_TYPE_F32, {32, 3, 1, 1}, Layout::kDense), padded(tq, {32, 3, 1, 1}, 32, 1, 1),
              "f32 -> padded " + type_str(tq));
    // Different row length: [32, 6] -> [64, 3].
    check_cpy(make(LOOM_TYPE_F32, {32, 6, 1, 1}, Layout::kPermuted), input(tq, {64, 3, 1, 1}),
              "reshaping f32 -> " + type_str(tq));
  }
}

LOOM_CASE(CopyTest, QuantizedBlockEdgeCases) {
  seed(704);
  // All zeros, one large value, all equal negatives, a sign mix at the max.
  std::vector<float> v(128, 0.0f);
  v[32 + 7] = 100.0f;
  for (int i = 64; i < 96; ++i) v[i] = -0.3f;
  for (int i = 96; i < 128; ++i) v[i] = (i % 2 ? 1.0f : -1.0f) * static_cast<float>(i - 96) / 31.0f;
  for (loom_type_t tq : kQuantTypes) {
    check_cpy(input_values(LOOM_TYPE_F32, {128, 1, 1, 1}, v), input(tq, {128, 1, 1, 1}),
              "edge blocks " + type_str(tq));
  }
}

LOOM_CASE(CopyTest, QuantizedToFloat) {
  seed(705);
  for (loom_type_t tq : kQuantTypes) {
    for (loom_type_t td : kFloatTypes) {
      for (Layout l : layouts_for(tq)) {
        Operand src = make(tq, {64, 3, 2, 1}, l, -3.0f, 3.0f);
        check_cpy(src, input(td, {64, 3, 2, 1}), type_str(tq) + " -> " + type_str(td) + " " + layout_name(l));
      }
    }
    check_cpy(make(tq, {32, 4, 1, 1}, Layout::kDense), input(LOOM_TYPE_F32, {16, 8, 1, 1}),
              "reshaping " + type_str(tq) + " -> f32");
  }
}

LOOM_CASE(CopyTest, WeightTypesToFloatAndAsBlocks) {
  // The ABI 1.2 weight types and IQ4_XS (read-only: no CPY into them from float):
  // dequantized into F32 / F16 from every layout, and CONT of strided
  // views, which copies the blocks' bytes.
  seed(710);
  const loom_type_t types[] = {LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q2_K,
                               LOOM_TYPE_Q3_K, LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_IQ4_XS};
  for (loom_type_t t : types) {
    const int64_t be = block_elems(t);
    for (Layout l : layouts_for(t)) {
      for (loom_type_t td : {LOOM_TYPE_F32, LOOM_TYPE_F16}) {
        LOOM_TRACE(type_str(t) + " -> " + type_str(td) + " " + layout_name(l));
        const Shape ne{2 * be, 3, 2, 1};
        Operand src = make(t, ne, l);
        Operand dst = input(td, ne);
        Tensor* out = unwrap(op::cpy(ctx_, src.t, dst.t), "cpy");
        // A graph the device declines is not run (harness.hpp: "not claimed").
        LOOM_ASSERT_OK(run_threads({out, base_of(dst.t)}));
        // ggml's f32 decode against the exact one (as GET_ROWS' test), then
        // the destination's rounding.
        double amax = 0.0;
        for (double v : src.h.values()) amax = std::max(amax, std::fabs(v));
        std::vector<double> tol;
        for (double v : src.h.values()) tol.push_back(std::ldexp(amax, -20) + (td == LOOM_TYPE_F32 ? 0.0 : conv_tol(td, v)));
        expect_close(read(base_of(dst.t)), src.h.values(), tol, ne, "dequantized copy");
        if (l == Layout::kDense && td == LOOM_TYPE_F32) {
          // Bit for bit the host's (ggml's) f32 decode, loom::to_float.
          std::vector<float> want(static_cast<size_t>(nelements(ne)));
          loom::to_float(t, src.h.base->bytes.data(), want.data(), nelements(ne));
          const std::vector<uint8_t> got = read_bytes(base_of(dst.t));
          LOOM_ASSERT_EQ(got.size(), 4 * want.size());
          LOOM_EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0) << "not ggml's f32 values bit for bit";
        }
      }
      LOOM_TRACE("cont " + type_str(t) + " " + layout_name(l));
      Operand a = make(t, {be, 3, 2, 2}, l);
      Tensor* c = unwrap(op::cont(ctx_, a.t), "cont");
      LOOM_ASSERT_OK(run_threads({c}));
      expect_equal(read(c), a.h.values(), a.h.ne, "cont result");
    }
  }
}

LOOM_CASE(CopyTest, I32ToI32IsExact) {
  seed(706);
  std::vector<int64_t> vals;
  for (int i = 0; i < 3 * 5 * 2; ++i) vals.push_back(rand_int(-2000000000, 2000000000));
  Operand base = input_ints(LOOM_TYPE_I32, {3, 5, 2, 1}, vals);
  Operand src = permute(base, 1, 0, 2, 3);  // [5, 3, 2, 1], strided elements
  Operand dst = input_ints(LOOM_TYPE_I32, {10, 3, 1, 1}, std::vector<int64_t>(30, 7));
  check_cpy(src, dst, "i32 -> i32");
}

LOOM_CASE(CopyTest, ContEveryTypeFromViews) {
  seed(707);
  const loom_type_t types[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};
  for (loom_type_t t : types) {
    for (Layout l : layouts_for(t)) {
      const Shape ne = is_quant(t) ? Shape{64, 3, 2, 2} : Shape{17, 3, 2, 2};
      LOOM_TRACE("cont " + type_str(t) + " " + layout_name(l));
      Operand a = make(t, ne, l);
      Tensor* out = unwrap(op::cont(ctx_, a.t), "cont");
      LOOM_ASSERT_OK(run_threads({out}));
      LOOM_EXPECT_TRUE(out->is_contiguous());
      expect_equal(read(out), a.h.values(), ne, "cont result");
    }
  }
  std::vector<int64_t> vals;
  for (int i = 0; i < 12; ++i) vals.push_back(rand_int(-100000, 100000));
  Operand ints = transpose(input_ints(LOOM_TYPE_I32, {4, 3, 1, 1}, vals));
  Tensor* out = unwrap(op::cont(ctx_, ints.t), "cont");
  LOOM_ASSERT_OK(run_threads({out}));
  expect_equal(read(out), ints.h.values(), ints.h.ne, "cont i32");
}

}  // namespace
}  // namespace loom::conformance
