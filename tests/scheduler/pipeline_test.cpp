// Pipelined submission (Scheduler::submit/finish): micro-batch graphs of a
// layered model whose first layers' weights are on sim0 and last layers' on
// sim1 (asynchronous sim streams with a fixed delay per node). Each graph
// also updates a running state on each device (acc = acc + h, written in
// place), so a graph reads what the previous graph wrote there. Submitted
// one after another without waiting, they give the same states as
// compute() one graph at a time, and the sim plugin's trace counters show
// that sim0 and sim1 ran work at the same time (never a time measurement).
#include "loom/runtime/log.hpp"
#include "sched_test_util.hpp"
#include "sim_plugin/sim_trace.h"

namespace loom::schedtest {
namespace {

constexpr int kLayers = 6;  // layers 0..2 on sim0, 3..5 on sim1
constexpr int kBatches = 5;

struct Model {
  std::vector<Tensor*> w;    // per layer [kDim, kDim]
  Tensor* acc0 = nullptr;    // running state on sim0
  Tensor* acc1 = nullptr;    // running state on sim1
  std::vector<Buffer> buffers;
};

struct Batch {
  Tensor* x = nullptr;
  Graph graph;
};

// h = rms_norm(w_l * h) per layer; after layer 0 and after the last layer
// the state of that device is added to h and h is written back as the state.
StatusOr<Batch> build_batch(Context& ctx, const Model& m) {
  Batch b;
  LOOM_ASSIGN_OR_RETURN(b.x, ctx.new_tensor(LOOM_TYPE_F32, {kDim, kTok}, "x"));
  b.x->flags |= LOOM_TENSOR_FLAG_INPUT;
  Tensor* h = b.x;
  for (int l = 0; l < kLayers; ++l) {
    LOOM_ASSIGN_OR_RETURN(Tensor * mm, op::mul_mat(ctx, m.w[static_cast<size_t>(l)], h));
    LOOM_ASSIGN_OR_RETURN(h, op::rms_norm(ctx, mm, 1e-5f));
    if (l == 0 || l == kLayers - 1) {
      Tensor* acc = l == 0 ? m.acc0 : m.acc1;
      LOOM_ASSIGN_OR_RETURN(Tensor * sum, op::add(ctx, h, acc));
      LOOM_ASSIGN_OR_RETURN(h, op::cpy(ctx, sum, acc));
    }
  }
  LOOM_ASSIGN_OR_RETURN(b.graph, Graph::build({h}));
  return b;
}

class SchedulerPipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!setup_.ready()) GTEST_SKIP() << "sim or cpu plugin not loaded:\n" << setup_.why();
    trace_ = static_cast<const loom_sim_ext_trace_t*>(
        setup_.dev("sim0")->extension(LOOM_SIM_EXT_TRACE, LOOM_SIM_EXT_TRACE_VERSION));
    ASSERT_NE(trace_, nullptr) << "sim plugin without the loom.sim.trace extension";
    std::mt19937 rng(7);
    for (int l = 0; l < kLayers; ++l) {
      SCHED_ASSIGN(Tensor * w, ctx_.new_tensor(LOOM_TYPE_F32, {kDim, kDim}, "w" + std::to_string(l)));
      SCHED_ASSIGN(Buffer buf, allocate_tensors(*setup_.dev(l < kLayers / 2 ? "sim0" : "sim1"), {w}));
      SCHED_OK(set_f32(w, random_values(kDim * kDim, rng)));
      model_.w.push_back(w);
      model_.buffers.push_back(std::move(buf));
    }
    SCHED_ASSIGN(model_.acc0, ctx_.new_tensor(LOOM_TYPE_F32, {kDim, kTok}, "acc0"));
    SCHED_ASSIGN(model_.acc1, ctx_.new_tensor(LOOM_TYPE_F32, {kDim, kTok}, "acc1"));
    SCHED_ASSIGN(Buffer b0, allocate_tensors(*setup_.dev("sim0"), {model_.acc0}));
    SCHED_ASSIGN(Buffer b1, allocate_tensors(*setup_.dev("sim1"), {model_.acc1}));
    model_.buffers.push_back(std::move(b0));
    model_.buffers.push_back(std::move(b1));
    for (int i = 0; i < kBatches; ++i) inputs_.push_back(random_values(kDim * kTok, rng));
  }

  // Run every batch (pipelined: submit each, then finish; else compute
  // each) from zero states; the final states of sim0 and sim1.
  void run(bool pipelined, std::vector<float>* acc0, std::vector<float>* acc1) {
    const std::vector<float> zero(kDim * kTok, 0.0f);
    SCHED_OK(set_f32(model_.acc0, zero));
    SCHED_OK(set_f32(model_.acc1, zero));
    SCHED_ASSIGN(auto sched, Scheduler::create({setup_.dev("sim0"), setup_.dev("sim1"), setup_.dev("cpu")}));
    const size_t mark = ctx_.checkpoint();
    std::vector<Batch> batches;
    for (int i = 0; i < kBatches; ++i) {
      SCHED_ASSIGN(Batch b, build_batch(ctx_, model_));
      batches.push_back(std::move(b));
    }
    trace_->reset();
    for (int i = 0; i < kBatches; ++i) {
      Batch& b = batches[static_cast<size_t>(i)];
      SCHED_OK(sched->allocate(b.graph));
      SCHED_OK(sched->set_input(b.x, inputs_[static_cast<size_t>(i)].data(), kDim * kTok * sizeof(float)));
      if (pipelined) {
        SCHED_OK(sched->submit(b.graph));
        EXPECT_TRUE(sched->in_flight());
      } else {
        SCHED_OK(sched->compute(b.graph));
      }
    }
    SCHED_OK(sched->finish());
    EXPECT_FALSE(sched->in_flight());
    queued_inputs_ = sched->last_stats().queued_inputs;
    EXPECT_EQ(sched->plans_built(), 1u) << "every batch has the same plan";
    EXPECT_GE(sched->splits().size(), 2u);
    max_concurrent_ = trace_->max_concurrent();
    overlapped_ = trace_->overlapped();
    *acc0 = get_f32(model_.acc0);
    *acc1 = get_f32(model_.acc1);
    sched.reset();
    ctx_.rollback(mark);
  }

  ScopedEnv async_{"LOOM_SIM_ASYNC", std::string("1")};
  ScopedEnv delay0_{"LOOM_SIM_DELAY_US_0", std::string("300")};
  ScopedEnv delay1_{"LOOM_SIM_DELAY_US_1", std::string("300")};
  SimSetup setup_{2, {}};
  const loom_sim_ext_trace_t* trace_ = nullptr;
  Context ctx_;
  Model model_;
  std::vector<std::vector<float>> inputs_;
  uint64_t max_concurrent_ = 0, overlapped_ = 0;
  size_t queued_inputs_ = 0;  // of the last run
};

TEST_F(SchedulerPipeline, SubmittedBatchesOverlapDevicesAndMatchOneAtATime) {
  std::vector<float> ref0, ref1, got0, got1;
  run(false, &ref0, &ref1);
  // One graph at a time: sim1 always waits for sim0's part of the same graph.
  EXPECT_EQ(max_concurrent_, 1u);
  // The input x lives on sim0, whose stream takes queued copies: set_input
  // queued it there instead of writing it from the host.
  EXPECT_EQ(queued_inputs_, 1u);
  run(true, &got0, &got1);
  EXPECT_EQ(queued_inputs_, static_cast<size_t>(kBatches)) << "every micro-batch's input queued on sim0";
  expect_close(got0, ref0, "sim0 state");
  expect_close(got1, ref1, "sim1 state");
  EXPECT_GE(max_concurrent_, 2u) << "sim0 and sim1 never ran at the same time";
  EXPECT_GE(overlapped_, 1u);
}

TEST_F(SchedulerPipeline, FailureInALaterBatchNamesItAndTheSchedulerRecovers) {
  SCHED_ASSIGN(auto sched, Scheduler::create({setup_.dev("sim0"), setup_.dev("sim1"), setup_.dev("cpu")}));
  std::vector<Batch> batches;
  for (int i = 0; i < 3; ++i) {
    SCHED_ASSIGN(Batch b, build_batch(ctx_, model_));
    batches.push_back(std::move(b));
  }
  // The last layer's rms_norm of every graph fails on sim1 (async: seen late).
  for (Batch& b : batches) b.graph.nodes()[b.graph.nodes().size() - 3]->set_name("boom");
  {
    ScopedEnv fail("LOOM_SIM_FAIL_AT", std::string("boom"));
    Status st;
    for (Batch& b : batches) {
      SCHED_OK(sched->allocate(b.graph));
      SCHED_OK(sched->set_input(b.x, inputs_[0].data(), kDim * kTok * sizeof(float)));
      st = sched->submit(b.graph);
      if (!st.ok()) break;
    }
    if (st.ok()) st = sched->finish();
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(test::contains(st.message(), "graph 0 of the run")) << st.to_string();
    EXPECT_TRUE(test::contains(st.message(), "'sim1'")) << st.to_string();
    EXPECT_TRUE(test::contains(st.message(), "injected failure at node 'boom'")) << st.to_string();
  }
  EXPECT_FALSE(sched->in_flight());
  SCHED_OK(sched->set_input(batches[0].x, inputs_[0].data(), kDim * kTok * sizeof(float)));
  SCHED_OK(sched->compute(batches[0].graph));
}

// LOOM_SIM_GBPS_0=G (a fast device's bandwidth for placement benches): a
// node takes at least the bytes it moves / G. One MUL_MAT of a [256, 256]
// F32 weight and a [256, 1] input moves (65536 + 256 + 256) * 4 = 264192
// bytes: at 0.1 GB/s, >= 2.64 ms of sim0's busy interval (trace v2), and
// the product is still the real one.
TEST(SimBandwidth, ANodeTakesItsBytesOverTheStatedBandwidth) {
  ScopedEnv gbps("LOOM_SIM_GBPS_0", std::string("0.1"));
  SimSetup setup{1, {}};
  if (!setup.ready()) GTEST_SKIP() << "sim or cpu plugin not loaded:\n" << setup.why();
  const auto* trace = static_cast<const loom_sim_ext_trace_t*>(
      setup.dev("sim0")->extension(LOOM_SIM_EXT_TRACE, LOOM_SIM_EXT_TRACE_VERSION));
  ASSERT_NE(trace, nullptr);
  Context ctx;
  std::mt19937 rng(3);
  SCHED_ASSIGN(Tensor * w, ctx.new_tensor(LOOM_TYPE_F32, {256, 256}, "w"));
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {256, 1}, "x"));
  x->flags |= LOOM_TENSOR_FLAG_INPUT;
  SCHED_ASSIGN(Buffer wb, allocate_tensors(*setup.dev("sim0"), {w}));
  const std::vector<float> wv = random_values(256 * 256, rng), xv = random_values(256, rng);
  SCHED_OK(set_f32(w, wv));
  SCHED_ASSIGN(Tensor * y, op::mul_mat(ctx, w, x));
  y->set_name("wx");
  SCHED_ASSIGN(Graph g, Graph::build({y}));
  SCHED_ASSIGN(auto sched, Scheduler::create({setup.dev("sim0"), setup.dev("cpu")}));
  SCHED_OK(sched->allocate(g));
  SCHED_OK(sched->set_input(x, xv.data(), xv.size() * sizeof(float)));
  trace->reset();
  trace->set_recording(1);
  SCHED_OK(sched->compute(g));
  trace->set_recording(0);
  std::vector<loom_sim_trace_interval_t> busy(trace->intervals(nullptr, 0));
  busy.resize(trace->intervals(busy.data(), busy.size()));
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_STREQ(busy[0].last_node, "wx");
  EXPECT_EQ(busy[0].device, 0u);
  EXPECT_GE(busy[0].end_ns - busy[0].begin_ns, 2641920);
  const std::vector<float> got = get_f32(y);
  ASSERT_EQ(got.size(), 256u);
  for (int m = 0; m < 256; m += 51) {
    double want = 0;
    for (int k = 0; k < 256; ++k) want += double(wv[static_cast<size_t>(m * 256 + k)]) * xv[static_cast<size_t>(k)];
    EXPECT_NEAR(got[static_cast<size_t>(m)], want, 1e-4) << "row " << m;
  }
}

TEST(SimBandwidth, ABandwidthThatIsNotAPositiveNumberFailsInit) {
  ScopedEnv gbps("LOOM_SIM_GBPS_0", std::string("fast"));
  SimSetup setup{1, {}};
  EXPECT_EQ(setup.dev("sim0"), nullptr);
  EXPECT_TRUE(test::contains(setup.why(), "LOOM_SIM_GBPS_0='fast' is not a number")) << setup.why();
}

// LOOM_SIM_SPIN_US=N: waits poll N us before blocking (worker, events,
// synchronize); asynchronous sim streams that spin still give the product,
// graph after graph.
TEST(SimSpin, SpinningAsyncStreamsGiveTheProduct) {
  ScopedEnv async("LOOM_SIM_ASYNC", std::string("1"));
  ScopedEnv spin("LOOM_SIM_SPIN_US", std::string("300"));
  SimSetup setup{1, {}};
  if (!setup.ready()) GTEST_SKIP() << "sim or cpu plugin not loaded:\n" << setup.why();
  Context ctx;
  std::mt19937 rng(5);
  SCHED_ASSIGN(Tensor * w, ctx.new_tensor(LOOM_TYPE_F32, {64, 48}, "w"));
  SCHED_ASSIGN(Tensor * x, ctx.new_tensor(LOOM_TYPE_F32, {64, 1}, "x"));
  x->flags |= LOOM_TENSOR_FLAG_INPUT;
  SCHED_ASSIGN(Buffer wb, allocate_tensors(*setup.dev("sim0"), {w}));
  const std::vector<float> wv = random_values(64 * 48, rng);
  SCHED_OK(set_f32(w, wv));
  SCHED_ASSIGN(Tensor * y, op::mul_mat(ctx, w, x));
  SCHED_ASSIGN(Tensor * z, op::relu(ctx, y));  // on the cpu: a copy back each time
  SCHED_ASSIGN(Graph g, Graph::build({z}));
  SCHED_ASSIGN(auto sched, Scheduler::create({setup.dev("sim0"), setup.dev("cpu")}));
  SCHED_OK(sched->allocate(g));
  for (int round = 0; round < 5; ++round) {
    const std::vector<float> xv = random_values(64, rng);
    SCHED_OK(sched->set_input(x, xv.data(), xv.size() * sizeof(float)));
    SCHED_OK(sched->compute(g));
    const std::vector<float> got = get_f32(z);
    ASSERT_EQ(got.size(), 48u);
    for (int m = 0; m < 48; ++m) {
      double want = 0;
      for (int k = 0; k < 64; ++k) want += double(wv[static_cast<size_t>(m * 64 + k)]) * xv[static_cast<size_t>(k)];
      EXPECT_NEAR(got[static_cast<size_t>(m)], std::max(want, 0.0), 1e-4) << "round " << round << " row " << m;
    }
  }
}

TEST(SimSpin, ASpinThatIsNotAnIntegerFailsInit) {
  ScopedEnv spin("LOOM_SIM_SPIN_US", std::string("-5"));
  SimSetup setup{1, {}};
  EXPECT_EQ(setup.dev("sim0"), nullptr);
  EXPECT_TRUE(test::contains(setup.why(), "LOOM_SIM_SPIN_US='-5' is not an integer in [0, 100000]")) << setup.why();
}

}  // namespace
}  // namespace loom::schedtest
