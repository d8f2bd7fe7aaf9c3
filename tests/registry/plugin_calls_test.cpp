// The raw-handle door (loom/plugin_calls.hpp): an older table is never read
// past its struct_size, an exception escaping a plugin entry becomes a
// status naming the call, a bad alignment is refused.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "loom/registry/plugin_calls.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom {
namespace {

int g_inits = 0;
size_t g_alignment = 64;

void* base_of(loom_buffer_t* b) { return b->context; }
loom_status_t* counting_init(loom_buffer_t*, loom_tensor_t*) {
  ++g_inits;
  return nullptr;
}
loom_status_t* throwing_set(loom_buffer_t*, loom_tensor_t*, const void*, size_t, size_t) {
  throw std::runtime_error("set_tensor exploded");
}
loom_status_t* throwing_copy(loom_buffer_t*, const loom_tensor_t*, loom_tensor_t*) {
  throw 42;  // not even a std::exception
}
const char* buft_name(loom_buffer_type_t*) { return "fake_buft"; }
size_t buft_alignment(loom_buffer_type_t*) { return g_alignment; }
size_t throwing_alloc_size(loom_buffer_type_t*, const loom_tensor_t*) { throw std::bad_alloc(); }
bool buft_is_host(loom_buffer_type_t*) { return true; }

const loom_buffer_type_iface_t kTypeIface = {sizeof(loom_buffer_type_iface_t), buft_name, nullptr,
                                             buft_alignment, nullptr, throwing_alloc_size, buft_is_host};
const loom_buffer_iface_t kNew = {sizeof(loom_buffer_iface_t), nullptr, base_of, throwing_set, nullptr,
                                  nullptr, counting_init, throwing_copy};
// A table that ends before init_tensor: neither it nor copy_tensor is read.
const loom_buffer_iface_t kOld = {offsetof(loom_buffer_iface_t, init_tensor), nullptr, base_of, nullptr,
                                  nullptr, nullptr, counting_init, throwing_copy};

struct Fixture {
  std::vector<char> mem = std::vector<char>(256);
  loom_buffer_type_t type{sizeof(loom_buffer_type_t), &kTypeIface, nullptr, nullptr};
  loom_buffer_t buf{};
  Tensor t{};
  explicit Fixture(const loom_buffer_iface_t* iface) {
    buf = loom_buffer_t{sizeof(loom_buffer_t), iface, &type, mem.size(), mem.data()};
    t.type = LOOM_TYPE_F32;
    t.ne[0] = 4;
    t.ne[1] = t.ne[2] = t.ne[3] = 1;
    t.nb[0] = 4;
    t.nb[1] = t.nb[2] = t.nb[3] = 16;
    t.name[0] = 't';
    t.data = mem.data();
    t.buffer = &buf;
  }
};

TEST(PluginCalls, OldTablesAreReadOnlyUpToTheirSize) {
  Fixture f(&kOld);
  g_inits = 0;
  EXPECT_TRUE(registry::buffer_init_tensor(&f.buf, &f.t).ok());
  EXPECT_EQ(g_inits, 0);
  EXPECT_EQ(registry::buffer_copy_tensor(&f.buf, &f.t, &f.t).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(registry::buffer_base(&f.buf), f.mem.data());

  Fixture g(&kNew);
  EXPECT_TRUE(registry::buffer_init_tensor(&g.buf, &g.t).ok());
  EXPECT_EQ(g_inits, 1);
}

TEST(PluginCalls, ExceptionsBecomeStatuses) {
  Fixture f(&kNew);
  float x[4] = {};
  Status st = registry::buffer_set_tensor(&f.buf, &f.t, x, 0, sizeof x);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("[buffer.set_tensor] fake_buft"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("set_tensor exploded"), std::string::npos) << st.message();
  st = registry::buffer_copy_tensor(&f.buf, &f.t, &f.t);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("unknown type"), std::string::npos) << st.message();
  StatusOr<size_t> sz = registry::buffer_type_alloc_size(&f.type, &f.t);
  ASSERT_FALSE(sz.ok());
  EXPECT_NE(sz.status().message().find("[buffer_type.alloc_size] fake_buft"), std::string::npos);
  // A missing get_tensor entry is an error, not a jump through NULL.
  EXPECT_EQ(registry::buffer_get_tensor(&f.buf, &f.t, x, 0, sizeof x).code(), StatusCode::kInternal);
  EXPECT_EQ(registry::buffer_init_tensor(nullptr, &f.t).code(), StatusCode::kInvalidArgument);
}

// Host rule 19: a range outside the tensor or a tensor outside its buffer
// never reaches the plugin (the throwing entries would say so).
TEST(PluginCalls, RangesAreCheckedBeforeThePluginSeesThem) {
  Fixture f(&kNew);
  float x[8] = {};
  Status st = registry::buffer_set_tensor(&f.buf, &f.t, x, 8, 12);  // 8 + 12 > 16 bytes
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message();
  EXPECT_NE(st.message().find("[buffer.set_tensor] tensor 't': bytes [8, 8 + 12) are outside its 16 bytes"),
            std::string::npos)
      << st.message();
  st = registry::buffer_set_tensor(&f.buf, &f.t, x, SIZE_MAX - 3, 8);  // offset + size overflows
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message();
  st = registry::buffer_set_tensor(&f.buf, &f.t, x, 4, SIZE_MAX);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message();
  f.t.data = f.mem.data() + 248;  // 16 bytes from 8 before the end
  st = registry::buffer_set_tensor(&f.buf, &f.t, x, 0, 4);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message();
  EXPECT_NE(st.message().find("are not inside its buffer"), std::string::npos) << st.message();
  st = registry::buffer_copy_tensor(&f.buf, &f.t, &f.t);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message();
  // Strides count: 4 rows of 16 bytes 64 apart span 3 * 64 + 16 bytes.
  f.t.data = f.mem.data();
  f.t.ne[1] = 4;
  f.t.nb[1] = 64;
  StatusOr<size_t> span = registry::tensor_span_bytes(&f.t);
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(*span, 3u * 64 + 16);
  f.t.ne[1] = 5;  // 4 * 64 + 16 > 256
  EXPECT_EQ(registry::buffer_set_tensor(&f.buf, &f.t, x, 0, 4).code(), StatusCode::kInvalidArgument);
  // A quantized row: whole blocks (2 Q8_0 blocks of 34 bytes).
  f.t.type = LOOM_TYPE_Q8_0;
  f.t.ne[0] = 64;
  f.t.ne[1] = 1;
  f.t.nb[0] = 34;
  span = registry::tensor_span_bytes(&f.t);
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(*span, 68u);
  // In range, the plugin is called (and throws, by design of this fixture).
  f.t.type = LOOM_TYPE_F32;
  f.t.ne[0] = 4;
  f.t.nb[0] = 4;
  EXPECT_EQ(registry::buffer_set_tensor(&f.buf, &f.t, x, 0, 16).code(), StatusCode::kInternal);
}

TEST(PluginCalls, AlignmentMustBeAPowerOfTwo) {
  Fixture f(&kNew);
  g_alignment = 64;
  StatusOr<size_t> a = registry::buffer_type_alignment(&f.type);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 64u);
  g_alignment = 48;
  a = registry::buffer_type_alignment(&f.type);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("48 is not a power of two"), std::string::npos);
  g_alignment = 64;
  EXPECT_EQ(registry::buffer_type_name(&f.type), "fake_buft");
  EXPECT_TRUE(registry::buffer_type_is_host(&f.type));
}

}  // namespace
}  // namespace loom
