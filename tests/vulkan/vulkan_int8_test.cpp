// The int8 decode GEMV (quantize_q8.comp + mul_mat_vec_q8.comp): B rounded
// to 8-bit blocks once per node by ggml's rule (32 elements, 256 for the
// K-quants), integer products with A's quants. lavapipe runs it only with
// LOOM_VULKAN_DISABLE=rows (its matmuls are otherwise one invocation per
// output); each test runs with the device's integer dot products, again
// with `int8dot` (the plain integer shader a device without
// VK_KHR_shader_integer_dot_product gets) and with `int8` (the float GEMV).
// The result must match the reference of its path and must not match the
// other one, so a switch that were ignored, or a path that were never
// taken, fails here; loom.details must name the path (and that float A
// takes mul_mat_vec_float, a row per subgroup).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "conformance/matmul_ref.hpp"
#include "conformance/reference.hpp"
#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/types.hpp"
#include "vulkan_test_util.hpp"

namespace loom::vktest {
namespace {

namespace cf = loom::conformance;

// vulkan0's "decode GEMV: ..." line of loom.details, "" without it.
std::string gemv_details(const registry::Device* d) {
  const auto* ext =
      static_cast<const loom_ext_details_t*>(d->extension(LOOM_EXT_DETAILS, LOOM_EXT_DETAILS_VERSION));
  if (ext == nullptr) return "";
  std::string text(2048, '\0');
  text.resize(std::min(text.size() - 1, ext->get_details(d->raw(), text.data(), text.size())));
  const size_t at = text.find("decode GEMV: ");
  return at == std::string::npos ? "" : text.substr(at + 13, text.find('\n', at) - at - 13);
}

class Int8Gemv : public DisabledFeaturesTest {
 protected:
  bool rounds_b() const { return std::string(GetParam()) != "rows,int8"; }
};

struct Result {
  std::vector<double> got, exact, rounded, tol_exact, tol_rounded;
};

// out = A x B, A [k, m] of type t, B [k, n, 2] f32 (A broadcast over dim 2),
// random; both references in double from an independent decode of A.
Status run_gemv(registry::Device* dev, loom_type_t t, int64_t k, int64_t m, int64_t n, uint32_t seed,
                Result* r) {
  std::vector<double> a;
  std::vector<float> bv, out;
  LOOM_RETURN_IF_ERROR(run_random_product(dev, t, k, m, n, seed, &a, &bv, &out));
  r->got.assign(out.begin(), out.end());

  auto base = std::make_shared<cf::HostBase>();
  base->ne = {k, n, 2, 1};
  base->values.assign(bv.begin(), bv.end());
  cf::HostView b{base, LOOM_TYPE_F32, base->ne, cf::dense_strides(LOOM_TYPE_F32, base->ne), 0};
  for (int64_t i2 = 0; i2 < 2; ++i2) {
    for (int64_t j = 0; j < n; ++j) {
      const std::vector<double> bq = cf::q8_column(b, j, i2, 0, cf::block_elems(t) == 256 ? 256 : 32);
      for (int64_t i = 0; i < m; ++i) {
        double se = 0, sr = 0, me = 0, mr = 0;
        for (int64_t x = 0; x < k; ++x) {
          const double av = a[static_cast<size_t>(i * k + x)];
          se += av * b.at(x, j, i2);
          me += std::fabs(av * b.at(x, j, i2));
          sr += av * bq[static_cast<size_t>(x)];
          mr += std::fabs(av * bq[static_cast<size_t>(x)]);
        }
        r->exact.push_back(se);
        r->rounded.push_back(sr);
        r->tol_exact.push_back(cf::tol_for(LOOM_TYPE_F32, se, me, k));
        r->tol_rounded.push_back(cf::tol_for(LOOM_TYPE_F32, sr, mr, k));
      }
    }
  }
  return Status();
}

TEST_P(Int8Gemv, DetailsNameThePath) {
  const std::string gemv = gemv_details(dev_);
  const std::string p = GetParam();
  if (p == "rows,int8") {
    EXPECT_EQ(gemv.rfind("float", 0), 0u) << gemv;
  } else if (p == "rows,int8dot") {
    EXPECT_NE(gemv.find("int8 for quantized A (plain integer arithmetic)"), std::string::npos) << gemv;
  } else if (dev_->info().description.find("llvmpipe") != std::string::npos) {
    // lavapipe (Vulkan 1.3) has shaderIntegerDotProduct.
    EXPECT_NE(gemv.find("int8 for quantized A (integer dot products)"), std::string::npos) << gemv;
  } else {
    EXPECT_EQ(gemv.rfind("int8", 0), 0u) << gemv;
  }
  // Float A (F32 / F16 / BF16): mul_mat_vec_float, a row per subgroup.
  EXPECT_NE(gemv.find("float A: a row per subgroup"), std::string::npos) << gemv;
}

// Every weight type, one column and three (the kernel keeps up to 8), two
// batches over one A; K of 768 (24 chunks: not a multiple of the subgroup
// size on lavapipe's 8 lanes... nor of 32 lanes) and 37 rows (a partial
// workgroup of rows).
TEST_P(Int8Gemv, EveryWeightTypeFollowsItsReference) {
  const loom_type_t types[] = {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0,
                               LOOM_TYPE_Q5_1, LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q2_K, LOOM_TYPE_Q3_K,
                               LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_IQ4_XS};
  uint32_t seed = 11;
  for (loom_type_t t : types) {
    for (int64_t n : {1, 3}) {
      SCOPED_TRACE(cf::type_str(t) + " n=" + std::to_string(n));
      Result r;
      const Status st = run_gemv(dev_, t, 768, 37, n, seed++, &r);
      ASSERT_TRUE(st.ok()) << st.message();
      if (rounds_b()) {
        EXPECT_EQ(mismatches(r.got, r.rounded, r.tol_rounded), 0) << "against B rounded to 8-bit blocks";
        EXPECT_GT(mismatches(r.got, r.exact, r.tol_exact), 0) << "B was not rounded: the int8 path did not run";
      } else {
        EXPECT_EQ(mismatches(r.got, r.exact, r.tol_exact), 0) << "against B as given";
        EXPECT_GT(mismatches(r.got, r.rounded, r.tol_rounded), 0) << "B was rounded with int8 disabled";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Vulkan, Int8Gemv, ::testing::Values("rows", "rows,int8dot", "rows,int8"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string s = i.param;
                           for (char& c : s) c = c == ',' ? '_' : c;
                           return s;
                         });

}  // namespace
}  // namespace loom::vktest
