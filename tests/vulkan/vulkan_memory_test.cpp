// Vulkan memory beyond plain device buffers: host-visible buffer types that
// the CPU reads in place, host memory wrapped with buffer_from_host_ptr
// (VK_EXT_external_memory_host), bind windows for buffers larger than
// maxStorageBufferRange, queued host<->tensor copies through the stream's
// staging ring, and the scheduler skipping copies into host-readable memory.
// Each test runs with the device as found and again with
// LOOM_VULKAN_DISABLE=map (device memory not host memory, as on a discrete
// GPU) and =async (no timeline semaphore: everything synchronous).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/sched/scheduler.hpp"
#include "loom/runtime/tensor.hpp"
#include "vulkan_test_util.hpp"

namespace loom::vktest {
namespace {

// lavapipe's maxStorageBufferRange (vulkaninfo); other devices skip the
// window tests, whose sizes are built around it.
constexpr uint64_t kLavapipeMaxRange = 134217728;

class MemoryTest : public DisabledFeaturesTest {
 protected:
  bool lavapipe() const {
    return dev_->info().description.find("llvmpipe") != std::string::npos;
  }
};

// A contiguous F32 vector of n elements at `data` in buffer `b`.
loom_tensor_t f32(int64_t n, void* data, loom_buffer_t* b, const char* name) {
  loom_tensor_t t{};
  t.struct_size = sizeof t;
  t.type = LOOM_TYPE_F32;
  t.ne[0] = n;
  t.ne[1] = t.ne[2] = t.ne[3] = 1;
  t.nb[0] = 4;
  t.nb[1] = t.nb[2] = t.nb[3] = static_cast<size_t>(n) * 4;
  t.data = data;
  t.buffer = b;
  std::strncpy(t.name, name, sizeof t.name - 1);
  return t;
}

// y = x * scale + bias as a raw SCALE node.
loom_tensor_t scale_node(loom_tensor_t* x, void* data, loom_buffer_t* b, float scale, float bias) {
  loom_tensor_t y = f32(x->ne[0], data, b, "y");
  y.op = LOOM_OP_SCALE;
  y.src[0] = x;
  std::memcpy(&y.op_params[0], &scale, 4);
  std::memcpy(&y.op_params[1], &bias, 4);
  return y;
}

Status run_nodes(registry::Device* dev, std::vector<loom_tensor_t*> nodes) {
  LOOM_ASSIGN_OR_RETURN(Stream s, dev->create_stream());
  loom_graph_t g{sizeof(loom_graph_t), static_cast<int32_t>(nodes.size()), nodes.data(), 0};
  LOOM_RETURN_IF_ERROR(s.compute(g));
  return s.synchronize();
}

char* at(const Buffer& b, size_t off) { return static_cast<char*>(b.base()) + off; }

TEST_P(MemoryTest, BufferTypesSayWhetherTheHostReadsThem) {
  const registry::DeviceInfo& info = dev_->info();
  loom_buffer_type_t* own = dev_->buffer_type();
  const bool uma = lavapipe() && !disabled("map");
  EXPECT_EQ(own->iface->is_host(own), uma)
      << "lavapipe's memory is host memory, unless LOOM_VULKAN_DISABLE=map";
  // A host-visible type the kernels read always exists.
  EXPECT_NE(info.caps & LOOM_DEVICE_CAP_HOST_BUFFER, 0u);
  loom_device_t* raw = dev_->raw();
  loom_buffer_type_t* host = raw->iface->host_buffer_type(raw);
  ASSERT_NE(host, nullptr);
  EXPECT_TRUE(host->iface->is_host(host));
  EXPECT_TRUE(dev_->supports_buffer_type(own));
  EXPECT_TRUE(dev_->supports_buffer_type(host));
  EXPECT_EQ(host == own, uma);
  // Host pointers reach the CPU plugin's kernels; a GPU reads only buffers.
  EXPECT_FALSE(dev_->reads_host_pointers());
  registry::Device* cpu = reg_->device("cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE(cpu->supports_buffer_type(host));
  EXPECT_EQ(cpu->supports_buffer_type(own), uma);
  if (lavapipe()) {
    EXPECT_NE(info.caps & LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR, 0u)
        << "lavapipe has VK_EXT_external_memory_host";
  }
}

TEST_P(MemoryTest, HostBufferIsReadAndWrittenInPlace) {
  loom_device_t* raw = dev_->raw();
  loom_buffer_type_t* host = raw->iface->host_buffer_type(raw);
  loom_buffer_t* hb = nullptr;
  ASSERT_EQ(host->iface->alloc(host, 8192, &hb), nullptr);
  Buffer b(hb, nullptr);
  ASSERT_TRUE(b.is_host());
  // Written through the pointer, read by a kernel; the result is read
  // through the pointer too.
  auto* xs = reinterpret_cast<float*>(at(b, 0));
  for (int i = 0; i < 256; ++i) xs[i] = static_cast<float>(i) - 100.0f;
  loom_tensor_t x = f32(256, at(b, 0), b.raw(), "x");
  loom_tensor_t y = scale_node(&x, at(b, 4096), b.raw(), 0.5f, 2.0f);
  Status st = run_nodes(dev_, {&y});
  ASSERT_TRUE(st.ok()) << st.to_string();
  const auto* ys = reinterpret_cast<const float*>(at(b, 4096));
  for (int i = 0; i < 256; ++i) EXPECT_EQ(ys[i], xs[i] * 0.5f + 2.0f) << i;
}

TEST_P(MemoryTest, WrappedHostMemoryIsReadWithoutACopy) {
  if ((dev_->info().caps & LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR) == 0)
    GTEST_SKIP() << "no VK_EXT_external_memory_host";
  // Unaligned start and end: the plugin imports the pages around them.
  std::vector<float> mem(70000);
  const size_t lead = 37;  // floats: not page aligned
  const int64_t n = 60000;
  for (int64_t i = 0; i < n; ++i) mem[lead + i] = std::sin(static_cast<float>(i) * 0.01f);
  auto wrapped = dev_->buffer_from_host_ptr(mem.data() + lead, n * 4);
  ASSERT_TRUE(wrapped.ok()) << wrapped.status().to_string();
  EXPECT_EQ(wrapped->base(), static_cast<void*>(mem.data() + lead)) << "tensors point at host memory";
  EXPECT_TRUE(wrapped->is_host());
  EXPECT_TRUE(dev_->supports_buffer_type(wrapped->raw()->buffer_type));
  auto out = dev_->alloc_buffer(n * 4);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  loom_tensor_t x = f32(n, wrapped->base(), wrapped->raw(), "x");
  loom_tensor_t y = scale_node(&x, out->base(), out->raw(), 3.0f, 0.0f);
  std::vector<float> got(n);
  for (int pass = 0; pass < 2; ++pass) {
    Status st = run_nodes(dev_, {&y});
    ASSERT_TRUE(st.ok()) << st.to_string();
    ASSERT_EQ(out->raw()->iface->get_tensor(out->raw(), &y, got.data(), 0, n * 4), nullptr);
    for (int64_t i = 0; i < n; i += 997) EXPECT_EQ(got[i], mem[lead + i] * 3.0f) << pass << " " << i;
    EXPECT_EQ(got[n - 1], mem[lead + n - 1] * 3.0f);
    // The kernel reads the host memory itself: a change shows at once.
    for (int64_t i = 0; i < n; ++i) mem[lead + i] += 1.0f;
  }
  // Past the wrapped range is refused, not read.
  loom_tensor_t past = f32(n + 64, wrapped->base(), wrapped->raw(), "past");
  loom_tensor_t y2 = scale_node(&past, out->base(), out->raw(), 1.0f, 0.0f);
  y2.ne[0] = n + 64;
  Status bad = run_nodes(dev_, {&y2});
  EXPECT_FALSE(bad.ok());
}

TEST_P(MemoryTest, BuffersLargerThanOneBindingAreBoundInWindows) {
  if (!lavapipe()) GTEST_SKIP() << "sizes are built around lavapipe's maxStorageBufferRange";
  // 160 MiB: more than one storage binding (128 MiB) holds.
  const size_t size = size_t{160} << 20;
  auto big = dev_->alloc_buffer(size);
  ASSERT_TRUE(big.ok()) << big.status().to_string();
  const int64_t n = 4096;
  std::vector<float> in(n), got(n);
  for (int64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 97) - 48.0f;
  // x near the end, y near the start, z straddling the 64 MiB window step.
  loom_tensor_t x = f32(n, at(*big, size - 65536), big->raw(), "x");
  loom_tensor_t y = scale_node(&x, at(*big, 4096), big->raw(), 2.0f, 1.0f);
  loom_tensor_t z = scale_node(&y, at(*big, (size_t{64} << 20) - 8192), big->raw(), -1.0f, 0.0f);
  ASSERT_EQ(big->raw()->iface->set_tensor(big->raw(), &x, in.data(), 0, n * 4), nullptr);
  Status st = run_nodes(dev_, {&y, &z});
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_EQ(big->raw()->iface->get_tensor(big->raw(), &z, got.data(), 0, n * 4), nullptr);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(got[i], -(in[i] * 2.0f + 1.0f)) << i;

  // One tensor larger than any binding: a clear error naming the limit.
  const int64_t huge = static_cast<int64_t>(kLavapipeMaxRange / 4) + 1024;
  loom_tensor_t hx = f32(huge, at(*big, 0), big->raw(), "whole");
  loom_tensor_t hy = scale_node(&hx, at(*big, 0), big->raw(), 1.0f, 0.0f);
  Status too_big = run_nodes(dev_, {&hy});
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.message().find("maxStorageBufferRange"), std::string::npos)
      << too_big.to_string();
  // And the device still works.
  st = run_nodes(dev_, {&y});
  EXPECT_TRUE(st.ok()) << st.to_string();
}

TEST_P(MemoryTest, QueuedCopiesAreOrderedWithComputeAndMayReuseTheSource) {
  auto buf = dev_->alloc_buffer(size_t{48} << 20);
  ASSERT_TRUE(buf.ok()) << buf.status().to_string();
  auto stream = dev_->create_stream();
  ASSERT_TRUE(stream.ok()) << stream.status().to_string();
  Stream& s = stream.value();
  ASSERT_TRUE(s.has_set_async());
  ASSERT_TRUE(s.has_get_async());
  const int64_t n = 1024;
  loom_tensor_t x = f32(n, at(*buf, 0), buf->raw(), "x");
  loom_tensor_t y = scale_node(&x, at(*buf, 8192), buf->raw(), 2.0f, 0.0f);
  loom_tensor_t* nodes[] = {&y};
  loom_graph_t g{sizeof(loom_graph_t), 1, nodes, 0};
  std::vector<float> src(n), out1(n), out2(n);
  // Round 1: copy in, compute, copy out; the source is overwritten right
  // after the call, before the copy could have run.
  for (int64_t i = 0; i < n; ++i) src[i] = static_cast<float>(i);
  ASSERT_TRUE(s.set_tensor_async(&x, src.data(), 0, n * 4).ok());
  for (float& v : src) v = -7.0f;
  ASSERT_TRUE(s.compute(g).ok());
  ASSERT_TRUE(s.get_tensor_async(&y, out1.data(), 0, n * 4).ok());
  // Round 2 queued behind round 1 before anything is waited for.
  ASSERT_TRUE(s.set_tensor_async(&x, src.data(), 0, n * 4).ok());
  ASSERT_TRUE(s.compute(g).ok());
  ASSERT_TRUE(s.get_tensor_async(&y, out2.data(), 0, n * 4).ok());
  Status st = s.synchronize();
  ASSERT_TRUE(st.ok()) << st.to_string();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out1[i], 2.0f * static_cast<float>(i)) << i;
    ASSERT_EQ(out2[i], -14.0f) << i;
  }

  // 40 MiB in and out: more than the 16 MiB staging ring, in pieces.
  const size_t big = size_t{40} << 20;
  std::vector<uint8_t> in(big), back(big);
  for (size_t i = 0; i < big; ++i) in[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  loom_tensor_t whole = f32(static_cast<int64_t>(big / 4), at(*buf, 4096), buf->raw(), "whole");
  ASSERT_TRUE(s.set_tensor_async(&whole, in.data(), 0, big).ok());
  ASSERT_TRUE(s.get_tensor_async(&whole, back.data(), 0, big).ok());
  st = s.synchronize();
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_TRUE(in == back);

  // Past the buffer and foreign tensors are refused with the reason.
  Status past = s.set_tensor_async(&x, src.data(), (size_t{48} << 20) - 64, n * 4);
  EXPECT_EQ(past.code(), StatusCode::kInvalidArgument) << past.to_string();
  std::vector<float> host(16);
  loom_tensor_t foreign = f32(16, host.data(), nullptr, "foreign");
  Status fs = s.get_tensor_async(&foreign, host.data(), 0, 64);
  EXPECT_EQ(fs.code(), StatusCode::kInvalidArgument) << fs.to_string();
  EXPECT_NE(fs.message().find("foreign"), std::string::npos) << fs.to_string();
}

// vulkan0's "queue submissions: N" of loom.details.
uint64_t submissions(const registry::Device* d) {
  const auto* ext =
      static_cast<const loom_ext_details_t*>(d->extension(LOOM_EXT_DETAILS, LOOM_EXT_DETAILS_VERSION));
  if (ext == nullptr) return 0;
  std::string text(2048, '\0');
  text.resize(std::min(text.size() - 1, ext->get_details(d->raw(), text.data(), text.size())));
  const size_t at = text.find("queue submissions: ");
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + 19));
}

// A decode step's inputs (three queued uploads) ride in front of its graph:
// one vkQueueSubmit for the step; a read after it is one more. Without
// timeline semaphores every copy is synchronous (not counted here).
TEST_P(MemoryTest, UploadsRideWithTheNextGraphInOneSubmission) {
  if (disabled("async")) GTEST_SKIP() << "synchronous copies";
  auto buf = dev_->alloc_buffer(size_t{1} << 20);
  ASSERT_TRUE(buf.ok()) << buf.status().to_string();
  auto stream = dev_->create_stream();
  ASSERT_TRUE(stream.ok()) << stream.status().to_string();
  Stream& s = stream.value();
  const int64_t n = 256;
  loom_tensor_t x = f32(n, at(*buf, 0), buf->raw(), "x");
  loom_tensor_t y = scale_node(&x, at(*buf, 8192), buf->raw(), 3.0f, 1.0f);
  loom_tensor_t* nodes[] = {&y};
  loom_graph_t g{sizeof(loom_graph_t), 1, nodes, 0};
  std::vector<float> a(n), out(n);
  for (int step = 0; step < 3; ++step) {
    const uint64_t before = submissions(dev_);
    // Three uploads into x (the last one wins), like token, position, length.
    for (int k = 0; k < 3; ++k) {
      for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>(i * (k + 1) + step);
      ASSERT_TRUE(s.set_tensor_async(&x, a.data(), 0, n * 4).ok());
    }
    ASSERT_TRUE(s.compute(g).ok());
    EXPECT_EQ(submissions(dev_) - before, 1u) << "step " << step;
    ASSERT_TRUE(s.get_tensor_async(&y, out.data(), 0, n * 4).ok());
    const Status st = s.synchronize();
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(submissions(dev_) - before, 2u) << "step " << step;
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 3.0f * static_cast<float>(i * 3 + step) + 1.0f) << i;
  }
  // Uploads with no graph after them land at synchronize.
  for (int64_t i = 0; i < n; ++i) a[i] = 5.0f;
  ASSERT_TRUE(s.set_tensor_async(&x, a.data(), 0, n * 4).ok());
  ASSERT_TRUE(s.synchronize().ok());
  std::vector<float> back(n);
  ASSERT_EQ(buf->raw()->iface->get_tensor(buf->raw(), &x, back.data(), 0, n * 4), nullptr);
  EXPECT_EQ(back[0], 5.0f);
  EXPECT_EQ(back[n - 1], 5.0f);
}

TEST_P(MemoryTest, SchedulerCopiesNothingIntoMemoryTheCpuReads) {
  registry::Device* cpu = reg_->device("cpu");
  ASSERT_NE(cpu, nullptr);
  auto sched = Scheduler::create({dev_, cpu});
  ASSERT_TRUE(sched.ok()) << sched.status().to_string();
  // x -> silu (vulkan0) -> scale (cpu) -> gelu (vulkan0) -> scale (cpu)
  Context ctx;
  Tensor* x = ctx.new_tensor(LOOM_TYPE_F32, {512, 4}, "x").value();
  x->flags |= LOOM_TENSOR_FLAG_INPUT;
  Tensor* a = op::silu(ctx, x).value();
  Tensor* b = op::scale(ctx, a, 2.0f, 0.5f).value();
  Tensor* c = op::gelu(ctx, b).value();
  Tensor* d = op::scale(ctx, c, -1.0f, 0.0f).value();
  a->set_name("a");
  b->set_name("b");
  c->set_name("c");
  d->set_name("d");
  d->flags |= LOOM_TENSOR_FLAG_OUTPUT;
  for (Tensor* t : {a, c}) ASSERT_TRUE((*sched)->pin(t, dev_).ok());
  for (Tensor* t : {b, d}) ASSERT_TRUE((*sched)->pin(t, cpu).ok());
  auto g = Graph::build({d});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_TRUE((*sched)->allocate(g.value()).ok());
  std::vector<float> xv(512 * 4), out(512 * 4);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i % 61) * 0.1f - 3.0f;
  ASSERT_TRUE(tensor_set(x, xv.data(), xv.size() * 4).ok());
  Status st = (*sched)->compute(g.value());
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_TRUE(tensor_get(d, out.data(), out.size() * 4).ok());
  for (size_t i = 0; i < xv.size(); ++i) {
    const double v = xv[i];
    const double s = v / (1.0 + std::exp(-v)) * 2.0 + 0.5;
    const double gl = 0.5 * s * (1.0 + std::tanh(0.7978845608 * (s + 0.044715 * s * s * s)));
    EXPECT_NEAR(out[i], -gl, 1e-4 * (1.0 + std::fabs(gl))) << i;
  }
  const SchedStats& stats = (*sched)->last_stats();
  auto link = [&](const std::string& k) {
    auto it = stats.bytes_per_link.find(k);
    return it == stats.bytes_per_link.end() ? size_t{0} : it->second;
  };
  const std::string to_cpu = dev_->name() + "->cpu";
  const std::string to_vk = "cpu->" + dev_->name();
  EXPECT_GT(link(to_vk), 0u) << "vulkan0 reads only its own buffers";
  if (dev_->buffer_type()->iface->is_host(dev_->buffer_type())) {
    EXPECT_EQ(link(to_cpu), 0u) << "the cpu reads vulkan0's host memory in place";
  } else {
    EXPECT_GT(link(to_cpu), 0u) << "device memory is copied out";
  }
}

INSTANTIATE_TEST_SUITE_P(Vulkan, MemoryTest, ::testing::Values("", "map", "async"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return std::string(*p.param ? p.param : "as_found");
                         });

}  // namespace
}  // namespace loom::vktest
