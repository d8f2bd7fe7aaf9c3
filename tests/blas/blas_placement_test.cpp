// The scheduler over blas,cpu: who takes a matmul whose weights live in CPU
// memory is decided by the two plugins' loom.cost estimates. Prefill-size
// products go to whichever estimates less (blas against the baseline cpu
// build; the cpu-avx2 / avx512 builds' int8 path and packed GEMM are as fast
// as OpenBLAS here), with zero copies either way; decode-size products of
// quantized weights and tiny products stay on the CPU plugin.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"
#include "loom/sched/scheduler.hpp"

namespace loom {
namespace {

enum class Want { kCpu, kCheaper };
struct Case {
  loom_type_t type;
  int64_t k, m, n;
  Want want;
};

class BlasPlacement : public ::testing::TestWithParam<Case> {};

TEST_P(BlasPlacement, CostDecides) {
  const Case c = GetParam();
  registry::Options o;
  o.paths = {LOOM_TEST_PLUGIN_DIR};
  o.use_env = false;
  auto reg = registry::Registry::load(o);
  registry::Device* blas = reg->device("blas");
  registry::Device* cpu = reg->device("cpu");
  ASSERT_NE(blas, nullptr);
  ASSERT_NE(cpu, nullptr);
  // The estimates themselves: both plugins give one for a matmul.
  Context ctx;
  auto w = ctx.new_tensor(c.type, {c.k, c.m}, "w");
  auto x = ctx.new_tensor(LOOM_TYPE_F32, {c.k, c.n}, "x");
  ASSERT_TRUE(w.ok() && x.ok());
  auto wbuf = allocate_tensors(*cpu, {*w});  // weights in CPU memory
  ASSERT_TRUE(wbuf.ok()) << wbuf.status().to_string();
  auto pre = op::rms_norm(ctx, *x, 1e-5f);
  ASSERT_TRUE(pre.ok());
  auto mm = op::mul_mat(ctx, *w, *pre);
  ASSERT_TRUE(mm.ok());
  (*mm)->set_name("mm");
  auto post = op::silu(ctx, *mm);
  ASSERT_TRUE(post.ok());
  const double on_blas = blas->op_time_us(*mm), on_cpu = cpu->op_time_us(*mm);
  EXPECT_GT(on_blas, 0.0);
  EXPECT_GT(on_cpu, 0.0);
  EXPECT_LT(blas->op_time_us(*post), 0.0) << "blas gives no estimate for an op it does not run";
  const bool want_blas = c.want == Want::kCheaper && on_blas < on_cpu;
  if (c.want == Want::kCpu) {
    EXPECT_LT(on_cpu, on_blas) << "decode-size and tiny products are cheaper on the cpu";
  }

  auto g = Graph::build({*post});
  ASSERT_TRUE(g.ok());
  auto sched = Scheduler::create({blas, cpu});
  ASSERT_TRUE(sched.ok());
  ASSERT_TRUE((*sched)->allocate(*g).ok());
  const std::string plan = (*sched)->describe(*g);
  size_t mm_index = 0;
  for (size_t i = 0; i < g->nodes().size(); ++i) {
    if (g->nodes()[i] == *mm) mm_index = i;
  }
  EXPECT_EQ((*sched)->device_of(mm_index), want_blas ? 0 : 1)
      << "est. blas " << on_blas << " us, cpu " << on_cpu << " us\n" << plan;
  EXPECT_EQ((*sched)->copy_count(), 0u) << plan;  // host memory both ways
  EXPECT_EQ((*sched)->splits().size(), want_blas ? 3u : 1u) << plan;
}

INSTANTIATE_TEST_SUITE_P(Shapes, BlasPlacement,
                         ::testing::Values(Case{LOOM_TYPE_F32, 1024, 1024, 256, Want::kCheaper},  // prefill
                                           Case{LOOM_TYPE_Q4_0, 768, 768, 256, Want::kCheaper},   // prefill, quantized
                                           Case{LOOM_TYPE_Q8_0, 768, 2048, 64, Want::kCheaper},
                                           Case{LOOM_TYPE_Q4_0, 768, 768, 1, Want::kCpu},  // decode, quantized
                                           Case{LOOM_TYPE_Q8_0, 768, 2048, 1, Want::kCpu},
                                           Case{LOOM_TYPE_F32, 64, 64, 1, Want::kCpu}));  // tiny

}  // namespace
}  // namespace loom
