// ATTENTION split over the KV length (flash-decoding: attention_split /
// attention_rows_split + attention_combine) on vulkan0 against the cpu
// plugin: long KV rows cut into several ranges, GQA, F16 and F32 caches,
// visible lengths that leave ranges empty (and a row with none), each with
// the device as found (lavapipe: the per-row kernel, split), with
// LOOM_VULKAN_DISABLE=rows (the workgroup kernel GPUs run, split), and
// with `split` added (one pass). On a CPU implementation the split also
// lifts the KV length the loop budget allows: a 40000-key decode node is
// taken with the split and refused without it, so an ignored switch fails.
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/types.hpp"
#include "vulkan_test_util.hpp"

namespace loom::vktest {
namespace {

class SplitAttention : public DisabledFeaturesTest {
 protected:
  void SetUp() override {
    DisabledFeaturesTest::SetUp();
    if (IsSkipped()) return;
    cpu_ = reg_->device("cpu");
    ASSERT_NE(cpu_, nullptr) << report(*reg_);
  }
  bool split_disabled() const { return disabled("split"); }

  registry::Device* cpu_ = nullptr;
};

struct Case {
  int64_t d, dv, n_head, n_head_kv, n_tok, n_kv;
  loom_type_t kv_type;
  std::vector<int32_t> visible;
};

// The attention node of case c on `dev`, inputs from `seed`; *out the result.
Status run_attention(registry::Device* dev, const Case& c, uint32_t seed, std::vector<float>* out) {
  Context ctx;
  LOOM_ASSIGN_OR_RETURN(Tensor * q, ctx.new_tensor(LOOM_TYPE_F32, {c.d, c.n_head, c.n_tok}, "q"));
  LOOM_ASSIGN_OR_RETURN(Tensor * k, ctx.new_tensor(c.kv_type, {c.d, c.n_kv, c.n_head_kv}, "k"));
  LOOM_ASSIGN_OR_RETURN(Tensor * v, ctx.new_tensor(c.kv_type, {c.dv, c.n_kv, c.n_head_kv}, "v"));
  LOOM_ASSIGN_OR_RETURN(Tensor * vis, ctx.new_tensor(LOOM_TYPE_I32, {c.n_tok}, "vis"));
  for (Tensor* t : {q, k, v, vis}) t->flags |= LOOM_TENSOR_FLAG_INPUT;
  LOOM_ASSIGN_OR_RETURN(Tensor * y, op::attention(ctx, q, k, v, vis, 1.0f / std::sqrt(static_cast<float>(c.d))));
  LOOM_ASSIGN_OR_RETURN(Graph g, Graph::build({y}));
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex, Executor::create(dev));
  LOOM_RETURN_IF_ERROR(ex->allocate(g));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const auto fill = [&](Tensor* t, int64_t n, float scale) -> Status {
    std::vector<float> f(static_cast<size_t>(n));
    for (float& x : f) x = dist(rng) * scale;
    std::vector<uint8_t> bytes(static_cast<size_t>(n) * (t->type == LOOM_TYPE_F32 ? 4 : 2));
    loom::from_float(t->type, f.data(), bytes.data(), n);
    return tensor_set(t, bytes.data(), bytes.size());
  };
  // Scores of a few units: the softmax is neither flat nor one-hot.
  LOOM_RETURN_IF_ERROR(fill(q, c.d * c.n_head * c.n_tok, 3.0f));
  LOOM_RETURN_IF_ERROR(fill(k, c.d * c.n_kv * c.n_head_kv, 1.0f));
  LOOM_RETURN_IF_ERROR(fill(v, c.dv * c.n_kv * c.n_head_kv, 1.0f));
  LOOM_RETURN_IF_ERROR(tensor_set(vis, c.visible.data(), c.visible.size() * 4));
  LOOM_RETURN_IF_ERROR(ex->compute(g));
  out->assign(static_cast<size_t>(c.dv * c.n_head * c.n_tok), 0.0f);
  return tensor_get(y, out->data(), out->size() * 4);
}

TEST_P(SplitAttention, LongKvDecodeMatchesTheCpu) {
  const Case cases[] = {
      // 3000 keys: 24 ranges of 125; GQA 8 over 2.
      {64, 64, 8, 2, 1, 3000, LOOM_TYPE_F16, {3000}},
      // Two queries, one seeing a single key (every other range empty).
      {128, 128, 4, 4, 2, 1500, LOOM_TYPE_F32, {1, 1499}},
      // D != Dv, GQA 4 over 1, a row with no key (zero) and one range's worth.
      {32, 48, 4, 1, 3, 700, LOOM_TYPE_F16, {0, 129, 700}},
      // The most ranges (32) and a length off every range boundary.
      {16, 16, 2, 1, 1, 5000, LOOM_TYPE_F32, {4999}},
  };
  uint32_t seed = 5;
  for (const Case& c : cases) {
    SCOPED_TRACE("n_kv " + std::to_string(c.n_kv) + " D " + std::to_string(c.d));
    std::vector<float> got, ref;
    const Status s1 = run_attention(dev_, c, seed, &got);
    ASSERT_TRUE(s1.ok()) << s1.to_string();
    const Status s2 = run_attention(cpu_, c, seed, &ref);
    ASSERT_TRUE(s2.ok()) << s2.to_string();
    ++seed;
    double worst = 0.0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(got[i] - ref[i])));
    // Weighted means of values in [-1, 1], f32 in another order.
    EXPECT_LT(worst, 2e-5);
    // The row with no visible key is exactly zero.
    for (int64_t t = 0; t < c.n_tok; ++t) {
      if (c.visible[static_cast<size_t>(t)] != 0) continue;
      for (int64_t i = 0; i < c.dv * c.n_head; ++i) EXPECT_EQ(got[static_cast<size_t>(t * c.dv * c.n_head + i)], 0.0f);
    }
  }
}

// Nine split nodes in one graph, each one's result the next one's Q, with
// the stream's scratch cap at 64 KiB (LOOM_VULKAN_SCRATCH_CAP; 32 MiB by
// default): 83 KB of partial rows, so later nodes reuse earlier nodes'
// bytes (ordered by barriers); the chain ends where the cpu's does.
TEST_P(SplitAttention, ChainPastTheScratchCapMatchesTheCpu) {
  if (split_disabled()) GTEST_SKIP() << "no scratch without the split";
  setenv("LOOM_VULKAN_SCRATCH_CAP", "65536", 1);
  const auto run = [](registry::Device* dev, std::vector<float>* out) -> Status {
    Context ctx;
    const int64_t d = 16, h = 4, t = 2, n_kv = 2048;
    LOOM_ASSIGN_OR_RETURN(Tensor * q, ctx.new_tensor(LOOM_TYPE_F32, {d, h, t}, "q"));
    LOOM_ASSIGN_OR_RETURN(Tensor * k, ctx.new_tensor(LOOM_TYPE_F16, {d, n_kv, 1}, "k"));
    LOOM_ASSIGN_OR_RETURN(Tensor * vis, ctx.new_tensor(LOOM_TYPE_I32, {t}, "vis"));
    for (Tensor* x : {q, k, vis}) x->flags |= LOOM_TENSOR_FLAG_INPUT;
    Tensor* y = q;
    for (int i = 0; i < 9; ++i) {
      // K and V are the same tensor; scaled so the rows stay spread.
      LOOM_ASSIGN_OR_RETURN(y, op::attention(ctx, y, k, k, vis, i == 0 ? 1.0f : 8.0f));
    }
    LOOM_ASSIGN_OR_RETURN(Graph g, Graph::build({y}));
    LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex, Executor::create(dev));
    LOOM_RETURN_IF_ERROR(ex->allocate(g));
    std::mt19937 rng(77);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> qf(static_cast<size_t>(d * h * t)), kf(static_cast<size_t>(d * n_kv));
    for (float& x : qf) x = dist(rng);
    for (float& x : kf) x = dist(rng);
    std::vector<uint16_t> kh(kf.size());
    loom::from_float(LOOM_TYPE_F16, kf.data(), kh.data(), static_cast<int64_t>(kf.size()));
    const std::vector<int32_t> vv = {static_cast<int32_t>(n_kv), static_cast<int32_t>(n_kv - 77)};
    LOOM_RETURN_IF_ERROR(tensor_set(q, qf.data(), qf.size() * 4));
    LOOM_RETURN_IF_ERROR(tensor_set(k, kh.data(), kh.size() * 2));
    LOOM_RETURN_IF_ERROR(tensor_set(vis, vv.data(), vv.size() * 4));
    LOOM_RETURN_IF_ERROR(ex->compute(g));
    out->assign(qf.size(), 0.0f);
    return tensor_get(y, out->data(), out->size() * 4);
  };
  std::vector<float> got, ref;
  // A registry made now: its streams read the cap.
  auto reg = load_registry();
  registry::Device* vk = reg->device("vulkan0");
  ASSERT_NE(vk, nullptr);
  const Status s1 = run(vk, &got);
  unsetenv("LOOM_VULKAN_SCRATCH_CAP");
  ASSERT_TRUE(s1.ok()) << s1.to_string();
  const Status s2 = run(cpu_, &ref);
  ASSERT_TRUE(s2.ok()) << s2.to_string();
  double worst = 0.0, spread = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(got[i] - ref[i])));
    spread = std::max(spread, static_cast<double>(std::fabs(ref[i] - ref[0])));
  }
  EXPECT_LT(worst, 1e-4);
  EXPECT_GT(spread, 1e-3) << "the chain collapsed to a constant: a weak check";
}

TEST_P(SplitAttention, SplitLiftsTheLoopBudgetOnCpuImplementations) {
  if ((dev_->info().caps & LOOM_DEVICE_CAP_EMULATED) == 0) GTEST_SKIP() << "no loop budget on a GPU";
  Context ctx;
  Tensor* q = ctx.new_tensor(LOOM_TYPE_F32, {128, 8, 1}, "q").value();
  Tensor* k = ctx.new_tensor(LOOM_TYPE_F16, {128, 40000, 2}, "k").value();
  Tensor* vis = ctx.new_tensor(LOOM_TYPE_I32, {1}, "vis").value();
  Tensor* y = op::attention(ctx, q, k, k, vis, 0.125f).value();
  EXPECT_EQ(dev_->supports_op(y), !split_disabled());
}

INSTANTIATE_TEST_SUITE_P(Vulkan, SplitAttention, ::testing::Values("", "rows", "split", "rows,split"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string s = *i.param ? i.param : "as_found";
                           for (char& ch : s) ch = ch == ',' ? '_' : ch;
                           return s;
                         });

}  // namespace
}  // namespace loom::vktest
