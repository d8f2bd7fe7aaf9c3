// Execution across devices: random graphs match the CPU alone, plans are
// reused by fingerprint, a failing device is reported and recovered from,
// and the debug outputs describe the plan.
#include <chrono>
#include <cstdio>

#include "loom/runtime/log.hpp"
#include "sched_test_util.hpp"

namespace loom::schedtest {
namespace {

using test::contains;

// A random graph over [kDim, kTok] activations: the same seed builds the same
// structure in any context. Weights are [kDim, kDim]; inputs and weights are
// returned with their values so both runs see the same data.
struct RandomGraph {
  std::vector<Tensor*> inputs, weights, outputs;
  std::vector<std::vector<float>> input_values, weight_values;
};

Status build_random(Context& ctx, uint32_t seed, RandomGraph* out) {
  std::mt19937 rng(seed);
  std::vector<Tensor*> pool;
  for (int i = 0; i < 3; ++i) {
    LOOM_ASSIGN_OR_RETURN(Tensor * x,
                          ctx.new_tensor(LOOM_TYPE_F32, {kDim, kTok}, "in" + std::to_string(i)));
    out->inputs.push_back(x);
    out->input_values.push_back(random_values(kDim * kTok, rng));
    pool.push_back(x);
  }
  for (int i = 0; i < 2; ++i) {
    LOOM_ASSIGN_OR_RETURN(Tensor * w,
                          ctx.new_tensor(LOOM_TYPE_F32, {kDim, kDim}, "w" + std::to_string(i)));
    out->weights.push_back(w);
    out->weight_values.push_back(random_values(kDim * kDim, rng, -0.25f, 0.25f));
  }
  auto pick = [&]() {
    // Mostly recent tensors, so chains form.
    size_t n = pool.size();
    size_t back = std::uniform_int_distribution<size_t>(0, std::min<size_t>(n - 1, 3))(rng);
    return pool[n - 1 - back];
  };
  const int steps = std::uniform_int_distribution<int>(6, 16)(rng);
  for (int s = 0; s < steps; ++s) {
    Tensor* a = pick();
    Tensor* r = nullptr;
    switch (std::uniform_int_distribution<int>(0, 8)(rng)) {
      case 0: {
        LOOM_ASSIGN_OR_RETURN(r, op::add(ctx, a, pick()));
        break;
      }
      case 1: {
        LOOM_ASSIGN_OR_RETURN(r, op::mul(ctx, a, pick()));
        break;
      }
      case 2: {
        LOOM_ASSIGN_OR_RETURN(r, op::scale(ctx, a, 0.5f, 0.25f));
        break;
      }
      case 3:
      case 4: {
        Tensor* w = out->weights[std::uniform_int_distribution<size_t>(0, 1)(rng)];
        LOOM_ASSIGN_OR_RETURN(r, op::mul_mat(ctx, w, a));
        break;
      }
      case 5: {
        LOOM_ASSIGN_OR_RETURN(r, op::rms_norm(ctx, a, 1e-5f));
        break;
      }
      case 6: {
        LOOM_ASSIGN_OR_RETURN(r, op::soft_max(ctx, a, nullptr, 0.7f));
        break;
      }
      case 7: {
        LOOM_ASSIGN_OR_RETURN(r, op::silu(ctx, a));
        break;
      }
      default: {
        // A view chain crossing devices, made contiguous again.
        LOOM_ASSIGN_OR_RETURN(Tensor * t1, ctx.transpose(a));
        LOOM_ASSIGN_OR_RETURN(Tensor * t2, ctx.transpose(t1));
        LOOM_ASSIGN_OR_RETURN(r, op::cont(ctx, t2));
        break;
      }
    }
    r->set_name("n" + std::to_string(s));
    pool.push_back(r);
  }
  out->outputs.push_back(pool.back());
  if (pool.size() > 5) out->outputs.push_back(pool[pool.size() - 3]);
  return Status();
}

// Run on the CPU alone through the single-device executor.
void run_cpu(registry::Device* cpu, uint32_t seed, std::vector<std::vector<float>>* results) {
  Context ctx;
  RandomGraph rg;
  SCHED_OK(build_random(ctx, seed, &rg));
  SCHED_ASSIGN(Buffer wbuf, allocate_tensors(*cpu, rg.weights));
  SCHED_ASSIGN(Graph g, Graph::build(rg.outputs));
  SCHED_ASSIGN(auto ex, Executor::create(cpu));
  SCHED_OK(ex->allocate(g));
  for (size_t i = 0; i < rg.inputs.size(); ++i) {
    if (rg.inputs[i]->data)
      SCHED_OK(set_f32(rg.inputs[i], rg.input_values[i]));  // unused inputs have none
  }
  for (size_t i = 0; i < rg.weights.size(); ++i)
    SCHED_OK(set_f32(rg.weights[i], rg.weight_values[i]));
  SCHED_OK(ex->compute(g));
  for (Tensor* o : rg.outputs) results->push_back(get_f32(o));
}

TEST(SchedulerExecution, RandomGraphsMatchCpuAlone) {
  size_t copies = 0, multi_split = 0, runs = 0;
  for (int n_sim = 2; n_sim <= 4; ++n_sim) {
    for (uint32_t seed = 1; seed <= 16; ++seed) {
      std::mt19937 cfg(seed * 101 + static_cast<uint32_t>(n_sim));
      std::vector<std::optional<std::string>> ops;
      for (int i = 0; i < n_sim; ++i) ops.push_back(random_ops(cfg));
      SimSetup env(n_sim, ops);
      SCHED_REQUIRE_DEVICES(env);
      std::vector<std::vector<float>> want;
      run_cpu(env.dev("cpu"), seed, &want);
      if (HasFatalFailure()) return;

      const std::vector<registry::Device*> devices = sims_then_cpu(env, n_sim);
      Context ctx;
      RandomGraph rg;
      SCHED_OK(build_random(ctx, seed, &rg));
      // Each weight lives on a device chosen by the seed.
      std::vector<Buffer> wbufs;
      SCHED_OK(place_randomly(rg.weights, devices, cfg, &wbufs));
      SCHED_ASSIGN(Graph g, Graph::build(rg.outputs));
      SCHED_ASSIGN(auto sched, Scheduler::create(devices));
      sched->set_check(seed % 2 == 0);  // half the runs poison dead memory after each split
      SCHED_OK(sched->allocate(g));
      for (size_t i = 0; i < rg.inputs.size(); ++i) {
        if (rg.inputs[i]->data)
          SCHED_OK(set_f32(rg.inputs[i], rg.input_values[i]));  // unused inputs have none
      }
      for (size_t i = 0; i < rg.weights.size(); ++i)
        SCHED_OK(set_f32(rg.weights[i], rg.weight_values[i]));
      SCHED_OK(sched->compute(g));
      const std::string what = "seed " + std::to_string(seed) + ", " + std::to_string(n_sim) +
                               " sim devices\n" + sched->describe(g);
      for (size_t o = 0; o < rg.outputs.size(); ++o) {
        expect_close(get_f32(rg.outputs[o]), want[o], what);
        if (HasFatalFailure()) return;
      }
      copies += sched->last_stats().copies;
      multi_split += sched->last_stats().splits > 1;
      ++runs;
    }
  }
  // The seeds must exercise real crossings, not just one device.
  EXPECT_GT(copies, runs);
  EXPECT_GT(multi_split, runs / 2);
}

// Two inputs, a small chain; `tok` sets the second extent.
Status build_chain(Context& ctx, int64_t tok, Graph* out, Tensor** x_out) {
  LOOM_ASSIGN_OR_RETURN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {8, tok}, "x"));
  LOOM_ASSIGN_OR_RETURN(Tensor * a, op::scale(ctx, x, 2.0f));
  a->set_name("a");
  LOOM_ASSIGN_OR_RETURN(Tensor * b, op::silu(ctx, a));
  b->set_name("b");
  LOOM_ASSIGN_OR_RETURN(Tensor * c, op::add(ctx, b, x));
  c->set_name("c");
  LOOM_ASSIGN_OR_RETURN(*out, Graph::build({c}));
  *x_out = x;
  return Status();
}

// build_chain(tok) on sched with x = 1 everywhere, computed `times` times,
// its output checked (c = silu(2) + 1).
void run_chain(Scheduler& sched, int64_t tok, int times = 1) {
  Context ctx;
  Graph g;
  Tensor* x = nullptr;
  SCHED_OK(build_chain(ctx, tok, &g, &x));
  SCHED_OK(sched.allocate(g));
  SCHED_OK(set_f32(x, std::vector<float>(static_cast<size_t>(8 * tok), 1.0f)));
  for (int i = 0; i < times; ++i) SCHED_OK(sched.compute(g));
  const float s = 2.0f / (1.0f + std::exp(-2.0f)) + 1.0f;
  expect_close(get_f32(g.outputs()[0]), std::vector<float>(static_cast<size_t>(8 * tok), s), "c");
}

// The scheduler's debug messages while it lives.
struct SchedLog {
  std::vector<std::string> lines;
  LogSink old;
  SchedLog() {
    set_log_filter("sched:debug,*:warn");
    old = set_log_sink([this](LogLevel, std::string_view cat, std::string_view msg) {
      if (cat == "sched") lines.emplace_back(msg);
    });
  }
  ~SchedLog() {
    set_log_sink(old);
    set_log_filter("*:warn");
  }
  bool has(const std::string& text) const {
    for (const auto& m : lines) {
      if (contains(m, text)) return true;
    }
    return false;
  }
};

TEST(SchedulerExecution, PlanIsReusedForAnIdenticalGraph) {
  SimSetup env(2, {std::string("SCALE,ADD"), std::string("SILU")});
  SCHED_REQUIRE_DEVICES(env);
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("sim1"), env.dev("cpu")}));
  SchedLog log;
  // Computing the same graph object again changes nothing either.
  run_chain(*sched, 3, 2);
  EXPECT_EQ(sched->plans_built(), 1u);
  EXPECT_EQ(sched->splits().size(), 3u);
  run_chain(*sched, 3, 2);
  EXPECT_EQ(sched->plans_built(), 1u);
  run_chain(*sched, 5, 2);
  EXPECT_EQ(sched->plans_built(), 2u);
  EXPECT_TRUE(log.has("re-plan: fingerprint"));
}

// Graphs of a few shapes in turn (a server's decode steps, with and without
// a prompt chunk beside them): each shape is planned once and its plan comes
// back; past the kept plans the oldest is planned again. Results stay right
// throughout (the kept plan's copies and memory apply to the new graph).
TEST(SchedulerExecution, PlansOfAlternatingShapesAreKept) {
  SimSetup env(2, {std::string("SCALE,ADD"), std::string("SILU")});
  SCHED_REQUIRE_DEVICES(env);
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("sim1"), env.dev("cpu")}));
  {
    SchedLog log;
    for (int i = 0; i < 6; ++i) run_chain(*sched, i % 2 ? 3 : 40);  // 40 rows grow the compute buffers
    EXPECT_EQ(sched->plans_built(), 2u);
    EXPECT_TRUE(log.has("plan kept: fingerprint"));
  }
  // As many new shapes as plans are kept: with the current one, 3 (used
  // last of the two) is still held, 40 is not.
  const auto k = static_cast<int64_t>(Scheduler::kKeptPlans);
  for (int64_t tok = 4; tok < 4 + k; ++tok) run_chain(*sched, tok);
  EXPECT_EQ(sched->plans_built(), static_cast<size_t>(2 + k));
  run_chain(*sched, 3);
  EXPECT_EQ(sched->plans_built(), static_cast<size_t>(2 + k));
  run_chain(*sched, 40);
  EXPECT_EQ(sched->plans_built(), static_cast<size_t>(3 + k));
}

TEST(SchedulerExecution, DeviceFailureNamesSplitAndDeviceAndRecovers) {
  SimSetup env(2, {std::string("SCALE,ADD"), std::string("SILU")});
  SCHED_REQUIRE_DEVICES(env);
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("sim1")}));
  Context ctx;
  Graph g;
  Tensor* x = nullptr;
  SCHED_OK(build_chain(ctx, 2, &g, &x));
  SCHED_OK(sched->allocate(g));
  SCHED_OK(set_f32(x, std::vector<float>(16, 1.0f)));
  sched->set_profile(true);
  SCHED_OK(sched->compute(g));
  EXPECT_EQ(sched->last_stats().split_us.size(), sched->splits().size());
  {
    ScopedEnv fail("LOOM_SIM_FAIL_AT", std::string("b"));
    Status st = sched->compute(g);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(contains(st.message(), "[sched.compute] split 1 on device 'sim1'")) << st.message();
    EXPECT_TRUE(contains(st.message(), "injected failure at node 'b'")) << st.message();
  }
  SCHED_OK(sched->compute(g));
  const float s = 2.0f / (1.0f + std::exp(-2.0f)) + 1.0f;
  expect_close(get_f32(g.outputs()[0]), std::vector<float>(16, s), "c");
  // The failed compute restored the nodes' sources.
  EXPECT_EQ(std::string(g.nodes()[2]->src[0]->name), "b");
}

TEST(SchedulerExecution, ReserveSizesBuffersOnce) {
  SimSetup env(2, {std::string("SCALE,ADD"), std::string("SILU")});
  SCHED_REQUIRE_DEVICES(env);
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("sim1"), env.dev("cpu")}));
  Context big_ctx;
  Graph big;
  Tensor* bx = nullptr;
  SCHED_OK(build_chain(big_ctx, 64, &big, &bx));
  SCHED_OK(sched->reserve(big));
  const size_t s0 = sched->compute_buffer_size(0), s1 = sched->compute_buffer_size(1);
  EXPECT_GT(s0, 0u);
  EXPECT_GT(s1, 0u);
  for (int64_t tok : {1, 7, 32}) {
    Context ctx;
    Graph g;
    Tensor* x = nullptr;
    SCHED_OK(build_chain(ctx, tok, &g, &x));
    SCHED_OK(sched->allocate(g));
    SCHED_OK(set_f32(x, std::vector<float>(static_cast<size_t>(8 * tok), 0.5f)));
    SCHED_OK(sched->compute(g));
    EXPECT_EQ(sched->compute_buffer_size(0), s0);
    EXPECT_EQ(sched->compute_buffer_size(1), s1);
  }
}

TEST(SchedulerExecution, DebugTextAndDot) {
  SimSetup env(1, {std::string("MUL_MAT")});
  SCHED_REQUIRE_DEVICES(env);
  registry::Device* sim0 = env.dev("sim0");
  Context ctx;
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {4, 2}, "x"));
  SCHED_ASSIGN(Tensor * w, ctx.new_tensor(LOOM_TYPE_F32, {4, 4}, "w"));
  w->flags |= LOOM_TENSOR_FLAG_PARAM;
  SCHED_ASSIGN(Buffer weights, allocate_tensors(*sim0, {w}));
  SCHED_ASSIGN(Tensor * h, op::mul_mat(ctx, w, x));
  h->set_name("h");
  SCHED_ASSIGN(Tensor * o, op::silu(ctx, h));
  o->set_name("o");
  SCHED_ASSIGN(Graph g, Graph::build({o}));
  SCHED_ASSIGN(auto sched, Scheduler::create({sim0, env.dev("cpu")}));
  SCHED_OK(sched->allocate(g));
  const std::string text = sched->describe(g);
  EXPECT_TRUE(contains(text, "split 0 on sim0: nodes 0..0")) << text;
  EXPECT_TRUE(contains(text, "split 1 on cpu: nodes 1..1")) << text;
  EXPECT_TRUE(contains(text, "input 'h' 32 bytes from sim0")) << text;
  EXPECT_TRUE(contains(text, "weights 'w' live there")) << text;
  EXPECT_TRUE(contains(text, "fallback")) << text;
  const std::string dot = sched->to_dot(g);
  EXPECT_TRUE(contains(dot, "digraph loom_plan")) << dot;
  EXPECT_TRUE(contains(dot, "subgraph cluster_dev_0")) << dot;
  EXPECT_TRUE(contains(dot, "subgraph cluster_split_1")) << dot;
  // The weight in sim0's cluster; h copied to the cpu by split 1, read by o.
  EXPECT_TRUE(contains(dot, "label=\"sim0: weights 64 B")) << dot;
  EXPECT_TRUE(contains(dot, "l0 [label=\"w\\lf32 [4, 4], 64 B, weight\\l\", shape=ellipse")) << dot;
  EXPECT_TRUE(contains(dot, "c0 [label=\"h@cpu\\lcopy f32 [4, 2], 32 B\\l\", shape=note")) << dot;
  EXPECT_TRUE(contains(dot, "n0 -> c0 [color=red, fontcolor=red, label=\"copy 32 B\"]")) << dot;
  EXPECT_TRUE(contains(dot, "c0 -> n1;")) << dot;
  // The split level: a box per split, the copy as an edge with its size.
  const std::string splits = sched->render(g, PlanDetail::kSplits, PlanFormat::kDot);
  EXPECT_TRUE(contains(splits, "s0 [label=\"split 0 on sim0\\lweights w\\lnodes 0..0: 1 computed, 0 views")) << splits;
  EXPECT_TRUE(contains(splits, "s0 -> s1 [label=\"copy 1 tensor, 32 B\", color=red")) << splits;
  const std::string brief = sched->render(g, PlanDetail::kSplits, PlanFormat::kText);
  EXPECT_TRUE(contains(brief, "split 1 on cpu: nodes 1..1: 1 computed, 0 views; no weights read here")) << brief;
  EXPECT_TRUE(contains(brief, "\n  in: copy 1 tensor, 32 B from split 0 (sim0)\n")) << brief;
  // LOOM_SCHED_DEBUG=1 (read at create) prints every new plan to stderr.
  ScopedEnv debug("LOOM_SCHED_DEBUG", std::string("1"));
  SCHED_ASSIGN(auto loud, Scheduler::create({sim0, env.dev("cpu")}));
  testing::internal::CaptureStderr();
  Status st = loud->allocate(g);
  const std::string err = testing::internal::GetCapturedStderr();
  SCHED_OK(st);
  EXPECT_TRUE(contains(err, "[sched] split 1 on cpu: nodes 1..1")) << err;
  EXPECT_TRUE(contains(err, "input 'h' 32 bytes from sim0")) << err;
}

}  // namespace
}  // namespace loom::schedtest

namespace loom::schedtest {
namespace {

// A chain of n nodes alternating between sim0 (SCALE, ADD) and sim1 (SILU).
Status build_long(Context& ctx, int n, Graph* out, Tensor** x_out) {
  LOOM_ASSIGN_OR_RETURN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {8, 2}, "x"));
  Tensor* cur = x;
  for (int i = 0; i < n; ++i) {
    switch (i % 3) {
      case 0: {
        LOOM_ASSIGN_OR_RETURN(cur, op::scale(ctx, cur, 0.5f));
        break;
      }
      case 1: {
        LOOM_ASSIGN_OR_RETURN(cur, op::silu(ctx, cur));
        break;
      }
      default: {
        LOOM_ASSIGN_OR_RETURN(cur, op::add(ctx, cur, x));
        break;
      }
    }
  }
  LOOM_ASSIGN_OR_RETURN(*out, Graph::build({cur}));
  *x_out = x;
  return Status();
}

// Planning + allocation per graph with reuse vs without, same run (printed;
// counted, not timed, in the assertions).
TEST(SchedulerExecution, ReuseSkipsPlanningOnALargeGraph) {
  SimSetup env(2, {std::string("SCALE,ADD"), std::string("SILU")});
  SCHED_REQUIRE_DEVICES(env);
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("sim1"), env.dev("cpu")}));
  constexpr int kNodes = 3000;
  constexpr int kRounds = 5;
  double fresh_us = 0, reuse_us = 0;
  for (int r = 0; r < kRounds; ++r) {
    for (int reuse = 0; reuse < 2; ++reuse) {
      Context ctx;
      Graph g;
      Tensor* x = nullptr;
      // Each round's graph has a length of its own: a plan of no earlier
      // round (kept plans come back) fits it. The pin of the SCALE nodes
      // alternates as well.
      SCHED_OK(build_long(ctx, kNodes + r, &g, &x));
      if (!reuse) SCHED_OK(sched->pin("scale", env.dev(r % 2 ? "cpu" : "sim0")));
      const size_t before = sched->plans_built();
      auto t0 = std::chrono::steady_clock::now();
      SCHED_OK(sched->allocate(g));
      auto t1 = std::chrono::steady_clock::now();
      (reuse ? reuse_us : fresh_us) += std::chrono::duration<double, std::micro>(t1 - t0).count();
      EXPECT_EQ(sched->plans_built(), before + (reuse ? 0u : 1u));
      if (reuse) {
        SCHED_OK(set_f32(x, std::vector<float>(16, 0.25f)));
        SCHED_OK(sched->compute(g));
        EXPECT_EQ(sched->plans_built(), before);
      }
    }
  }
  std::printf(
      "[ reuse    ] %d nodes, %zu splits: plan+allocate %.0f us without reuse, %.0f us with reuse "
      "(mean of %d)\n",
      kNodes, sched->splits().size(), fresh_us / kRounds, reuse_us / kRounds, kRounds);
}

// A graph whose tensors one executor (or scheduler) placed in its compute
// buffer, computed again by a second one after the first is gone: the first
// placement is forgotten and the graph placed anew (before, the second
// allocate read the dead buffer through the input's pointer: a crash in
// the cpu device's buffer-type check, or ASan's use after free).
TEST(SchedulerExecution, ASecondRunnerAfterTheFirstIsGonePlacesTheGraphAgain) {
  SimSetup env(1, {std::nullopt});
  SCHED_REQUIRE_DEVICES(env);
  registry::Device* cpu = env.dev("cpu");
  Context ctx;
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {kDim, kTok}, "x"));
  SCHED_ASSIGN(Tensor * y, op::scale(ctx, x, 2.0f, 1.0f));
  SCHED_ASSIGN(Tensor * z, op::add(ctx, y, x));
  SCHED_ASSIGN(Graph g, Graph::build({z}));
  std::vector<float> in(static_cast<size_t>(kDim * kTok)), want(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = static_cast<float>(i) * 0.25f - 3.0f;
    want[i] = 3.0f * in[i] + 1.0f;
  }
  for (int round = 0; round < 3; ++round) {
    SCHED_ASSIGN(auto ex, Executor::create(cpu));
    SCHED_OK(ex->allocate(g));
    ASSERT_NE(x->data, nullptr);
    SCHED_OK(set_f32(x, in));
    SCHED_OK(ex->compute(g));
    expect_close(get_f32(z), want, "executor round " + std::to_string(round));
  }
  // The same graph through a scheduler, twice, then an executor again.
  for (int round = 0; round < 2; ++round) {
    SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), cpu}));
    SCHED_OK(sched->allocate(g));
    SCHED_OK(sched->set_input(x, in.data(), in.size() * sizeof(float)));
    SCHED_OK(sched->compute(g));
    std::vector<float> got(in.size());
    SCHED_OK(tensor_get(z, got.data(), got.size() * sizeof(float)));
    expect_close(got, want, "scheduler round " + std::to_string(round));
  }
  SCHED_ASSIGN(auto ex, Executor::create(cpu));
  SCHED_OK(ex->compute(g));  // places the graph itself
  SCHED_OK(set_f32(x, in));
  SCHED_OK(ex->compute(g));
  expect_close(get_f32(z), want, "executor after the schedulers");
  // Memory the caller then gives a tensor a runner had placed is the
  // caller's: never forgotten when that runner is gone.
  ex.reset();
  x->data = nullptr;
  x->buffer = nullptr;
  SCHED_ASSIGN(Buffer mine, allocate_tensors(*cpu, {x}));
  void* given = x->data;
  SCHED_OK(set_f32(x, in));
  SCHED_ASSIGN(auto last, Executor::create(cpu));
  SCHED_OK(last->compute(g));
  EXPECT_EQ(x->data, given);
  expect_close(get_f32(z), want, "executor over the caller's input buffer");
}

}  // namespace
}  // namespace loom::schedtest
