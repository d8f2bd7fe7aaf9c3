// The prefill GEMM on cooperative matrices (shaders/mul_mat_cm.comp).
// lavapipe has no cooperative matrices, so its emulated form runs here
// (LOOM_VULKAN_EMULATE=coopmat, with LOOM_VULKAN_DISABLE=rows: lavapipe's
// matmuls are otherwise one invocation per output): MUL_MAT of more than 8
// columns over F16 and quantized A must match the reference with A and B
// rounded to F16 (docs/plugin-abi.md, the F16-inputs rule) and must not
// match the exact one, so a kernel that were never chosen fails; without
// the emulation the f32 tiled kernel must match the exact reference.
// Shapes with partial tiles on both sides and two batches over one A;
// loom.details names the path.
#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "conformance/matmul_ref.hpp"
#include "conformance/reference.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/types.hpp"
#include "loom/sched/executor.hpp"
#include "vulkan_test_util.hpp"

namespace loom::vktest {
namespace {

namespace cf = loom::conformance;

// vulkan0's "prefill GEMM: ..." line of loom.details, "" without it.
std::string gemm_details(const registry::Device* d) {
  const auto* ext = static_cast<const loom_ext_details_t*>(
      d->extension(LOOM_EXT_DETAILS, LOOM_EXT_DETAILS_VERSION));
  if (ext == nullptr) return "";
  std::string text(4096, '\0');
  text.resize(std::min(text.size() - 1, ext->get_details(d->raw(), text.data(), text.size())));
  const size_t at = text.find("prefill GEMM: ");
  return at == std::string::npos ? "" : text.substr(at + 14, text.find('\n', at) - at - 14);
}

struct Product {
  std::vector<double> got, exact, rounded, tol_exact, tol_rounded;
};

// Appends one output's two references: A's row a and B's column b of k
// values, exact and with both rounded to F16.
void add_references(const double* a, const float* b, int64_t k, Product* r) {
  double se = 0, sr = 0, me = 0, mr = 0;
  for (int64_t x = 0; x < k; ++x) {
    const double p = cf::f16_rounded(a[x]) * cf::f16_rounded(b[x]);
    se += a[x] * b[x];
    me += std::fabs(a[x] * b[x]);
    sr += p;
    mr += std::fabs(p);
  }
  r->exact.push_back(se);
  r->rounded.push_back(sr);
  r->tol_exact.push_back(cf::tol_for(LOOM_TYPE_F32, se, me, k));
  r->tol_rounded.push_back(cf::tol_for(LOOM_TYPE_F32, sr, mr, k));
}

// out = A x B, A [k, m] of type t, B [k, n, 2] f32 (A broadcast over dim
// 2), random; the exact and the F16-inputs references in double.
Status run_product(registry::Device* dev, loom_type_t t, int64_t k, int64_t m, int64_t n,
                   uint32_t seed, Product* r) {
  std::vector<double> a;
  std::vector<float> bv, out;
  LOOM_RETURN_IF_ERROR(run_random_product(dev, t, k, m, n, seed, &a, &bv, &out));
  r->got.assign(out.begin(), out.end());
  for (int64_t i2 = 0; i2 < 2; ++i2) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < m; ++i)
        add_references(&a[static_cast<size_t>(i * k)], &bv[static_cast<size_t>((i2 * n + j) * k)],
                       k, r);
    }
  }
  return Status();
}

// On the cooperative-matrix kernel (on): the F16-rounded reference and not
// the exact one, so a kernel never chosen fails. Off: the exact one, and
// (not_rounded_too) not the rounded one.
void expect_path(const Product& r, bool on, bool not_rounded_too) {
  if (on) {
    EXPECT_EQ(mismatches(r.got, r.rounded, r.tol_rounded), 0) << "against A and B rounded to F16";
    EXPECT_GT(mismatches(r.got, r.exact, r.tol_exact), 0)
        << "nothing rounded: the kernel did not run";
    return;
  }
  EXPECT_EQ(mismatches(r.got, r.exact, r.tol_exact), 0) << "against A and B as given";
  if (not_rounded_too) {
    EXPECT_GT(mismatches(r.got, r.rounded, r.tol_rounded), 0)
        << "rounded to F16 without the kernel";
  }
}

// Parameter: whether the cooperative-matrix kernel is emulated.
class Coopmat : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    reg_ = load_registry();
    dev_ = reg_->device("vulkan0");
    if (dev_ == nullptr) GTEST_SKIP() << "no vulkan0 here:" << report(*reg_);
  }
  void TearDown() override { reg_.reset(); }

  ScopedEnv disable_{"LOOM_VULKAN_DISABLE", "rows"};
  ScopedEnv emulate_{"LOOM_VULKAN_EMULATE", GetParam() ? std::optional<std::string>("coopmat") : std::nullopt};
  std::unique_ptr<registry::Registry> reg_;
  registry::Device* dev_ = nullptr;
};

// Emulated, the kernel is on: it passed its self-check at device creation.
TEST_P(Coopmat, DetailsNameThePath) {
  const std::string gemm = gemm_details(dev_);
  if (GetParam()) {
    EXPECT_EQ(gemm.rfind("cooperative matrices emulated", 0), 0u) << gemm;
  } else if (dev_->info().description.find("llvmpipe") != std::string::npos) {
    EXPECT_EQ(gemm.rfind("none (no VK_NV_cooperative_matrix", 0), 0u) << gemm;
  } else {
    EXPECT_FALSE(gemm.empty());
  }
}

// F16 and block types of 32 and 256 elements, 20 columns
// (a partial 64-column tile, more than 8) and 72 rows (one whole tile and a
// partial one); K = 512 (16 steps of 32, two 256-blocks of the K-quants).
TEST_P(Coopmat, PrefillProductsFollowTheirReference) {
  if (!GetParam() && gemm_details(dev_).rfind("cooperative matrices", 0) == 0)
    GTEST_SKIP() << "vulkan0 has cooperative matrices: no f32 tiled kernel to compare";
  // (lavapipe compiles the kernel once per type, ~3 s each: the matmul
  // cases of vulkan_coopmat_emu.MatMul take every other weight type.)
  const loom_type_t types[] = {LOOM_TYPE_F16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_1, LOOM_TYPE_Q4_K,
                               LOOM_TYPE_IQ4_XS};
  uint32_t seed = 31;
  for (loom_type_t t : types) {
    SCOPED_TRACE(cf::type_str(t));
    Product r;
    const Status st = run_product(dev_, t, 512, 72, 20, seed++, &r);
    ASSERT_TRUE(st.ok()) << st.message();
    expect_path(r, GetParam(), true);
  }
}

// Decode-sized products (8 columns) and K not a multiple of 32 keep the
// other kernels, so they match the exact reference even when emulated.
TEST_P(Coopmat, DecodeAndOddRowsStayExact) {
  Product r;
  Status st = run_product(dev_, LOOM_TYPE_F16, 512, 40, 8, 7, &r);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(mismatches(r.got, r.exact, r.tol_exact), 0) << "8 columns";
  Product odd;
  st = run_product(dev_, LOOM_TYPE_F16, 200, 40, 20, 8, &odd);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(mismatches(odd.got, odd.exact, odd.tol_exact), 0) << "K = 200";
}

// MUL_MAT_ID's prefill grouped by expert (moe_group + the grouped GEMM):
// A F16 / Q4_0 [256, 40, 4 experts], B [256, 1, 20 tokens] (every slot
// reads the token's column), ids [2, 20] with repeats; each (slot, token)
// column against the dense product with its expert.
TEST_P(Coopmat, GroupedExpertsFollowTheirReference) {
  if (!GetParam() && gemm_details(dev_).rfind("cooperative matrices", 0) == 0)
    GTEST_SKIP() << "vulkan0 has cooperative matrices: no f32 tiled kernel to compare";
  const int64_t k = 256, m = 40, e = 4, u = 2, t = 20;
  for (loom_type_t type : {LOOM_TYPE_F16, LOOM_TYPE_Q4_0}) {
    SCOPED_TRACE(cf::type_str(type));
    std::mt19937 rng(type == LOOM_TYPE_F16 ? 5 : 6);
    const size_t a_bytes = cf::row_bytes(type, k) * static_cast<size_t>(m * e);
    std::vector<uint8_t> aq(a_bytes);
    if (cf::is_weight_quant(type)) {
      cf::random_weight_blocks(type, static_cast<int64_t>(a_bytes / cf::block_bytes(type)), rng,
                               aq.data());
    } else {
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<float> af(static_cast<size_t>(k * m * e));
      for (float& v : af) v = dist(rng);
      loom::from_float(type, af.data(), aq.data(), k * m * e);
    }
    const std::vector<double> a = cf::is_weight_quant(type)
                                      ? cf::decode_weight_blocks(type, aq.data(), k * m * e)
                                      : cf::decode(type, aq.data(), k * m * e);
    std::uniform_real_distribution<float> bdist(-2.0f, 2.0f);
    std::vector<float> bv(static_cast<size_t>(k * t));
    for (float& v : bv) v = bdist(rng);
    std::vector<int32_t> ids(static_cast<size_t>(u * t));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7 + i / 5) % e);

    Context ctx;
    auto ta = ctx.new_tensor(type, {k, m, e}, "a");
    auto tb = ctx.new_tensor(LOOM_TYPE_F32, {k, 1, t}, "b");
    auto ti = ctx.new_tensor(LOOM_TYPE_I32, {u, t}, "ids");
    ASSERT_TRUE(ta.ok() && tb.ok() && ti.ok());
    for (Tensor* x : {*ta, *tb, *ti}) x->flags |= LOOM_TENSOR_FLAG_INPUT;
    auto y = op::mul_mat_id(ctx, *ta, *tb, *ti);
    ASSERT_TRUE(y.ok()) << y.status().message();
    auto g = Graph::build({*y});
    ASSERT_TRUE(g.ok());
    auto ex = Executor::create(dev_);
    ASSERT_TRUE(ex.ok()) << ex.status().message();
    ASSERT_TRUE((*ex)->allocate(*g).ok());
    ASSERT_TRUE(tensor_set(*ta, aq.data(), aq.size()).ok());
    ASSERT_TRUE(tensor_set(*tb, bv.data(), bv.size() * 4).ok());
    ASSERT_TRUE(tensor_set(*ti, ids.data(), ids.size() * 4).ok());
    const Status st = (*ex)->compute(*g);
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<float> out(static_cast<size_t>(m * u * t));
    ASSERT_TRUE(tensor_get(*y, out.data(), out.size() * 4).ok());

    Product r;
    r.got.assign(out.begin(), out.end());
    for (int64_t tok = 0; tok < t; ++tok) {
      for (int64_t slot = 0; slot < u; ++slot) {
        const int64_t ex_id = ids[static_cast<size_t>(tok * u + slot)];
        for (int64_t i = 0; i < m; ++i)
          add_references(&a[static_cast<size_t>((ex_id * m + i) * k)],
                         &bv[static_cast<size_t>(tok * k)], k, &r);
      }
    }
    expect_path(r, GetParam(), false);
  }
}

// A device whose cooperative-matrix kernel fails its first product at
// device creation (coopmat_check.cpp; forced here) keeps the f32 tiled
// kernel and says why.
TEST(CoopmatSelfCheck, AFailedCheckTurnsTheKernelOff) {
  ScopedEnv disable("LOOM_VULKAN_DISABLE", "rows");
  ScopedEnv emulate("LOOM_VULKAN_EMULATE", "coopmat");
  ScopedEnv check("LOOM_VULKAN_COOPMAT_CHECK", "fail");
  std::unique_ptr<registry::Registry> reg = load_registry();
  registry::Device* dev = reg->device("vulkan0");
  if (dev == nullptr) GTEST_SKIP() << "no vulkan0 here:" << report(*reg);
  const std::string gemm = gemm_details(dev);
  EXPECT_EQ(gemm.rfind("off (the self-check's 128 x 80 x 24 F16 product failed (forced", 0), 0u)
      << gemm;
  Product r;
  const Status st = run_product(dev, LOOM_TYPE_Q4_0, 512, 72, 20, 3, &r);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(mismatches(r.got, r.exact, r.tol_exact), 0)
      << "the tiled kernel gives the exact products";
}

// LOOM_VULKAN_DISABLE=coopmat wins over the emulation: the tiled kernel,
// exact products.
TEST(CoopmatSelfCheck, DisabledWinsOverEmulated) {
  ScopedEnv disable("LOOM_VULKAN_DISABLE", "rows,coopmat");
  ScopedEnv emulate("LOOM_VULKAN_EMULATE", "coopmat");
  std::unique_ptr<registry::Registry> reg = load_registry();
  registry::Device* dev = reg->device("vulkan0");
  if (dev == nullptr) GTEST_SKIP() << "no vulkan0 here:" << report(*reg);
  const std::string gemm = gemm_details(dev);
  EXPECT_EQ(gemm, "off (LOOM_VULKAN_DISABLE=coopmat)");
  Product r;
  const Status st = run_product(dev, LOOM_TYPE_F16, 256, 40, 20, 4, &r);
  ASSERT_TRUE(st.ok()) << st.message();
  expect_path(r, false, true);
}

INSTANTIATE_TEST_SUITE_P(Vulkan, Coopmat, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "emulated" : "plain");
                         });

}  // namespace
}  // namespace loom::vktest
