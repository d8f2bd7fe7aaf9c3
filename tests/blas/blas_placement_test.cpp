// The scheduler over blas,cpu: who takes a matmul whose weights live in CPU
// memory is decided by the two plugins' loom.cost estimates. Prefill-size
// products go to blas with zero copies; decode-size products of quantized
// weights and tiny products stay on the CPU plugin.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/executor.hpp"
#include "loom/graph.hpp"
#include "loom/ops.hpp"
#include "loom/registry.hpp"
#include "loom/scheduler.hpp"

namespace loom {
namespace {

struct Case {
  loom_type_t type;
  int64_t k, m, n;
  bool want_blas;
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
  EXPECT_EQ((*sched)->device_of(mm_index), c.want_blas ? 0 : 1)
      << "est. blas " << on_blas << " us, cpu " << on_cpu << " us\n" << plan;
  EXPECT_EQ((*sched)->copy_count(), 0u) << plan;  // host memory both ways
  EXPECT_EQ((*sched)->splits().size(), c.want_blas ? 3u : 1u) << plan;
}

INSTANTIATE_TEST_SUITE_P(Shapes, BlasPlacement,
                         ::testing::Values(Case{LOOM_TYPE_F32, 1024, 1024, 256, true},   // prefill
                                           Case{LOOM_TYPE_Q4_0, 768, 768, 256, true},    // prefill, quantized
                                           Case{LOOM_TYPE_Q8_0, 768, 2048, 64, true},
                                           Case{LOOM_TYPE_Q4_0, 768, 768, 1, false},     // decode, quantized
                                           Case{LOOM_TYPE_Q8_0, 768, 2048, 1, false},
                                           Case{LOOM_TYPE_F32, 64, 64, 1, false}));      // tiny

}  // namespace
}  // namespace loom
