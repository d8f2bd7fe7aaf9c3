// Placement, splits and copies on known small graphs (exact plans).
#include "sched_test_util.hpp"

namespace loom::schedtest {
namespace {

using test::contains;

// x [8, 4] -> mm1 = W1 x (sim0) -> s = silu (cpu) -> mm2 = W2 s (sim0) -> out = 2 mm2 (cpu).
TEST(SchedulerPlacement, MatmulOnlyDeviceGivesExactSplitsAndCopies) {
  SimSetup env(1, {std::string("MUL_MAT")});
  SCHED_REQUIRE_DEVICES(env);
  registry::Device* sim0 = env.dev("sim0");
  registry::Device* cpu = env.dev("cpu");
  Context ctx;
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {8, 4}, "x"));
  SCHED_ASSIGN(Tensor * w1, ctx.new_tensor(LOOM_TYPE_F32, {8, 6}, "w1"));
  SCHED_ASSIGN(Tensor * w2, ctx.new_tensor(LOOM_TYPE_F32, {6, 5}, "w2"));
  SCHED_ASSIGN(Buffer weights, allocate_tensors(*sim0, {w1, w2}));
  SCHED_ASSIGN(Tensor * mm1, op::mul_mat(ctx, w1, x));
  mm1->set_name("mm1");
  SCHED_ASSIGN(Tensor * s, op::silu(ctx, mm1));
  s->set_name("s");
  SCHED_ASSIGN(Tensor * mm2, op::mul_mat(ctx, w2, s));
  mm2->set_name("mm2");
  SCHED_ASSIGN(Tensor * out, op::scale(ctx, mm2, 2.0f));
  out->set_name("out");
  SCHED_ASSIGN(Graph g, Graph::build({out}));

  SCHED_ASSIGN(auto sched, Scheduler::create({sim0, cpu}));
  SCHED_OK(sched->allocate(g));
  auto splits = sched->splits();
  ASSERT_EQ(splits.size(), 4u) << sched->describe(g);
  const size_t want_dev[] = {0, 1, 0, 1};
  const char* want_input[] = {nullptr, "mm1", "s", "mm2"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(splits[i].device, want_dev[i]) << "split " << i;
    EXPECT_EQ(splits[i].nodes.size(), 1u) << "split " << i;
    if (!want_input[i]) {
      EXPECT_TRUE(splits[i].inputs.empty());
    } else {
      ASSERT_EQ(splits[i].inputs.size(), 1u) << "split " << i;
      EXPECT_TRUE(contains(splits[i].inputs[0], want_input[i])) << splits[i].inputs[0];
    }
  }
  EXPECT_EQ(sched->copy_count(), 3u);
  // x lives on sim0 (its first reader): written through the ABI.
  EXPECT_EQ(x->buffer->buffer_type, sim0->buffer_type());

  std::mt19937 rng(7);
  auto xv = random_values(32, rng), w1v = random_values(48, rng), w2v = random_values(30, rng);
  SCHED_OK(set_f32(x, xv));
  SCHED_OK(set_f32(w1, w1v));
  SCHED_OK(set_f32(w2, w2v));
  SCHED_OK(sched->compute(g));
  EXPECT_EQ(sched->last_stats().splits, 4u);
  EXPECT_EQ(sched->last_stats().copies, 3u);
  EXPECT_EQ(sched->last_stats().bytes_copied, (24u + 24u + 20u) * 4u);
  // Host reference.
  std::vector<float> h1(24), h2(20);
  for (int n = 0; n < 4; ++n)
    for (int m = 0; m < 6; ++m) {
      double acc = 0;
      for (int k = 0; k < 8; ++k) acc += double(w1v[m * 8 + k]) * xv[n * 8 + k];
      float v = float(acc);
      h1[n * 6 + m] = v / (1.0f + std::exp(-v));
    }
  for (int n = 0; n < 4; ++n)
    for (int m = 0; m < 5; ++m) {
      double acc = 0;
      for (int k = 0; k < 6; ++k) acc += double(w2v[m * 6 + k]) * h1[n * 6 + k];
      h2[n * 5 + m] = 2.0f * float(acc);
    }
  expect_close(get_f32(out), h2, "out");
}

TEST(SchedulerPlacement, UnsupportedEverywhereIsANamedError) {
  SimSetup env(2, {std::string("ADD"), std::string("MUL,ADD")});
  SCHED_REQUIRE_DEVICES(env);
  Context ctx;
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {4, 2}, "x"));
  SCHED_ASSIGN(Tensor * a, op::add(ctx, x, x));
  SCHED_ASSIGN(Tensor * s, op::silu(ctx, a));
  s->set_name("the_silu");
  SCHED_ASSIGN(Graph g, Graph::build({s}));
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("sim1")}));
  Status st = sched->compute(g);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  const std::string& m = st.message();
  EXPECT_TRUE(contains(m, "[sched.place]")) << m;
  EXPECT_TRUE(contains(m, "'the_silu'")) << m;
  EXPECT_TRUE(contains(m, "SILU f32 -> f32")) << m;
  EXPECT_TRUE(contains(m, "sim0, sim1")) << m;
  // Still usable: a graph it can place.
  SCHED_ASSIGN(Graph g2, Graph::build({a}));
  SCHED_OK(sched->compute(g2));
}

TEST(SchedulerPlacement, PinnedNodesStay) {
  SimSetup env(2, {});
  SCHED_REQUIRE_DEVICES(env);
  registry::Device* sim0 = env.dev("sim0");
  registry::Device* sim1 = env.dev("sim1");
  Context ctx;
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {4, 3}, "x"));
  SCHED_ASSIGN(Tensor * y, ctx.new_tensor(LOOM_TYPE_F32, {4, 3}, "y"));
  SCHED_ASSIGN(Tensor * a, op::add(ctx, x, y));
  SCHED_ASSIGN(Tensor * b, op::mul(ctx, a, y));
  SCHED_ASSIGN(Tensor * c, op::scale(ctx, b, 0.5f, 1.0f));
  SCHED_ASSIGN(Graph g, Graph::build({c}));
  SCHED_ASSIGN(auto sched, Scheduler::create({sim0, sim1}));
  SCHED_OK(sched->pin(b, sim1));
  EXPECT_FALSE(sched->pin(b, env.dev("cpu")).ok());  // not one of its devices
  // Alone, the pin's region grows over the whole graph.
  SCHED_OK(sched->allocate(g));
  EXPECT_EQ(sched->device_of(0), 1);
  EXPECT_EQ(sched->device_of(2), 1);
  EXPECT_EQ(sched->splits().size(), 1u);
  EXPECT_EQ(sched->plans_built(), 1u);
  SCHED_OK(sched->pin(a, sim0));
  SCHED_OK(sched->pin(c, sim0));
  SCHED_OK(sched->allocate(g));
  EXPECT_EQ(sched->plans_built(), 2u);  // pins are part of the fingerprint
  EXPECT_EQ(sched->device_of(0), 0);
  EXPECT_EQ(sched->device_of(1), 1);
  EXPECT_EQ(sched->device_of(2), 0);
  auto splits = sched->splits();
  ASSERT_EQ(splits.size(), 3u) << sched->describe(g);
  // b reads a and y from sim0: two copies in; c reads b back: one.
  EXPECT_EQ(splits[1].inputs.size(), 2u);
  EXPECT_EQ(splits[2].inputs.size(), 1u);
  std::vector<float> xv = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, yv(12, 2.0f), want(12);
  SCHED_OK(set_f32(x, xv));
  SCHED_OK(set_f32(y, yv));
  SCHED_OK(sched->compute(g));
  for (size_t i = 0; i < 12; ++i) want[i] = (xv[i] + 2.0f) * 2.0f * 0.5f + 1.0f;
  expect_close(get_f32(c), want, "c");
  // Pins are by name: a rebuilt graph keeps them (and reuses the plan).
  Context ctx2;
  SCHED_ASSIGN(Tensor * x2, ctx2.new_tensor(LOOM_TYPE_F32, {4, 3}, "x"));
  SCHED_ASSIGN(Tensor * y2, ctx2.new_tensor(LOOM_TYPE_F32, {4, 3}, "y"));
  SCHED_ASSIGN(Tensor * a2, op::add(ctx2, x2, y2));
  SCHED_ASSIGN(Tensor * b2, op::mul(ctx2, a2, y2));
  SCHED_ASSIGN(Tensor * c2, op::scale(ctx2, b2, 0.5f, 1.0f));
  SCHED_ASSIGN(Graph g2, Graph::build({c2}));
  SCHED_OK(sched->allocate(g2));
  EXPECT_EQ(sched->plans_built(), 2u);
  EXPECT_EQ(sched->device_of(1), 1);
}

TEST(SchedulerPlacement, CopiesAreDeduplicated) {
  SimSetup env(1, {std::string("MUL_MAT")});
  SCHED_REQUIRE_DEVICES(env);
  registry::Device* sim0 = env.dev("sim0");
  Context ctx;
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {4, 2}, "x"));
  SCHED_ASSIGN(Tensor * w, ctx.new_tensor(LOOM_TYPE_F32, {4, 4}, "w"));
  SCHED_ASSIGN(Buffer weights, allocate_tensors(*sim0, {w}));
  SCHED_ASSIGN(Tensor * h, op::mul_mat(ctx, w, x));
  h->set_name("h");
  SCHED_ASSIGN(Tensor * a, op::silu(ctx, h));
  SCHED_ASSIGN(Tensor * b, op::scale(ctx, h, 3.0f));
  SCHED_ASSIGN(Tensor * c, op::add(ctx, a, b));
  SCHED_ASSIGN(Graph g, Graph::build({c}));
  SCHED_ASSIGN(auto sched, Scheduler::create({sim0, env.dev("cpu")}));
  SCHED_OK(sched->allocate(g));
  auto splits = sched->splits();
  ASSERT_EQ(splits.size(), 2u) << sched->describe(g);
  EXPECT_EQ(sched->copy_count(), 1u);
  ASSERT_EQ(splits[1].inputs.size(), 1u);
  EXPECT_TRUE(contains(splits[1].inputs[0], "h (32 bytes)")) << splits[1].inputs[0];
  std::vector<float> xv = {1, 0, 0, 0, 0, 1, 0, 0}, wv(16);
  for (size_t i = 0; i < 16; ++i) wv[i] = float(i) * 0.1f;
  SCHED_OK(set_f32(x, xv));
  SCHED_OK(set_f32(w, wv));
  SCHED_OK(sched->compute(g));
  std::vector<float> want(8);
  for (int n = 0; n < 2; ++n)
    for (int m = 0; m < 4; ++m) {
      float hv = wv[m * 4 + n];  // x column n is the unit vector e_n
      want[n * 4 + m] = hv / (1.0f + std::exp(-hv)) + 3.0f * hv;
    }
  expect_close(get_f32(c), want, "c");
}

// Weights in a host-memory buffer of another device (null0): the CPU reads
// them where they are.
TEST(SchedulerPlacement, NoCopyFromHostReadableBuffers) {
  SimSetup env(1, {}, /*with_null=*/true);
  SCHED_REQUIRE_DEVICES(env);
  registry::Device* null0 = env.dev("null0");
  if (!null0) GTEST_SKIP() << "null plugin not loaded:\n" << env.why();
  Context ctx;
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {3, 2}, "x"));
  SCHED_ASSIGN(Tensor * w, ctx.new_tensor(LOOM_TYPE_F32, {3, 3}, "w"));
  SCHED_ASSIGN(Buffer weights, allocate_tensors(*null0, {w}));
  SCHED_ASSIGN(Tensor * h, op::mul_mat(ctx, w, x));
  SCHED_ASSIGN(Tensor * o, op::add(ctx, h, h));
  SCHED_ASSIGN(Graph g, Graph::build({o}));
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("cpu"), null0}));
  SCHED_OK(sched->allocate(g));
  EXPECT_EQ(sched->copy_count(), 0u) << sched->describe(g);
  ASSERT_EQ(sched->splits().size(), 1u);
  std::vector<float> xv = {1, 2, 3, 4, 5, 6}, wv = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  SCHED_OK(set_f32(x, xv));
  SCHED_OK(set_f32(w, wv));
  SCHED_OK(sched->compute(g));
  expect_close(get_f32(o), {2, 4, 6, 8, 10, 12}, "o");
}

// A host-memory accelerator (like BLAS) listed before the CPU takes the
// CPU's matmuls, with zero copies either way; the rest stays on the CPU.
TEST(SchedulerPlacement, HostAcceleratorTakesMatmulsWithZeroCopies) {
  SimSetup env(1, {std::string("MUL_MAT")}, false, {true});
  SCHED_REQUIRE_DEVICES(env);
  registry::Device* accel = env.dev("sim0");
  registry::Device* cpu = env.dev("cpu");
  Context ctx;
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {4, 3}, "x"));
  SCHED_ASSIGN(Tensor * w, ctx.new_tensor(LOOM_TYPE_F32, {4, 4}, "w"));
  SCHED_ASSIGN(Buffer wbuf, allocate_tensors(*cpu, {w}));  // weights in CPU memory
  SCHED_ASSIGN(Tensor * n, op::scale(ctx, x, 1.0f, 1.0f));
  n->set_name("pre");
  SCHED_ASSIGN(Tensor * h, op::mul_mat(ctx, w, n));
  h->set_name("mm");
  SCHED_ASSIGN(Tensor * o, op::silu(ctx, h));
  o->set_name("post");
  SCHED_ASSIGN(Graph g, Graph::build({o}));
  SCHED_ASSIGN(auto sched, Scheduler::create({accel, cpu}));
  sched->set_offload(false);  // the rule-based move alone (sim0 is GPU-typed)
  SCHED_OK(sched->allocate(g));
  const std::string plan = sched->describe(g);
  EXPECT_EQ(sched->device_of(0), 1) << plan;
  EXPECT_EQ(sched->device_of(1), 0) << plan;
  EXPECT_EQ(sched->device_of(2), 1) << plan;
  EXPECT_EQ(sched->copy_count(), 0u) << plan;
  EXPECT_EQ(sched->splits().size(), 3u) << plan;
  EXPECT_TRUE(contains(plan, "moved from cpu: reads the same buffers")) << plan;
  std::vector<float> xv(12), wv(16, 0.0f), want(12);
  for (size_t i = 0; i < 12; ++i) xv[i] = float(i) * 0.1f;
  for (int i = 0; i < 4; ++i) wv[i * 4 + i] = 2.0f;  // 2 I
  SCHED_OK(set_f32(x, xv));
  SCHED_OK(set_f32(w, wv));
  SCHED_OK(sched->compute(g));
  EXPECT_EQ(sched->last_stats().copies, 0u);
  for (size_t i = 0; i < 12; ++i) {
    float v = 2.0f * (xv[i] + 1.0f);
    want[i] = v / (1.0f + std::exp(-v));
  }
  expect_close(get_f32(o), want, "post");
}

// An emulated device (a GPU API on the CPU, like lavapipe) is used when
// named and never picked by a policy.
TEST(SchedulerSelection, EmulatedDevicesOnlyWhenNamed) {
  ScopedEnv emu("LOOM_SIM_EMULATED_1", std::optional<std::string>("1"));
  SimSetup env(2, {});
  SCHED_REQUIRE_DEVICES(env);
  ASSERT_NE(env.dev("sim1"), nullptr);
  EXPECT_TRUE(env.dev("sim1")->info().caps & LOOM_DEVICE_CAP_EMULATED);
  for (const char* policy : {"auto", "gpu-first", "cpu-only"}) {
    SCHED_ASSIGN(auto picked, env.reg().select(policy));
    for (registry::Device* d : picked) EXPECT_NE(d->name(), "sim1") << policy;
  }
  SCHED_ASSIGN(auto all, env.reg().select("auto"));
  EXPECT_EQ(all.size(), 2u);  // sim0, cpu
  SCHED_ASSIGN(auto named, env.reg().select("sim1,cpu"));
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0]->name(), "sim1");
}

// The preferred-device move is cost-based: a host-memory sim0 whose
// loom.cost hint says it is slow keeps nothing; a fast one takes the matmul.
TEST(SchedulerPlacement, PreferredDeviceMoveFollowsCostHints) {
  for (const char* flops : {"1", "1e9"}) {
    ScopedEnv speed("LOOM_SIM_FLOPS_0", std::optional<std::string>(flops));
    SimSetup env(1, {std::string("MUL_MAT")}, false, {true});
    SCHED_REQUIRE_DEVICES(env);
    registry::Device* accel = env.dev("sim0");
    registry::Device* cpu = env.dev("cpu");
    Context ctx;
    SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {64, 8}, "x"));
    SCHED_ASSIGN(Tensor * w, ctx.new_tensor(LOOM_TYPE_F32, {64, 64}, "w"));
    SCHED_ASSIGN(Buffer wbuf, allocate_tensors(*cpu, {w}));
    SCHED_ASSIGN(Tensor * n, op::scale(ctx, x, 1.0f, 0.0f));
    SCHED_ASSIGN(Tensor * h, op::mul_mat(ctx, w, n));
    SCHED_ASSIGN(Graph g, Graph::build({h}));
    // 2*64*64*8 = 65536 flops: 65536 us at 1 flop/us, far below a us at 1e9.
    EXPECT_NEAR(accel->op_time_us(h), 65536.0 / std::stod(flops), 1e-9);
    SCHED_ASSIGN(auto sched, Scheduler::create({accel, cpu}));
    sched->set_offload(false);
    SCHED_OK(sched->allocate(g));
    const std::string plan = sched->describe(g);
    const bool fast = std::string(flops) == "1e9";
    EXPECT_EQ(sched->device_of(1), fast ? 0 : 1) << flops << "\n" << plan;
    EXPECT_EQ(contains(plan, "moved from cpu: reads the same buffers, est."), fast) << plan;
    EXPECT_EQ(sched->copy_count(), 0u) << plan;
  }
}

// Weights in CPU memory: a decode-size matmul stays with them, a large
// batch goes to the GPU-like sim0 (weight copy included in its estimate).
TEST(SchedulerPlacement, LargeBatchesOffloadByCost) {
  SimSetup env(1, {});
  SCHED_REQUIRE_DEVICES(env);
  registry::Device* sim0 = env.dev("sim0");
  registry::Device* cpu = env.dev("cpu");
  for (int64_t batch : {1, 2048}) {
    for (bool offload : {true, false}) {
      Context ctx;
      SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {64, batch}, "x"));
      SCHED_ASSIGN(Tensor * w, ctx.new_tensor(LOOM_TYPE_F32, {64, 64}, "w"));
      SCHED_ASSIGN(Buffer wbuf, allocate_tensors(*cpu, {w}));
      SCHED_ASSIGN(Tensor * h, op::mul_mat(ctx, w, x));
      SCHED_ASSIGN(Graph g, Graph::build({h}));
      SCHED_ASSIGN(auto sched, Scheduler::create({sim0, cpu}));
      sched->set_offload(offload);
      SCHED_OK(sched->allocate(g));
      const int want = offload && batch > 1 ? 0 : 1;
      EXPECT_EQ(sched->device_of(0), want) << "batch " << batch << "\n" << sched->describe(g);
      if (want == 0) {
        EXPECT_TRUE(contains(sched->describe(g), "offload from cpu: est.")) << sched->describe(g);
        EXPECT_EQ(sched->copy_count(), 1u);  // the weights
      }
      std::vector<float> xv(static_cast<size_t>(64 * batch)), wv(64 * 64, 0.0f);
      for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(i % 7) - 3.0f;
      for (int i = 0; i < 64; ++i) wv[static_cast<size_t>(i * 64 + i)] = 0.5f;
      SCHED_OK(set_f32(x, xv));
      SCHED_OK(set_f32(w, wv));
      SCHED_OK(sched->compute(g));
      std::vector<float> want_v(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) want_v[i] = 0.5f * xv[i];
      expect_close(get_f32(h), want_v, "h");
    }
  }
}

TEST(SchedulerPlacement, BadCreateArguments) {
  EXPECT_FALSE(Scheduler::create({}).ok());
  EXPECT_FALSE(Scheduler::create({nullptr}).ok());
}

}  // namespace
}  // namespace loom::schedtest
