// The CPU plugin as a device: properties, buffers, the threads extension
// (cpu only), and for every device: the support table's refusals and
// errors that come back as statuses.
#include <cstring>
#include <string>

#include "loom/runtime/ops.hpp"
#include "conformance/suite.hpp"

#if defined(LOOM_SANITIZE_ADDRESS)
// Let the huge-allocation test see NULL from the allocator instead of an abort.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif

namespace loom::conformance {
namespace {

class CpuPluginTest : public OpTest {
 protected:
  loom_device_t* raw() const { return dev_->raw(); }
};

// Tests of the CPU plugin's own properties skip on another device under
// test (LOOM_TEST_DEVICE); the support-table and error tests run anywhere.
#define LOOM_SKIP_UNLESS_CPU()                                                           \
  do {                                                                                   \
    if (dev_->name() != "cpu") LOOM_SKIP() << "CPU plugin specific; testing " << dev_->name(); \
  } while (0)

// A hand-made node over host arrays (no runtime builder involved).
struct RawNode {
  loom_tensor_t t{};
  RawNode(loom_op_t op, loom_type_t type, std::initializer_list<int64_t> ne) {
    t.struct_size = sizeof(t);
    t.op = op;
    t.type = type;
    int d = 0;
    for (int64_t n : ne) t.ne[d++] = n;
    for (; d < 4; ++d) t.ne[d] = 1;
    t.nb[0] = block_bytes(type);
    t.nb[1] = t.nb[0] * static_cast<size_t>(t.ne[0] / block_elems(type));
    t.nb[2] = t.nb[1] * static_cast<size_t>(t.ne[1]);
    t.nb[3] = t.nb[2] * static_cast<size_t>(t.ne[2]);
    std::strcpy(t.name, "raw");
  }
};

LOOM_CASE(CpuPluginTest, Properties) {
  LOOM_SKIP_UNLESS_CPU();
  const registry::DeviceInfo& info = dev_->info();
  LOOM_EXPECT_EQ(info.name, "cpu");
  LOOM_EXPECT_FALSE(info.description.empty());
  LOOM_EXPECT_EQ(info.type, LOOM_DEVICE_TYPE_CPU);
  LOOM_EXPECT_GT(info.memory_total, 0u);
  LOOM_EXPECT_EQ(info.caps & (LOOM_DEVICE_CAP_HOST_BUFFER | LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR),
            LOOM_DEVICE_CAP_HOST_BUFFER | LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR);
  LOOM_EXPECT_EQ(info.caps & LOOM_DEVICE_CAP_ASYNC, 0u);

  // A host that knows only the first fields gets only those written.
  loom_device_props_t p;
  std::memset(&p, 0xAB, sizeof(p));
  p.struct_size = LOOM_STRUCT_END(loom_device_props_t, description);
  LOOM_ASSERT_EQ(raw()->iface->get_props(raw(), &p), nullptr);
  LOOM_EXPECT_STREQ(p.name, "cpu");
  LOOM_EXPECT_EQ(p.type, static_cast<int32_t>(0xABABABAB));
}

LOOM_CASE(CpuPluginTest, BufferType) {
  LOOM_SKIP_UNLESS_CPU();
  loom_buffer_type_t* bt = dev_->buffer_type();
  LOOM_EXPECT_STREQ(bt->iface->name(bt), "cpu");
  LOOM_EXPECT_TRUE(bt->iface->is_host(bt));
  LOOM_EXPECT_EQ(bt->iface->alignment(bt), 64u);
  LOOM_EXPECT_TRUE(dev_->supports_buffer_type(bt));

  Buffer empty = unwrap(dev_->alloc_buffer(0), "alloc 0");
  LOOM_EXPECT_EQ(empty.size(), 0u);
  Buffer b = unwrap(dev_->alloc_buffer(100), "alloc");
  LOOM_EXPECT_EQ(reinterpret_cast<uintptr_t>(b.base()) % 64, 0u);
  LOOM_EXPECT_OK(b.clear(0x5A));
  LOOM_EXPECT_EQ(static_cast<uint8_t*>(b.base())[99], 0x5A);

  auto huge = dev_->alloc_buffer(size_t{1} << 62);
  LOOM_ASSERT_FALSE(huge.ok());
  LOOM_EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  LOOM_EXPECT_NE(huge.status().message().find(std::to_string(size_t{1} << 62)), std::string::npos)
      << huge.status().to_string();
}

LOOM_CASE(CpuPluginTest, BufferFromHostPtrDoesNotOwnAndChecksRanges) {
  LOOM_SKIP_UNLESS_CPU();
  std::vector<float> host(8, 1.0f);
  loom_buffer_t* buf = nullptr;
  LOOM_ASSERT_EQ(raw()->iface->buffer_from_host_ptr(raw(), host.data(), host.size() * 4, &buf), nullptr);
  LOOM_ASSERT_NE(buf, nullptr);
  LOOM_EXPECT_EQ(buf->iface->base(buf), host.data());
  RawNode n(LOOM_OP_NONE, LOOM_TYPE_F32, {4});
  n.t.data = host.data() + 2;
  n.t.buffer = buf;
  const float v[2] = {5.0f, 6.0f};
  LOOM_EXPECT_EQ(buf->iface->set_tensor(buf, &n.t, v, 4, 8), nullptr);
  LOOM_EXPECT_EQ(host[3], 5.0f);
  LOOM_EXPECT_EQ(host[4], 6.0f);
  float out[2] = {};
  LOOM_EXPECT_EQ(buf->iface->get_tensor(buf, &n.t, out, 4, 8), nullptr);
  LOOM_EXPECT_EQ(out[1], 6.0f);
  // Past the end of the wrapped memory: a status, no write.
  Status st = status_from_abi(buf->iface->set_tensor(buf, &n.t, v, 20, 8));
  LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  buf->iface->free(buf);
  LOOM_EXPECT_EQ(host[0], 1.0f);  // still ours
}

LOOM_CASE(CpuPluginTest, ThreadsExtension) {
  if (!has_threads()) LOOM_SKIP() << dev_->name() << " has no loom.threads extension";
  const auto* ext = static_cast<const loom_ext_threads_t*>(dev_->extension(LOOM_EXT_THREADS, 1));
  LOOM_ASSERT_NE(ext, nullptr);
  LOOM_EXPECT_EQ(dev_->extension(LOOM_EXT_THREADS, 2), nullptr);
  LOOM_EXPECT_EQ(dev_->extension("loom.nope", 1), nullptr);
  const int32_t before = ext->get_threads(raw());
  LOOM_EXPECT_GE(before, 1);
  Status st = status_from_abi(ext->set_threads(raw(), 0));
  LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  LOOM_EXPECT_NE(st.message().find(dev_->info().plugin + ".set_threads"), std::string::npos) << st.to_string();
  {
    ScopedThreads two(dev_, 2);
    LOOM_EXPECT_OK(two.status());
    LOOM_EXPECT_EQ(ext->get_threads(raw()), 2);
  }
  LOOM_EXPECT_EQ(ext->get_threads(raw()), before);
}

LOOM_CASE(CpuPluginTest, SupportTableRefusesWhatKernelsCannotRun) {
  RawNode a(LOOM_OP_NONE, LOOM_TYPE_F32, {32, 4});
  RawNode b16(LOOM_OP_NONE, LOOM_TYPE_F16, {32, 3});
  RawNode b32(LOOM_OP_NONE, LOOM_TYPE_F32, {32, 3});
  RawNode ints(LOOM_OP_NONE, LOOM_TYPE_I32, {32, 4});
  RawNode mm(LOOM_OP_MUL_MAT, LOOM_TYPE_F32, {4, 3});
  mm.t.src[0] = &a.t;
  mm.t.src[1] = &b32.t;
  // What a device claims is its own; that the cpu plugin claims these is
  // checked on it only. The refusals hold for every device.
  const bool cpu = reference_device();
  if (cpu) {
    LOOM_EXPECT_TRUE(raw()->iface->supports_op(raw(), &mm.t));
  }
  mm.t.src[1] = &b16.t;  // B must be F32
  LOOM_EXPECT_FALSE(raw()->iface->supports_op(raw(), &mm.t));
  mm.t.src[1] = nullptr;
  LOOM_EXPECT_FALSE(raw()->iface->supports_op(raw(), &mm.t));

  RawNode add(LOOM_OP_ADD, LOOM_TYPE_I32, {32, 4});
  add.t.src[0] = &ints.t;
  add.t.src[1] = &ints.t;
  LOOM_EXPECT_FALSE(raw()->iface->supports_op(raw(), &add.t));

  RawNode am(LOOM_OP_ARGMAX, LOOM_TYPE_I32, {3});
  am.t.src[0] = &b16.t;  // ARGMAX reads F32 only
  LOOM_EXPECT_FALSE(raw()->iface->supports_op(raw(), &am.t));
  am.t.src[0] = &b32.t;
  if (cpu) {
    LOOM_EXPECT_TRUE(raw()->iface->supports_op(raw(), &am.t));
  }

  RawNode bad(static_cast<loom_op_t>(99), LOOM_TYPE_F32, {1});
  bad.t.src[0] = &a.t;
  LOOM_EXPECT_FALSE(raw()->iface->supports_op(raw(), &bad.t));

  RawNode rope(LOOM_OP_ROPE, LOOM_TYPE_F32, {32, 4});
  RawNode pos(LOOM_OP_NONE, LOOM_TYPE_I32, {1});
  rope.t.src[0] = &a.t;
  rope.t.src[1] = &pos.t;
  rope.t.op_params[0] = 7;  // odd n_dims
  LOOM_EXPECT_FALSE(raw()->iface->supports_op(raw(), &rope.t));
  rope.t.op_params[0] = 8;
  if (cpu) {
    LOOM_EXPECT_TRUE(raw()->iface->supports_op(raw(), &rope.t));
  }
  rope.t.op_params[1] = 1;  // unknown mode
  LOOM_EXPECT_FALSE(raw()->iface->supports_op(raw(), &rope.t));
}

LOOM_CASE(CpuPluginTest, UnsupportedNodeIsUnimplementedWithNames) {
  std::vector<int32_t> mem(64, 1);
  RawNode x(LOOM_OP_NONE, LOOM_TYPE_I32, {8});
  x.t.data = mem.data();
  RawNode node(LOOM_OP_SILU, LOOM_TYPE_I32, {8});
  node.t.src[0] = &x.t;
  node.t.data = mem.data() + 16;
  std::strcpy(node.t.name, "my_silu");
  Stream s = unwrap(dev_->create_stream(), "stream");
  loom_tensor_t* nodes[] = {&node.t};
  loom_graph_t g{sizeof(loom_graph_t), 1, nodes, 0};
  Status st = s.compute(g);
  LOOM_EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  LOOM_EXPECT_NE(st.message().find("SILU"), std::string::npos) << st.to_string();
  LOOM_EXPECT_NE(st.message().find("my_silu"), std::string::npos) << st.to_string();
  LOOM_EXPECT_NE(st.message().find("i32"), std::string::npos) << st.to_string();
  LOOM_EXPECT_OK(s.synchronize());
}

LOOM_CASE(CpuPluginTest, BadRowIndexIsAStatusNotACrash) {
  Operand a = input(LOOM_TYPE_F32, {4, 3, 1, 1});
  Operand ix = input_ints(LOOM_TYPE_I32, {2, 1, 1, 1}, {1, 3});
  Tensor* out = unwrap(op::get_rows(ctx_, a.t, ix.t), "get_rows");
  Status st = run({out});
  LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  LOOM_EXPECT_NE(st.message().find("row index 3"), std::string::npos) << st.to_string();

  Operand dst = input(LOOM_TYPE_F16, {4, 3, 1, 1});
  Operand rows = input(LOOM_TYPE_F32, {4, 1, 1, 1});
  Operand ix64 = input_ints(LOOM_TYPE_I64, {1, 1, 1, 1}, {-1});
  Tensor* set = unwrap(op::set_rows(ctx_, dst.t, rows.t, ix64.t), "set_rows");
  st = run({set});
  LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  LOOM_EXPECT_NE(st.message().find("row index -1"), std::string::npos) << st.to_string();
}

}  // namespace
}  // namespace loom::conformance
