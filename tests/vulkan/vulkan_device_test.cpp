// The Vulkan plugin as a device: loading without a loader, properties of
// the device (lavapipe here), allocation limits and what follows a failed
// allocation, bad row indices, ATTENTION past lavapipe's loop budget, and
// the same small graph on vulkan0 and cpu.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/runtime/tensor.hpp"
#include "vulkan_test_util.hpp"

namespace loom::vktest {
namespace {

class VulkanDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    reg_ = load_registry();
    dev_ = reg_->device("vulkan0");
    if (dev_ == nullptr) GTEST_SKIP() << "no vulkan0 here:" << report(*reg_);
  }
  std::unique_ptr<registry::Registry> reg_;
  registry::Device* dev_ = nullptr;
};

TEST(VulkanLoader, AbsentLoaderIsUnavailableAndCpuStillWorks) {
  ScopedEnv env("LOOM_VULKAN_LOADER", "/nonexistent/libvulkan.so.1");
  auto reg = load_registry();
  const registry::Candidate* c = candidate(*reg, "vulkan");
  ASSERT_NE(c, nullptr) << report(*reg);
  EXPECT_EQ(c->fate, registry::Fate::kUnavailable) << report(*reg);
  EXPECT_NE(c->reason.find("/nonexistent/libvulkan.so.1 not found: "), std::string::npos)
      << c->reason;
  EXPECT_EQ(reg->device("vulkan0"), nullptr);
  registry::Device* cpu = reg->device("cpu");
  ASSERT_NE(cpu, nullptr) << report(*reg);
  std::vector<float> out;
  Status st = run_small_graph(cpu, &out);
  ASSERT_TRUE(st.ok()) << st.to_string();
  for (float v : out) EXPECT_TRUE(std::isfinite(v));
}

TEST(VulkanLoader, NoSelectedDeviceIsUnavailableWithTheReason) {
  ScopedEnv env("LOOM_VULKAN_DEVICES", "63");
  auto reg = load_registry();
  const registry::Candidate* c = candidate(*reg, "vulkan");
  ASSERT_NE(c, nullptr) << report(*reg);
  if (c->fate == registry::Fate::kUnavailable && c->reason.find("not found") != std::string::npos) {
    GTEST_SKIP() << "no Vulkan loader here: " << c->reason;
  }
  EXPECT_EQ(c->fate, registry::Fate::kUnavailable) << report(*reg);
  EXPECT_NE(c->reason.find("no Vulkan device with a compute queue"), std::string::npos)
      << c->reason;
}

TEST_F(VulkanDevice, Properties) {
  const registry::DeviceInfo& info = dev_->info();
  EXPECT_EQ(info.name, "vulkan0");
  EXPECT_EQ(info.plugin, "vulkan");
  EXPECT_FALSE(info.description.empty());
  EXPECT_EQ(info.uuid.size(), 32u) << "deviceUUID is the identity";
  EXPECT_GT(info.memory_total, 0u);
  if (info.description.find("llvmpipe") != std::string::npos) {
    // lavapipe: a CPU implementation standing in for a GPU, flagged
    // emulated so automatic policies never pick it.
    EXPECT_EQ(info.type, LOOM_DEVICE_TYPE_GPU);
    EXPECT_NE(info.caps & LOOM_DEVICE_CAP_EMULATED, 0u);
    EXPECT_NE(info.description.find("CPU implementation"), std::string::npos) << info.description;
    for (const char* policy : {"auto", "gpu-first", "cpu-only"}) {
      auto list = reg_->select(policy);
      ASSERT_TRUE(list.ok()) << list.status().to_string();
      for (registry::Device* d : list.value()) EXPECT_NE(d->name(), "vulkan0") << policy;
    }
    auto named = reg_->select("vulkan0,cpu");
    ASSERT_TRUE(named.ok()) << named.status().to_string();
    EXPECT_EQ(named.value().front()->name(), "vulkan0");
  }
  // Events and async compute come with a timeline semaphore (lavapipe has one).
  const bool async = (info.caps & LOOM_DEVICE_CAP_ASYNC) != 0;
  EXPECT_EQ(async, (info.caps & LOOM_DEVICE_CAP_EVENTS) != 0);
  // loom.cost: a positive estimate for a node it runs, < 0 for one it does not.
  const auto* cost =
      static_cast<const loom_ext_cost_t*>(dev_->extension(LOOM_EXT_COST, LOOM_EXT_COST_VERSION));
  ASSERT_NE(cost, nullptr);
  loom_tensor_t a{};
  a.struct_size = sizeof a;
  a.type = LOOM_TYPE_F32;
  a.ne[0] = 64;
  a.ne[1] = a.ne[2] = a.ne[3] = 1;
  a.nb[0] = 4;
  a.nb[1] = a.nb[2] = a.nb[3] = 256;
  loom_tensor_t n = a;
  n.op = LOOM_OP_SILU;
  n.src[0] = &a;
  EXPECT_GT(cost->op_time_us(dev_->raw(), &n), 0.0);
  n.type = a.type = LOOM_TYPE_I32;  // SILU of integers: not run here
  EXPECT_LT(cost->op_time_us(dev_->raw(), &n), 0.0);

  loom_buffer_type_t* bt = dev_->buffer_type();
  EXPECT_TRUE(dev_->supports_buffer_type(bt));
  // Buffer types, host memory and wrapping: vulkan_memory_test.cpp.

  // `loom devices` says when free memory is unknown (no VK_EXT_memory_budget)
  // instead of printing 0 free.
  ProcResult listed = run_loom("devices");
  ASSERT_EQ(listed.exit_code, 0) << listed.out;
  const size_t line = listed.out.find("memory:", listed.out.find("  vulkan0 "));
  ASSERT_NE(line, std::string::npos) << listed.out;
  const std::string mem = listed.out.substr(line, listed.out.find('\n', line) - line);
  if (info.memory_free == 0) {
    EXPECT_NE(mem.find("free unknown"), std::string::npos) << mem;
  } else {
    EXPECT_EQ(mem.find("free unknown"), std::string::npos) << mem;
  }
}

// lavapipe ends an invocation's loops after 65535 iterations in all: on a
// CPU implementation an ATTENTION node whose KV length could run past that
// is refused (the llama graph then builds its unfused form, or the
// scheduler places the node elsewhere); shorter ones are taken.
TEST_F(VulkanDevice, AttentionPastTheLoopBudgetIsRefusedOnCpuImplementations) {
  Context ctx;
  const auto node = [&](int64_t n_kv) {
    Tensor* q = ctx.new_tensor(LOOM_TYPE_F32, {128, 8, 1}, "q").value();
    Tensor* k = ctx.new_tensor(LOOM_TYPE_F16, {128, n_kv, 2}, "k").value();
    Tensor* vis = ctx.new_tensor(LOOM_TYPE_I32, {1}, "vis").value();
    return op::attention(ctx, q, k, k, vis, 0.125f).value();
  };
  EXPECT_TRUE(dev_->supports_op(node(4096)));
  const bool emulated = (dev_->info().caps & LOOM_DEVICE_CAP_EMULATED) != 0;
  EXPECT_EQ(dev_->supports_op(node(int64_t{1} << 20)), !emulated);
}

TEST_F(VulkanDevice, AllocationOverTheLimitsIsAClearErrorAndThePluginStaysUsable) {
  loom_buffer_type_t* bt = dev_->buffer_type();
  ASSERT_NE(bt->iface->max_size, nullptr);
  const size_t max = bt->iface->max_size(bt);
  ASSERT_GT(max, 0u);
  // Just over the largest buffer (maxMemoryAllocationSize on lavapipe).
  auto over = dev_->alloc_buffer(max + 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  const std::string m = over.status().message();
  EXPECT_NE(m.find(std::to_string(max + 1)), std::string::npos) << m;
  EXPECT_NE(m.find("maxMemoryAllocationSize"), std::string::npos) << m;
  EXPECT_NE(m.find("heap"), std::string::npos) << m;
  // Far over the device heap.
  const size_t huge = static_cast<size_t>(dev_->info().memory_total) * 4 + 12345;
  auto way_over = dev_->alloc_buffer(huge);
  ASSERT_FALSE(way_over.ok());
  EXPECT_EQ(way_over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(way_over.status().message().find(std::to_string(huge)), std::string::npos)
      << way_over.status().to_string();
  EXPECT_NE(way_over.status().message().find("heap"), std::string::npos)
      << way_over.status().to_string();

  // Still usable: a buffer, a round trip, a clear.
  Buffer b = [&] {
    auto r = dev_->alloc_buffer(1000);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return std::move(r).value();
  }();
  loom_tensor_t t{};
  t.struct_size = sizeof t;
  t.data = b.base();
  t.buffer = b.raw();
  std::vector<uint8_t> in(1000), back(1000);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7);
  ASSERT_EQ(b.raw()->iface->set_tensor(b.raw(), &t, in.data(), 0, in.size()), nullptr);
  ASSERT_EQ(b.raw()->iface->get_tensor(b.raw(), &t, back.data(), 0, back.size()), nullptr);
  EXPECT_EQ(in, back);
  Status past = status_from_abi(b.raw()->iface->set_tensor(b.raw(), &t, in.data(), 10, in.size()));
  EXPECT_EQ(past.code(), StatusCode::kInvalidArgument) << past.to_string();
  Status cleared = b.clear(0x5A);
  EXPECT_TRUE(cleared.ok()) << cleared.to_string();
  ASSERT_EQ(b.raw()->iface->get_tensor(b.raw(), &t, back.data(), 0, back.size()), nullptr);
  EXPECT_EQ(back[999], 0x5A);
}

TEST_F(VulkanDevice, GraphTooLargeForTheDeviceFailsWithSizesThenAGraphStillComputes) {
  loom_buffer_type_t* bt = dev_->buffer_type();
  const size_t max = bt->iface->max_size(bt);
  // A result bigger than the largest buffer: the compute buffer cannot exist.
  const int64_t n = static_cast<int64_t>(max / 4 / 1024 + 1024);
  Context ctx;
  Tensor* a = ctx.new_tensor(LOOM_TYPE_F32, {1024, n}, "big_in").value();
  a->flags |= LOOM_TENSOR_FLAG_INPUT;
  Tensor* y = op::silu(ctx, a).value();
  auto g = Graph::build({y});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto ex = Executor::create(dev_);
  ASSERT_TRUE(ex.ok()) << ex.status().to_string();
  Status st = ex.value()->allocate(g.value());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.to_string();
  EXPECT_NE(st.message().find("bytes"), std::string::npos) << st.to_string();

  std::vector<float> on_vk, on_cpu;
  Status s1 = run_small_graph(dev_, &on_vk);
  ASSERT_TRUE(s1.ok()) << s1.to_string();
  registry::Device* cpu = reg_->device("cpu");
  ASSERT_NE(cpu, nullptr);
  Status s2 = run_small_graph(cpu, &on_cpu);
  ASSERT_TRUE(s2.ok()) << s2.to_string();
  ASSERT_EQ(on_vk.size(), on_cpu.size());
  for (size_t i = 0; i < on_vk.size(); ++i) {
    EXPECT_NEAR(on_vk[i], on_cpu[i], 1e-5 + 1e-5 * std::fabs(on_cpu[i])) << "element " << i;
  }
}

TEST_F(VulkanDevice, RepeatedGraphsGiveIdenticalResults) {
  // The second and third runs re-submit the recorded command buffer.
  std::vector<float> first;
  ASSERT_TRUE(run_small_graph(dev_, &first).ok());
  Context ctx;
  Tensor* a = ctx.new_tensor(LOOM_TYPE_F32, {40, 3}, "x").value();
  a->flags |= LOOM_TENSOR_FLAG_INPUT;
  Tensor* y = op::scale(ctx, op::silu(ctx, a).value(), 2.0f, 1.0f).value();
  auto g = Graph::build({y});
  ASSERT_TRUE(g.ok());
  auto ex = Executor::create(dev_);
  ASSERT_TRUE(ex.ok());
  ASSERT_TRUE(ex.value()->allocate(g.value()).ok());
  std::vector<float> x(120), out(120), want(120);
  for (int run = 0; run < 3; ++run) {
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(i) * 0.05f - 3.0f + static_cast<float>(run);
    ASSERT_TRUE(tensor_set(a, x.data(), x.size() * 4).ok());
    Status st = ex.value()->compute(g.value());
    ASSERT_TRUE(st.ok()) << st.to_string();
    ASSERT_TRUE(tensor_get(y, out.data(), out.size() * 4).ok());
    for (size_t i = 0; i < x.size(); ++i) {
      const double s = x[i] / (1.0 + std::exp(-static_cast<double>(x[i])));
      EXPECT_NEAR(out[i], 2.0 * s + 1.0, 1e-5 * (1.0 + std::fabs(2.0 * s)))
          << "run " << run << " element " << i;
    }
  }
}

TEST_F(VulkanDevice, AsyncComputeWithEventsAndErrorsFromSynchronize) {
  if ((dev_->info().caps & LOOM_DEVICE_CAP_EVENTS) == 0)
    GTEST_SKIP() << "no timeline semaphores: no events";
  Buffer buf = std::move(dev_->alloc_buffer(4096)).value();
  auto at = [&](size_t off) { return static_cast<char*>(buf.base()) + off; };
  // x: F32 [64] at 0; y = x * 3 - 1 at 1024 (a raw SCALE node).
  loom_tensor_t x{};
  x.struct_size = sizeof x;
  x.type = LOOM_TYPE_F32;
  x.ne[0] = 64;
  x.ne[1] = x.ne[2] = x.ne[3] = 1;
  x.nb[0] = 4;
  x.nb[1] = x.nb[2] = x.nb[3] = 256;
  x.data = at(0);
  x.buffer = buf.raw();
  loom_tensor_t y = x;
  y.op = LOOM_OP_SCALE;
  y.src[0] = &x;
  y.data = at(1024);
  const float scale = 3.0f, bias = -1.0f;
  std::memcpy(&y.op_params[0], &scale, 4);
  std::memcpy(&y.op_params[1], &bias, 4);
  std::vector<float> in(64), out(64);
  for (int i = 0; i < 64; ++i) in[i] = static_cast<float>(i) * 0.5f;
  ASSERT_EQ(buf.raw()->iface->set_tensor(buf.raw(), &x, in.data(), 0, 256), nullptr);

  Stream s = std::move(dev_->create_stream()).value();
  Event ev = std::move(dev_->create_event()).value();
  // Recorded with nothing queued: complete at once.
  ASSERT_TRUE(s.record_event(ev.raw()).ok());
  ASSERT_TRUE(ev.synchronize().ok());
  loom_tensor_t* nodes[] = {&y};
  loom_graph_t g{sizeof(loom_graph_t), 1, nodes, 0};
  ASSERT_TRUE(s.compute(g).ok());
  ASSERT_TRUE(s.record_event(ev.raw()).ok());
  ASSERT_TRUE(s.wait_event(ev.raw()).ok());  // same device: queue order
  Status es = ev.synchronize();
  ASSERT_TRUE(es.ok()) << es.to_string();
  ASSERT_EQ(buf.raw()->iface->get_tensor(buf.raw(), &y, out.data(), 0, 256), nullptr);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], in[i] * 3.0f - 1.0f) << i;
  ASSERT_TRUE(s.synchronize().ok());

  // A bad row index in queued work comes back from synchronize, naming it.
  loom_tensor_t idx = x;
  idx.type = LOOM_TYPE_I32;
  idx.ne[0] = 1;
  idx.data = at(2048);
  const int32_t bad = 7;
  ASSERT_EQ(buf.raw()->iface->set_tensor(buf.raw(), &idx, &bad, 0, 4), nullptr);
  loom_tensor_t table = x;  // [8, 8] rows of 8
  table.ne[0] = 8;
  table.ne[1] = 8;
  table.nb[1] = 32;
  table.nb[2] = table.nb[3] = 256;
  loom_tensor_t rows = table;
  rows.op = LOOM_OP_GET_ROWS;
  rows.ne[1] = 1;
  rows.src[0] = &table;
  rows.src[1] = &idx;
  rows.data = at(3072);
  std::strcpy(rows.name, "gather");
  table.ne[1] = 4;  // only 4 rows: index 7 is out of range
  loom_tensor_t* nodes2[] = {&rows};
  loom_graph_t g2{sizeof(loom_graph_t), 1, nodes2, 0};
  Status cs = s.compute(g2);
  Status st = cs.ok() ? s.synchronize() : cs;
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("row index 7"), std::string::npos) << st.to_string();
  EXPECT_NE(st.message().find("gather"), std::string::npos) << st.to_string();
  EXPECT_TRUE(s.synchronize().ok()) << "the error is reported once";
}

}  // namespace
}  // namespace loom::vktest
