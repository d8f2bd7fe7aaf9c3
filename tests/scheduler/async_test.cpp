// Asynchronous execution (LOOM_SIM_ASYNC=1: worker-thread streams, events,
// queued copies, random delays per work item): random graphs over 2-4
// simulated devices + CPU equal the CPU alone with pipelining 1 and 2 and on
// repeated computes (plan reuse); events are really used; a device failing
// mid-graph is named with its split and the scheduler recovers.
#include "loom/runtime/log.hpp"
#include "sched_test_util.hpp"

namespace loom::schedtest {
namespace {

using test::contains;

// Async sim streams with jitter, for one SimSetup (declare before it).
struct AsyncEnv {
  ScopedEnv async{"LOOM_SIM_ASYNC", std::string("1")};
  ScopedEnv jitter{"LOOM_SIM_JITTER_US", std::string("40")};
};

// A random graph of several interleaved chains over [kDim, kTok]
// activations, so that independent work exists on different devices.
struct ChainGraph {
  std::vector<Tensor*> inputs, weights, outputs;
};

Status build_chains(Context& ctx, uint32_t seed, ChainGraph* out) {
  std::mt19937 rng(seed);
  std::vector<std::vector<Tensor*>> chains(3);
  for (int i = 0; i < 3; ++i) {
    LOOM_ASSIGN_OR_RETURN(Tensor * x,
                          ctx.new_tensor(LOOM_TYPE_F32, {kDim, kTok}, "in" + std::to_string(i)));
    x->flags |= LOOM_TENSOR_FLAG_INPUT;
    out->inputs.push_back(x);
    chains[static_cast<size_t>(i)].push_back(x);
  }
  for (int i = 0; i < 2; ++i) {
    LOOM_ASSIGN_OR_RETURN(Tensor * w,
                          ctx.new_tensor(LOOM_TYPE_F32, {kDim, kDim}, "w" + std::to_string(i)));
    out->weights.push_back(w);
  }
  const int steps = std::uniform_int_distribution<int>(10, 24)(rng);
  for (int s = 0; s < steps; ++s) {
    auto& chain = chains[std::uniform_int_distribution<size_t>(0, 2)(rng)];
    Tensor* a = chain.back();
    // Now and then read another chain's latest value (a cross-chain edge).
    auto other = [&]() { return chains[std::uniform_int_distribution<size_t>(0, 2)(rng)].back(); };
    Tensor* r = nullptr;
    switch (std::uniform_int_distribution<int>(0, 8)(rng)) {
      case 0:
        {
          LOOM_ASSIGN_OR_RETURN(r, op::add(ctx, a, other()));
        }
        break;
      case 1:
        {
          LOOM_ASSIGN_OR_RETURN(r, op::mul(ctx, a, other()));
        }
        break;
      case 2:
        {
          LOOM_ASSIGN_OR_RETURN(r, op::scale(ctx, a, 0.5f, 0.25f));
        }
        break;
      case 3:
      case 4: {
        Tensor* w = out->weights[std::uniform_int_distribution<size_t>(0, 1)(rng)];
        LOOM_ASSIGN_OR_RETURN(r, op::mul_mat(ctx, w, a));
        break;
      }
      case 5:
        {
          LOOM_ASSIGN_OR_RETURN(r, op::rms_norm(ctx, a, 1e-5f));
        }
        break;
      case 6:
        {
          LOOM_ASSIGN_OR_RETURN(r, op::soft_max(ctx, a, nullptr, 0.7f));
        }
        break;
      case 7:
        {
          LOOM_ASSIGN_OR_RETURN(r, op::silu(ctx, a));
        }
        break;
      default: {
        LOOM_ASSIGN_OR_RETURN(Tensor * t1, ctx.transpose(a));
        LOOM_ASSIGN_OR_RETURN(Tensor * t2, ctx.transpose(t1));
        LOOM_ASSIGN_OR_RETURN(r, op::cont(ctx, t2));
        break;
      }
    }
    r->set_name("n" + std::to_string(s));
    chain.push_back(r);
  }
  for (auto& c : chains) {
    if (c.size() > 1) out->outputs.push_back(c.back());
  }
  if (out->outputs.empty()) out->outputs.push_back(chains[0].back());
  return Status();
}

// Values of the inputs and weights for run `run` of a seed.
std::vector<std::vector<float>> values_for(const ChainGraph& rg, uint32_t seed, int run) {
  std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(run));
  std::vector<std::vector<float>> v;
  for (size_t i = 0; i < rg.inputs.size(); ++i) v.push_back(random_values(kDim * kTok, rng));
  for (size_t i = 0; i < rg.weights.size(); ++i)
    v.push_back(random_values(kDim * kDim, rng, -0.25f, 0.25f));
  return v;
}

Status set_values(const ChainGraph& rg, const std::vector<std::vector<float>>& v) {
  for (size_t i = 0; i < rg.inputs.size(); ++i) {
    if (rg.inputs[i]->data) LOOM_RETURN_IF_ERROR(set_f32(rg.inputs[i], v[i]));  // unused: none
  }
  for (size_t i = 0; i < rg.weights.size(); ++i)
    LOOM_RETURN_IF_ERROR(set_f32(rg.weights[i], v[rg.inputs.size() + i]));
  return Status();
}

constexpr int kRuns = 3;  // computes of one graph: the first plans, the others reuse

// The CPU alone, through the single-device executor, for each run's values.
void run_cpu(registry::Device* cpu, uint32_t seed,
             std::vector<std::vector<std::vector<float>>>* results) {
  Context ctx;
  ChainGraph rg;
  SCHED_OK(build_chains(ctx, seed, &rg));
  SCHED_ASSIGN(Buffer wbuf, allocate_tensors(*cpu, rg.weights));
  SCHED_ASSIGN(Graph g, Graph::build(rg.outputs));
  SCHED_ASSIGN(auto ex, Executor::create(cpu));
  SCHED_OK(ex->allocate(g));
  for (int run = 0; run < kRuns; ++run) {
    SCHED_OK(set_values(rg, values_for(rg, seed, run)));
    SCHED_OK(ex->compute(g));
    results->emplace_back();
    for (Tensor* o : rg.outputs) results->back().push_back(get_f32(o));
  }
}

TEST(SchedulerAsync, RandomGraphsMatchCpuAloneWithPipelining1And2) {
  SchedStats total;
  size_t runs = 0, multi_split = 0;
  for (int pipelining : {1, 2}) {
    for (int n_sim = 2; n_sim <= 4; ++n_sim) {
      for (uint32_t seed = 1; seed <= 10; ++seed) {
        std::mt19937 cfg(seed * 131 + static_cast<uint32_t>(n_sim));
        std::vector<std::optional<std::string>> ops;
        std::vector<bool> host;
        for (int i = 0; i < n_sim; ++i) {
          ops.push_back(random_ops(cfg));
          // Some devices read host memory (and each other's) in place: then
          // ordering between streams goes through events, not copies.
          host.push_back(std::uniform_int_distribution<int>(0, 2)(cfg) == 0);
        }
        AsyncEnv async;
        SimSetup env(n_sim, ops, false, host);
        SCHED_REQUIRE_DEVICES(env);
        std::vector<std::vector<std::vector<float>>> want;
        run_cpu(env.dev("cpu"), seed, &want);
        if (HasFatalFailure()) return;

        const std::vector<registry::Device*> devices = sims_then_cpu(env, n_sim);
        Context ctx;
        ChainGraph rg;
        SCHED_OK(build_chains(ctx, seed, &rg));
        std::vector<Buffer> wbufs;
        SCHED_OK(place_randomly(rg.weights, devices, cfg, &wbufs));
        SCHED_ASSIGN(Graph g, Graph::build(rg.outputs));
        SCHED_ASSIGN(auto sched, Scheduler::create(devices));
        SCHED_OK(sched->set_pipelining(pipelining));
        sched->set_check(seed % 2 == 0);  // poison dead memory once its readers are done
        for (int run = 0; run < kRuns; ++run) {
          SCHED_OK(sched->allocate(g));
          SCHED_OK(set_values(rg, values_for(rg, seed, run)));
          SCHED_OK(sched->compute(g));
          const std::string what = "pipelining " + std::to_string(pipelining) + ", seed " +
                                   std::to_string(seed) + ", " + std::to_string(n_sim) +
                                   " sim devices, run " + std::to_string(run) + "\n" +
                                   sched->describe(g);
          for (size_t o = 0; o < rg.outputs.size(); ++o) {
            expect_close(get_f32(rg.outputs[o]), want[static_cast<size_t>(run)][o], what);
            if (HasFatalFailure()) return;
          }
          const SchedStats& st = sched->last_stats();
          total.copies += st.copies;
          total.events_recorded += st.events_recorded;
          total.events_waited += st.events_waited;
          total.event_syncs += st.event_syncs;
          total.stream_syncs += st.stream_syncs;
          total.async_copies += st.async_copies;
          total.batched_reads += st.batched_reads;
          multi_split += st.splits > 1;
          ++runs;
        }
        EXPECT_EQ(sched->plans_built(), 1u) << "repeated computes reuse the plan";
      }
    }
  }
  EXPECT_GT(multi_split, runs / 2);
  EXPECT_GT(total.copies, runs);
  // The asynchronous path was taken: copies were queued, streams waited on
  // each other's events, and no sim stream was synchronized mid-graph
  // (every sim device has events; the CPU's stream is synchronous).
  EXPECT_GT(total.async_copies, total.copies / 2);  // those into the CPU are synchronous
  EXPECT_GT(total.events_recorded, runs);
  EXPECT_GT(total.events_waited, 0u);
  EXPECT_GT(total.event_syncs, 0u);
  EXPECT_EQ(total.stream_syncs, 0u);
  // Splits on the CPU with several copies from one sim read them together
  // (queued on the sim's stream, one wait on its event).
  EXPECT_GT(total.batched_reads, 0u);
}

// x -> a (sim0) -> b (sim1) -> c (sim0) -> d (sim1) -> e (sim0): every step
// crosses devices, so work after a failing node is already queued.
Status build_zigzag(Context& ctx, Graph* out, Tensor** x_out) {
  LOOM_ASSIGN_OR_RETURN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {8, 2}, "x"));
  LOOM_ASSIGN_OR_RETURN(Tensor * a, op::scale(ctx, x, 2.0f));
  a->set_name("a");
  LOOM_ASSIGN_OR_RETURN(Tensor * b, op::silu(ctx, a));
  b->set_name("b");
  LOOM_ASSIGN_OR_RETURN(Tensor * c, op::add(ctx, b, x));
  c->set_name("c");
  LOOM_ASSIGN_OR_RETURN(Tensor * d, op::silu(ctx, c));
  d->set_name("d");
  LOOM_ASSIGN_OR_RETURN(Tensor * e, op::add(ctx, d, a));
  e->set_name("e");
  LOOM_ASSIGN_OR_RETURN(*out, Graph::build({e}));
  *x_out = x;
  return Status();
}

float silu(float v) { return v / (1.0f + std::exp(-v)); }

TEST(SchedulerAsync, FailingSplitIsNamedAndTheNextComputeWorks) {
  for (int pipelining : {1, 2}) {
    AsyncEnv async;
    SimSetup env(2, {std::string("SCALE,ADD"), std::string("SILU")});
    SCHED_REQUIRE_DEVICES(env);
    SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("sim1"), env.dev("cpu")}));
    SCHED_OK(sched->set_pipelining(pipelining));
    Context ctx;
    Graph g;
    Tensor* x = nullptr;
    SCHED_OK(build_zigzag(ctx, &g, &x));
    SCHED_OK(sched->allocate(g));
    ASSERT_EQ(sched->splits().size(), 5u) << sched->describe(g);
    SCHED_OK(set_f32(x, std::vector<float>(16, 1.0f)));
    const float a = 2.0f, c = silu(a) + 1.0f, e = silu(c) + a;
    SCHED_OK(sched->compute(g));
    expect_close(get_f32(g.outputs()[0]), std::vector<float>(16, e), "e");
    EXPECT_GT(sched->last_stats().events_recorded, 0u);
    for (const char* node : {"b", "d"}) {
      const std::string split = node[0] == 'b' ? "1" : "3";
      const std::string nodes = node[0] == 'b' ? "(nodes 1..1" : "(nodes 3..3";
      {
        ScopedEnv fail("LOOM_SIM_FAIL_AT", std::string(node));
        Status st = sched->compute(g);
        ASSERT_FALSE(st.ok());
        EXPECT_TRUE(contains(st.message(), "[sched.compute] split " + split + " on device 'sim1' " +
                                               nodes + ", compute)"))
            << st.message();
        EXPECT_TRUE(contains(st.message(), std::string("injected failure at node '") + node + "'"))
            << st.message();
      }
      // Usable again: same graph, right result, sources restored.
      SCHED_OK(set_f32(x, std::vector<float>(16, 1.0f)));
      SCHED_OK(sched->compute(g));
      expect_close(get_f32(g.outputs()[0]), std::vector<float>(16, e), "e after a failure");
      EXPECT_EQ(std::string(g.nodes()[2]->src[0]->name), "b");  // c reads b, not b@sim0
      EXPECT_EQ(sched->plans_built(), 1u);
    }
  }
}

// A copy into an asynchronous device that does not go stream to stream
// (LOOM_SCHED_QUEUED_COPIES=0 here; a remote device of the mpi plugin has no
// events), between two devices of one plugin whose buffers have
// copy_tensor, is offered to the destination buffer's copy_tensor (rank to
// rank for the mpi plugin), with the same result; without copy_tensor the
// host stages it as before.
TEST(SchedulerAsync, CopiesBetweenDevicesOfOnePluginUseItsCopyTensor) {
  for (bool copy : {false, true}) {
    AsyncEnv async;
    ScopedEnv sim_copy("LOOM_SIM_COPY", copy ? std::optional<std::string>("1") : std::nullopt);
    ScopedEnv queued("LOOM_SCHED_QUEUED_COPIES", std::string("0"));
    SimSetup env(2, {std::string("SCALE,ADD"), std::string("SILU")});
    SCHED_REQUIRE_DEVICES(env);
    SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("sim1"), env.dev("cpu")}));
    Context ctx;
    Graph g;
    Tensor* x = nullptr;
    SCHED_OK(build_zigzag(ctx, &g, &x));
    SCHED_OK(sched->allocate(g));
    const float a = 2.0f, c = silu(a) + 1.0f, e = silu(c) + a;
    for (int run = 0; run < 2; ++run) {
      SCHED_OK(set_f32(x, std::vector<float>(16, 1.0f)));
      SCHED_OK(sched->compute(g));
      expect_close(get_f32(g.outputs()[0]), std::vector<float>(16, e), copy ? "e, direct copies" : "e, staged copies");
      // a, b, c and d each cross from one sim device to the other.
      const SchedStats& st = sched->last_stats();
      if (copy) {
        EXPECT_GE(st.direct_copies, 4u) << sched->describe(g);
      } else {
        EXPECT_EQ(st.direct_copies, 0u);
      }
      EXPECT_GE(st.copies, 4u);
    }
  }
}

TEST(SchedulerAsync, PipeliningOption) {
  AsyncEnv async;
  SimSetup env(2, {std::string("SCALE,ADD"), std::string("SILU")});
  SCHED_REQUIRE_DEVICES(env);
  {
    ScopedEnv pipe("LOOM_SCHED_PIPELINING", std::string("3"));
    SCHED_ASSIGN(auto s3, Scheduler::create({env.dev("sim0"), env.dev("cpu")}));
    EXPECT_EQ(s3->pipelining(), 3);
  }
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("sim1"), env.dev("cpu")}));
  EXPECT_EQ(sched->pipelining(), 1);
  Status bad = sched->set_pipelining(0);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(bad.message(), "[sched.set_pipelining]")) << bad.message();
  Context ctx;
  Graph g;
  Tensor* x = nullptr;
  SCHED_OK(build_zigzag(ctx, &g, &x));
  SCHED_OK(sched->allocate(g));
  SCHED_OK(set_f32(x, std::vector<float>(16, 1.0f)));
  SCHED_OK(sched->compute(g));
  EXPECT_EQ(sched->plans_built(), 1u);
  SCHED_OK(sched->set_pipelining(2));  // a changed n re-plans
  SCHED_OK(sched->compute(g));
  EXPECT_EQ(sched->plans_built(), 2u);
  SCHED_OK(sched->set_pipelining(2));  // the same n does not
  SCHED_OK(sched->compute(g));
  EXPECT_EQ(sched->plans_built(), 2u);
  EXPECT_EQ(sched->last_stats().async_copies, sched->last_stats().copies);
}

TEST(SchedulerAsync, SynchronousDevicesUseNoEvents) {
  ScopedEnv sync("LOOM_SIM_ASYNC", std::nullopt);  // even when the whole run sets it
  SimSetup env(2, {std::string("SCALE,ADD"), std::string("SILU")});
  SCHED_REQUIRE_DEVICES(env);
  SCHED_ASSIGN(auto sched, Scheduler::create({env.dev("sim0"), env.dev("sim1"), env.dev("cpu")}));
  Context ctx;
  Graph g;
  Tensor* x = nullptr;
  SCHED_OK(build_zigzag(ctx, &g, &x));
  SCHED_OK(sched->allocate(g));
  SCHED_OK(set_f32(x, std::vector<float>(16, 1.0f)));
  SCHED_OK(sched->compute(g));
  const SchedStats& st = sched->last_stats();
  EXPECT_EQ(st.events_recorded + st.events_waited + st.event_syncs + st.async_copies, 0u);
  EXPECT_EQ(st.stream_syncs, 0u);  // synchronous streams are done when compute returns
  EXPECT_GT(st.copies, 0u);
}

}  // namespace
}  // namespace loom::schedtest
