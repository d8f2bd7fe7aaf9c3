// Memory the application placed: weights in a buffer no selected device
// reads (planned copy), host data without a buffer (clear error), and a CPY
// into a pre-allocated cache (runs where the cache lives).
#include "sched_test_util.hpp"

namespace loom::schedtest {
namespace {

using test::contains;

TEST(SchedulerMemory, WeightsInAnUnselectedDeviceAreCopied) {
  SimSetup env(2, {});
  SCHED_REQUIRE_DEVICES(env);
  registry::Device* sim1 = env.dev("sim1");
  Context ctx;
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {2, 2}, "x"));
  SCHED_ASSIGN(Tensor * w, ctx.new_tensor(LOOM_TYPE_F32, {2, 2}, "w"));
  SCHED_ASSIGN(Buffer wbuf, allocate_tensors(*sim1, {w}));  // sim1 is not in the list
  SCHED_ASSIGN(Tensor * h, op::mul_mat(ctx, w, x));
  SCHED_ASSIGN(Graph g, Graph::build({h}));
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("cpu")}));
  SCHED_OK(sched->allocate(g));
  EXPECT_EQ(sched->copy_count(), 1u) << sched->describe(g);
  SCHED_OK(set_f32(x, {1, 2, 3, 4}));
  SCHED_OK(set_f32(w, {1, 0, 0, 1}));
  SCHED_OK(sched->compute(g));
  expect_close(get_f32(h), {1, 2, 3, 4}, "h");
  EXPECT_EQ(sched->last_stats().bytes_per_link.at("sim1->sim0"), 16u);
}

TEST(SchedulerMemory, HostDataWithoutBufferOnlyForHostDevices) {
  SimSetup env(1, {});
  SCHED_REQUIRE_DEVICES(env);
  Context ctx;
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {4, 1}, "hostx"));
  std::vector<float> host = {1, 2, 3, 4};
  x->data = host.data();  // host memory the application owns, no buffer
  SCHED_ASSIGN(Tensor * y, op::scale(ctx, x, 2.0f));
  SCHED_ASSIGN(Graph g, Graph::build({y}));
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0")}));
  Status st = sched->allocate(g);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "'hostx'")) << st.message();
  EXPECT_TRUE(contains(st.message(), "sim0")) << st.message();
  // The CPU reads it in place.
  SCHED_ASSIGN(auto cpu_sched, Scheduler::create({env.dev("cpu")}));
  SCHED_OK(cpu_sched->compute(g));
  EXPECT_EQ(cpu_sched->copy_count(), 0u);
  expect_close(get_f32(y), {2, 4, 6, 8}, "y");
}

TEST(SchedulerMemory, CopyIntoAPreallocatedCacheRunsWhereTheCacheLives) {
  SimSetup env(2, {std::string("CPY,SCALE"), std::nullopt});
  SCHED_REQUIRE_DEVICES(env);
  registry::Device* sim0 = env.dev("sim0");
  Context ctx;
  SCHED_ASSIGN(Tensor * cache, ctx.new_tensor(LOOM_TYPE_F32, {4, 3}, "cache"));
  SCHED_ASSIGN(Buffer cbuf, allocate_tensors(*sim0, {cache}));
  SCHED_OK(set_f32(cache, std::vector<float>(12, 0.0f)));
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {4, 1}, "x"));
  SCHED_ASSIGN(Tensor * s, op::silu(ctx, x));  // sim1 (sim0 has no SILU)
  SCHED_ASSIGN(Tensor * row, ctx.view(cache, {4, 1}, {cache->nb[1]}, cache->nb[1]));  // row 1
  SCHED_ASSIGN(Tensor * c, op::cpy(ctx, s, row));
  c->set_name("store");
  SCHED_ASSIGN(Graph g, Graph::build({c}));
  SCHED_ASSIGN(auto sched, Scheduler::create({sim0, env.dev("sim1")}));
  SCHED_OK(sched->allocate(g));
  int store = -1;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (std::string(g.nodes()[i]->name) == "store") store = static_cast<int>(i);
  }
  ASSERT_GE(store, 0);
  EXPECT_EQ(sched->device_of(static_cast<size_t>(store)), 0) << sched->describe(g);
  SCHED_OK(set_f32(x, {0, 1, 2, 3}));
  SCHED_OK(sched->compute(g));
  std::vector<float> want(12, 0.0f);
  for (int i = 0; i < 4; ++i) want[4 + i] = float(i) / (1.0f + std::exp(-float(i)));
  expect_close(get_f32(cache), want, "cache");
}

// Buffers grow for a bigger graph; a graph placed before the growth still
// computes correctly afterwards (it is re-placed, its old buffer stays valid).
TEST(SchedulerMemory, GraphPlacedBeforeGrowthStillComputes) {
  SimSetup env(2, {std::string("SCALE"), std::string("SILU")});
  SCHED_REQUIRE_DEVICES(env);
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("sim1")}));
  auto build = [](Context& ctx, int64_t n, Tensor** x) -> StatusOr<Graph> {
    LOOM_ASSIGN_OR_RETURN(*x, ctx.new_tensor(LOOM_TYPE_F32, {n, 1}, "x"));
    LOOM_ASSIGN_OR_RETURN(Tensor * a, op::scale(ctx, *x, 2.0f));
    LOOM_ASSIGN_OR_RETURN(Tensor * b, op::silu(ctx, a));
    return Graph::build({b});
  };
  Context small_ctx, big_ctx;
  Tensor *xs = nullptr, *xb = nullptr;
  SCHED_ASSIGN(Graph small, build(small_ctx, 4, &xs));
  SCHED_ASSIGN(Graph big, build(big_ctx, 4096, &xb));
  auto run = [&](Graph& g, Tensor* x, int64_t n) {
    SCHED_OK(sched->allocate(g));
    SCHED_OK(set_f32(x, std::vector<float>(static_cast<size_t>(n), 1.0f)));
    SCHED_OK(sched->compute(g));
    const float v = 2.0f / (1.0f + std::exp(-2.0f));
    expect_close(get_f32(g.outputs()[0]), std::vector<float>(static_cast<size_t>(n), v), "out");
  };
  run(small, xs, 4);
  const size_t before = sched->compute_buffer_size(0);
  run(big, xb, 4096);
  EXPECT_GT(sched->compute_buffer_size(0), before);
  // The small graph's plan was kept and comes back, applied in the grown
  // buffer.
  run(small, xs, 4);
  EXPECT_EQ(sched->plans_built(), 2u);
}

// Token embedding on the device holding the table, the rest on the CPU; the
// I32 indices are written through the ABI into the device's memory.
TEST(SchedulerMemory, GetRowsRunsWhereTheTableLives) {
  SimSetup env(1, {std::string("GET_ROWS")});
  SCHED_REQUIRE_DEVICES(env);
  registry::Device* sim0 = env.dev("sim0");
  Context ctx;
  SCHED_ASSIGN(Tensor * table, ctx.new_tensor(LOOM_TYPE_F32, {4, 5}, "table"));
  SCHED_ASSIGN(Buffer tbuf, allocate_tensors(*sim0, {table}));
  SCHED_ASSIGN(Tensor * ids, ctx.new_tensor(LOOM_TYPE_I32, {3}, "ids"));
  SCHED_ASSIGN(Tensor * emb, op::get_rows(ctx, table, ids));
  SCHED_ASSIGN(Tensor * out, op::scale(ctx, emb, 10.0f));
  SCHED_ASSIGN(Graph g, Graph::build({out}));
  SCHED_ASSIGN(auto sched, Scheduler::create({sim0, env.dev("cpu")}));
  SCHED_OK(sched->allocate(g));
  EXPECT_EQ(sched->device_of(0), 0) << sched->describe(g);
  EXPECT_EQ(ids->buffer->buffer_type, sim0->buffer_type());
  std::vector<float> tv(20);
  for (size_t i = 0; i < 20; ++i) tv[i] = float(i);
  SCHED_OK(set_f32(table, tv));
  const int32_t iv[3] = {4, 0, 2};
  SCHED_OK(tensor_set(ids, iv, sizeof iv));
  SCHED_OK(sched->compute(g));
  std::vector<float> want;
  for (int32_t r : iv) {
    for (int c = 0; c < 4; ++c) want.push_back(10.0f * float(r * 4 + c));
  }
  expect_close(get_f32(out), want, "out");
}

}  // namespace
}  // namespace loom::schedtest
