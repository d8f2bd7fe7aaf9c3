// Buffers, streams, extensions and unloading: a plugin stays loaded while
// anything it made is alive and unloads after shutdown once it is released.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstring>

#include "registry_test_util.hpp"

namespace loom::test {
namespace {

using registry::Registry;

// Whether the library at path is currently mapped in this process.
bool is_loaded(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!h) return false;
  dlclose(h);
  return true;
}

class NullDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    // A private copy, so no other registry in this process shares its mapping.
    path_ = dir_.copy_in(null_plugin_path(), "libloom-null.so");
    ScopedEnv n("LOOM_NULL_DEVICES", "2");
    reg_ = Registry::load(only({path_}));
    ASSERT_NE(reg_->device("null0"), nullptr) << describe(*reg_);
  }
  CleanLoomEnv env_;
  TempDir dir_;
  std::string path_;
  std::unique_ptr<Registry> reg_;
};

TEST_F(NullDevices, ShutdownWaitsForLiveBuffers) {
  auto buf = reg_->device("null0")->alloc_buffer(1000);
  ASSERT_TRUE(buf.ok()) << buf.status().to_string();
  Buffer b = std::move(buf).value();
  EXPECT_GE(b.size(), 1000u);
  EXPECT_NE(b.base(), nullptr);
  EXPECT_TRUE(b.is_host());
  EXPECT_TRUE(b.clear(0xAB).ok());
  EXPECT_EQ(static_cast<unsigned char*>(b.base())[999], 0xAB);
  EXPECT_EQ(reg_->live_objects(), 1u);

  Status st = reg_->shutdown();
  EXPECT_EQ(st.code(), StatusCode::kAborted);
  EXPECT_TRUE(contains(st.message(), "null (1)")) << st.message();
  EXPECT_TRUE(reg_->devices().empty());
  EXPECT_TRUE(is_loaded(path_));
  EXPECT_EQ(reg_->live_objects(), 1u);

  Buffer moved = std::move(b);  // moving does not change the count
  EXPECT_EQ(reg_->live_objects(), 1u);
  moved.reset();
  EXPECT_EQ(reg_->live_objects(), 0u);
  EXPECT_FALSE(is_loaded(path_));
  EXPECT_TRUE(reg_->shutdown().ok());
  EXPECT_TRUE(reg_->shutdown().ok());  // idempotent
}

TEST_F(NullDevices, BufferOutlivesTheRegistry) {
  auto buf = reg_->device("null1")->alloc_buffer(64);
  ASSERT_TRUE(buf.ok());
  auto stream = reg_->device("null1")->create_stream();
  ASSERT_TRUE(stream.ok());
  reg_.reset();  // an implicit shutdown: the plugin waits for its objects
  EXPECT_TRUE(is_loaded(path_));
  EXPECT_TRUE(buf->clear(1).ok());
  buf->reset();
  EXPECT_TRUE(is_loaded(path_));
  stream->reset();
  EXPECT_FALSE(is_loaded(path_));
}

TEST_F(NullDevices, NoLiveObjectsMeansShutdownUnloads) {
  EXPECT_TRUE(is_loaded(path_));
  EXPECT_TRUE(reg_->shutdown().ok());
  EXPECT_FALSE(is_loaded(path_));
}

TEST_F(NullDevices, StreamRunsNothingAndSaysWhich) {
  registry::Device* d = reg_->device("null0");
  EXPECT_FALSE(d->supports_op(nullptr));
  auto stream = d->create_stream();
  ASSERT_TRUE(stream.ok()) << stream.status().to_string();
  EXPECT_EQ(reg_->live_objects(), 1u);

  loom_tensor_t a{}, sum{};
  a.struct_size = sum.struct_size = sizeof(loom_tensor_t);
  a.op = LOOM_OP_NONE;
  sum.op = LOOM_OP_ADD;
  sum.src[0] = sum.src[1] = &a;
  std::strcpy(sum.name, "sum");
  loom_tensor_t* nodes[] = {&sum};
  loom_graph_t g{sizeof(loom_graph_t), 1, nodes, 0};
  Status st = stream->compute(g);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(contains(st.message(), "ADD")) << st.message();
  EXPECT_TRUE(contains(st.message(), "null0")) << st.message();
  EXPECT_TRUE(stream->synchronize().ok());
  loom_graph_t empty{sizeof(loom_graph_t), 0, nullptr, 0};
  EXPECT_TRUE(stream->compute(empty).ok());
  stream->reset();
  EXPECT_EQ(reg_->live_objects(), 0u);
}

TEST_F(NullDevices, BufferTypeAndExtensions) {
  registry::Device* d = reg_->device("null0");
  loom_buffer_type_t* buft = d->buffer_type();
  ASSERT_NE(buft, nullptr);
  EXPECT_STREQ(buft->iface->name(buft), "null");
  EXPECT_TRUE(d->supports_buffer_type(buft));
  EXPECT_FALSE(d->supports_buffer_type(reg_->device("null1")->buffer_type()));
  EXPECT_FALSE(d->supports_buffer_type(nullptr));
  EXPECT_NE(d->extension(LOOM_EXT_THREADS, LOOM_EXT_THREADS_VERSION), nullptr);
  EXPECT_EQ(d->extension("loom.nosuch", 1), nullptr);
  EXPECT_TRUE(d->set_threads(3).ok());
  auto* ext = static_cast<const loom_ext_threads_t*>(d->extension(LOOM_EXT_THREADS, 1));
  EXPECT_EQ(ext->get_threads(d->raw()), 3);
  EXPECT_EQ(d->set_threads(0).code(), StatusCode::kInvalidArgument);
}

TEST_F(NullDevices, ZeroSizeBufferAndTensorCopies) {
  registry::Device* d = reg_->device("null0");
  auto empty = d->alloc_buffer(0);
  ASSERT_TRUE(empty.ok());
  EXPECT_NE(empty->base(), nullptr);

  auto buf = d->alloc_buffer(64);
  ASSERT_TRUE(buf.ok());
  loom_buffer_t* raw = buf->raw();
  loom_tensor_t t{};
  t.struct_size = sizeof t;
  t.data = static_cast<char*>(buf->base()) + 16;
  t.buffer = raw;
  const float in[4] = {1, 2, 3, 4};
  float out[4] = {};
  EXPECT_TRUE(status_from_abi(raw->iface->set_tensor(raw, &t, in, 0, sizeof in)).ok());
  EXPECT_TRUE(status_from_abi(raw->iface->get_tensor(raw, &t, out, 0, sizeof out)).ok());
  EXPECT_EQ(out[3], 4.0f);
  Status past = status_from_abi(raw->iface->set_tensor(raw, &t, in, 40, sizeof in));
  EXPECT_EQ(past.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(past.message(), "outside the buffer of 64 bytes")) << past.message();
}

TEST(NullPlugin, UnavailableWithoutTheVariable) {
  CleanLoomEnv env;
  auto reg = Registry::load(only({null_plugin_path()}));
  const auto* c = find_candidate(*reg, "null");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->fate, registry::Fate::kUnavailable);
  EXPECT_EQ(c->stage, registry::Stage::kProbed);
  EXPECT_TRUE(contains(c->reason, "LOOM_NULL_DEVICES")) << c->reason;
  for (const char* bad : {"0", "-3", "two", "2x"}) {
    ScopedEnv n("LOOM_NULL_DEVICES", bad);
    auto r = Registry::load(only({null_plugin_path()}));
    EXPECT_EQ(find_candidate(*r, "null")->fate, registry::Fate::kUnavailable) << bad;
  }
}

TEST(Names, StagesFatesTypes) {
  EXPECT_STREQ(registry::stage_name(registry::Stage::kNegotiated), "negotiated");
  EXPECT_STREQ(registry::fate_name(registry::Fate::kUnavailable), "unavailable");
  EXPECT_STREQ(registry::device_type_name(LOOM_DEVICE_TYPE_IGPU), "igpu");
  EXPECT_STREQ(registry::device_type_name(LOOM_DEVICE_TYPE_CPU), "cpu");
}

}  // namespace
}  // namespace loom::test
