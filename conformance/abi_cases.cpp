// The ABI checks of `loom conformance` (suite "Abi"): what docs/plugin-abi.md
// asks of every plugin, checked on the device under test through the
// registry's wrappers (tables are read to check them, called through the
// one door): negotiation, struct sizes, mandatory entries, the host's
// fallbacks for absent optional entries, buffers (alignment, set/get at
// offsets, clear, copy, limits), streams and events.
#include <cstring>
#include <string>
#include <vector>

#include "conformance/suite.hpp"
#include "loom/registry/plugin_calls.hpp"

namespace loom::conformance {
namespace {

class Abi : public OpTest {
 protected:
  loom_device_t* raw() const { return dev_->raw(); }
  const loom_device_props_t props() const {
    loom_device_props_t p{};
    p.struct_size = sizeof(p);
    (void)raw()->iface->get_props(raw(), &p);
    return p;
  }
  bool has_cap(uint32_t cap) const { return (dev_->info().caps & cap) != 0; }

  // A tensor of n bytes (I8-like: F32 elements) placed at byte `offset` of b.
  loom_tensor_t placed(const Buffer& b, size_t offset, size_t n) {
    loom_tensor_t t{};
    t.struct_size = sizeof(t);
    t.op = LOOM_OP_NONE;
    t.type = LOOM_TYPE_F32;
    t.ne[0] = static_cast<int64_t>(n / 4);
    t.ne[1] = t.ne[2] = t.ne[3] = 1;
    t.nb[0] = 4;
    t.nb[1] = t.nb[2] = t.nb[3] = n;
    t.buffer = b.raw();
    t.data = static_cast<char*>(b.base()) + offset;
    std::strcpy(t.name, "abi");
    return t;
  }
};

LOOM_CASE(Abi, Negotiation) {
  LOOM_ASSERT_TRUE(candidate_ != nullptr) << "no registry record for " << dev_->name();
  const uint32_t v = candidate_->abi_version;
  LOOM_EXPECT_EQ(LOOM_ABI_MAJOR(v), LOOM_ABI_VERSION_MAJOR)
      << "the plugin was built for ABI " << LOOM_ABI_MAJOR(v) << "." << LOOM_ABI_MINOR(v);
  LOOM_EXPECT_TRUE(candidate_->fate == registry::Fate::kReady) << candidate_->reason;
  LOOM_EXPECT_EQ(candidate_->plugin, dev_->info().plugin) << "the plugin's name must be the <name> of its file name";
  LOOM_EXPECT_GE(candidate_->device_count, 1u);
}

// Rule 3: every handle and table starts with struct_size covering at least
// what this major defines (nothing was appended to them since 1.0).
LOOM_CASE(Abi, StructSizes) {
  LOOM_EXPECT_GE(raw()->struct_size, sizeof(loom_device_t));
  LOOM_EXPECT_GE(raw()->iface->struct_size, sizeof(loom_device_iface_t));
  loom_buffer_type_t* bt = dev_->buffer_type();
  LOOM_ASSERT_TRUE(bt != nullptr) << "device.buffer_type returned NULL";
  LOOM_EXPECT_GE(bt->struct_size, sizeof(loom_buffer_type_t));
  LOOM_EXPECT_GE(bt->iface->struct_size, sizeof(loom_buffer_type_iface_t));
  LOOM_EXPECT_TRUE(bt->device == raw()) << "the buffer type's device is not the device";
  Buffer b = unwrap(dev_->alloc_buffer(256), "alloc 256");
  LOOM_EXPECT_GE(b.raw()->struct_size, sizeof(loom_buffer_t));
  LOOM_EXPECT_GE(b.raw()->iface->struct_size, sizeof(loom_buffer_iface_t));
  LOOM_EXPECT_EQ(b.raw()->size, 256u);
  LOOM_EXPECT_TRUE(b.raw()->buffer_type == bt);
  Stream s = unwrap(dev_->create_stream(), "stream");
  LOOM_EXPECT_GE(s.raw()->struct_size, sizeof(loom_stream_t));
  LOOM_EXPECT_GE(s.raw()->iface->struct_size, sizeof(loom_stream_iface_t));
  LOOM_EXPECT_TRUE(s.raw()->device == raw());
  if (dev_->has_events()) {
    Event e = unwrap(dev_->create_event(), "event");
    LOOM_EXPECT_GE(e.raw()->struct_size, sizeof(loom_event_t));
    LOOM_EXPECT_GE(e.raw()->iface->struct_size, sizeof(loom_event_iface_t));
  }
  // Rule 4: a host that knows only the first fields gets only those written.
  loom_device_props_t p;
  std::memset(&p, 0xAB, sizeof(p));
  p.struct_size = LOOM_STRUCT_END(loom_device_props_t, description);
  Status st = status_from_abi(raw()->iface->get_props(raw(), &p));
  LOOM_EXPECT_OK(st);
  LOOM_EXPECT_EQ(p.type, static_cast<int32_t>(0xABABABAB)) << "get_props wrote past the struct_size the host set";
  LOOM_EXPECT_TRUE(p.name != nullptr && std::strcmp(p.name, dev_->name().c_str()) == 0);
}

// Rule 11: required entries are non-NULL; capabilities promise their entries.
LOOM_CASE(Abi, MandatoryEntries) {
  const loom_device_iface_t* d = raw()->iface;
  LOOM_EXPECT_TRUE(d->get_props != nullptr);
  LOOM_EXPECT_TRUE(d->buffer_type != nullptr);
  LOOM_EXPECT_TRUE(d->supports_op != nullptr);
  LOOM_EXPECT_TRUE(d->supports_buffer_type != nullptr);
  LOOM_EXPECT_TRUE(d->stream_create != nullptr);
  const loom_buffer_type_iface_t* t = dev_->buffer_type()->iface;
  LOOM_EXPECT_TRUE(t->name != nullptr && t->alloc != nullptr && t->alignment != nullptr && t->is_host != nullptr);
  Buffer b = unwrap(dev_->alloc_buffer(64), "alloc 64");
  const loom_buffer_iface_t* bi = b.raw()->iface;
  LOOM_EXPECT_TRUE(bi->free != nullptr && bi->base != nullptr && bi->set_tensor != nullptr &&
                   bi->get_tensor != nullptr && bi->clear != nullptr);
  Stream s = unwrap(dev_->create_stream(), "stream");
  const loom_stream_iface_t* si = s.raw()->iface;
  LOOM_EXPECT_TRUE(si->destroy != nullptr && si->compute != nullptr && si->synchronize != nullptr);
  LOOM_EXPECT_EQ(si->set_tensor_async == nullptr, si->get_tensor_async == nullptr)
      << "queued copies come in pairs";
  if (has_cap(LOOM_DEVICE_CAP_EVENTS)) {
    LOOM_EXPECT_TRUE(d->event_create != nullptr) << "LOOM_DEVICE_CAP_EVENTS without event_create";
    LOOM_EXPECT_TRUE(si->record_event != nullptr && si->wait_event != nullptr)
        << "LOOM_DEVICE_CAP_EVENTS without record_event/wait_event";
  }
  if (has_cap(LOOM_DEVICE_CAP_HOST_BUFFER)) {
    LOOM_EXPECT_TRUE(d->host_buffer_type != nullptr);
  }
  if (has_cap(LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR)) {
    LOOM_EXPECT_TRUE(d->buffer_from_host_ptr != nullptr);
  }
  LOOM_EXPECT_TRUE(dev_->supports_buffer_type(dev_->buffer_type())) << "a device reads its own buffer type";
}

// Optional entries the plugin leaves NULL: the host's fallback (what the
// header promises) works through the registry's wrappers.
LOOM_CASE(Abi, OptionalEntriesAbsent) {
  const loom_device_iface_t* d = raw()->iface;
  if (d->event_create == nullptr) {
    LOOM_EXPECT_FALSE(dev_->has_events());
    auto e = dev_->create_event();
    LOOM_EXPECT_EQ(e.status().code(), StatusCode::kUnimplemented) << e.status().to_string();
  }
  if (d->get_extension == nullptr) {
    LOOM_EXPECT_TRUE(dev_->extension(LOOM_EXT_THREADS, 1) == nullptr);
  }
  if (d->buffer_from_host_ptr == nullptr) {
    std::vector<uint8_t> host(64);
    auto b = dev_->buffer_from_host_ptr(host.data(), host.size());
    LOOM_EXPECT_EQ(b.status().code(), StatusCode::kUnimplemented) << b.status().to_string();
  }
  loom_buffer_type_t* bt = dev_->buffer_type();
  Tensor* t = unwrap(ctx_.new_tensor(LOOM_TYPE_F32, {7, 3}, "t"), "new_tensor");
  const size_t need = unwrap(registry::buffer_type_alloc_size(bt, t), "alloc_size");
  if (bt->iface->alloc_size == nullptr) {
    LOOM_EXPECT_EQ(need, t->nbytes());
  }
  LOOM_EXPECT_GE(need, t->nbytes()) << "alloc_size smaller than the tensor";
  Buffer a = unwrap(dev_->alloc_buffer(64), "alloc");
  Buffer b = unwrap(dev_->alloc_buffer(64), "alloc");
  loom_tensor_t ta = placed(a, 0, 64), tb = placed(b, 0, 64);
  if (a.raw()->iface->init_tensor == nullptr) {
    LOOM_EXPECT_OK(registry::buffer_init_tensor(a.raw(), &ta));
  }
  if (b.raw()->iface->copy_tensor == nullptr) {
    LOOM_EXPECT_EQ(registry::buffer_copy_tensor(b.raw(), &ta, &tb).code(), StatusCode::kUnimplemented);
  }
  Stream s = unwrap(dev_->create_stream(), "stream");
  if (!s.has_set_async()) {
    const float v = 1.0f;
    LOOM_EXPECT_EQ(s.set_tensor_async(&ta, &v, 0, 4).code(), StatusCode::kUnimplemented);
  }
}

LOOM_CASE(Abi, Buffers) {
  loom_buffer_type_t* bt = dev_->buffer_type();
  const size_t align = unwrap(registry::buffer_type_alignment(bt), "alignment");
  LOOM_EXPECT_TRUE(align != 0 && (align & (align - 1)) == 0) << "alignment " << align << " is not a power of two";
  Buffer empty = unwrap(dev_->alloc_buffer(0), "alloc 0");
  LOOM_EXPECT_EQ(empty.size(), 0u);
  for (size_t size : {size_t{1}, size_t{100}, size_t{4096 + 12}}) {
    LOOM_TRACE("buffer of " + std::to_string(size) + " bytes");
    Buffer b = unwrap(dev_->alloc_buffer(size), "alloc");
    LOOM_ASSERT_TRUE(b.base() != nullptr) << "base() is NULL for a buffer of size > 0";
    LOOM_EXPECT_EQ(reinterpret_cast<uintptr_t>(b.base()) % align, 0u) << "base not aligned to " << align;
  }
  // set/get at offsets of a tensor placed inside a buffer, clear, copy.
  const size_t n = 1024;
  Buffer b = unwrap(dev_->alloc_buffer(n + 2 * align), "alloc");
  LOOM_ASSERT_OK(b.clear(0x5A));
  loom_tensor_t t = placed(b, align, n);
  LOOM_EXPECT_OK(registry::buffer_init_tensor(b.raw(), &t));
  std::vector<uint8_t> got(n), want(n, 0x5A);
  LOOM_ASSERT_OK(registry::buffer_get_tensor(b.raw(), &t, got.data(), 0, n));
  LOOM_EXPECT_EQ(got, want) << "clear(0x5A) then get_tensor";
  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i * 7 + 3);
  LOOM_ASSERT_OK(registry::buffer_set_tensor(b.raw(), &t, data.data() + 12, 12, 500));
  for (size_t i = 12; i < 512; ++i) want[i] = data[i];
  LOOM_ASSERT_OK(registry::buffer_get_tensor(b.raw(), &t, got.data(), 0, n));
  LOOM_EXPECT_EQ(got, want) << "set_tensor of 500 bytes at offset 12";
  std::vector<uint8_t> part(100);
  LOOM_ASSERT_OK(registry::buffer_get_tensor(b.raw(), &t, part.data(), 40, 100));
  LOOM_EXPECT_TRUE(std::equal(part.begin(), part.end(), want.begin() + 40)) << "get_tensor at offset 40";
  // Past the end of the tensor or its buffer: the host refuses before the
  // plugin sees the call (host rule 19), so a plugin may trust its ranges.
  Status st = registry::buffer_set_tensor(b.raw(), &t, data.data(), n + align, 64);
  LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "set_tensor past the end: " << st.to_string();
  st = registry::buffer_get_tensor(b.raw(), &t, got.data(), SIZE_MAX - 8, 64);
  LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "get_tensor with an overflowing range: " << st.to_string();
  loom_tensor_t outside = placed(b, n + align, n);  // runs past the buffer's end
  st = registry::buffer_set_tensor(b.raw(), &outside, data.data(), 0, 16);
  LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "a tensor outside its buffer: " << st.to_string();
  // copy_tensor (when present): OK and a copy, or UNIMPLEMENTED.
  Buffer c = unwrap(dev_->alloc_buffer(n), "alloc");
  loom_tensor_t tc = placed(c, 0, n);
  Status cp = registry::buffer_copy_tensor(c.raw(), &t, &tc);
  if (cp.ok()) {
    LOOM_ASSERT_OK(registry::buffer_get_tensor(c.raw(), &tc, got.data(), 0, n));
    LOOM_EXPECT_EQ(got, want) << "copy_tensor between two buffers of the device";
  } else {
    LOOM_EXPECT_EQ(cp.code(), StatusCode::kUnimplemented) << cp.to_string();
  }
  LOOM_ASSERT_OK(c.clear(0));
  LOOM_ASSERT_OK(registry::buffer_get_tensor(c.raw(), &tc, got.data(), 0, n));
  LOOM_EXPECT_EQ(got, std::vector<uint8_t>(n, 0)) << "clear(0)";
  // Out of memory is RESOURCE_EXHAUSTED naming the size.
  auto huge = dev_->alloc_buffer(size_t{1} << 62);
  LOOM_ASSERT_FALSE(huge.ok()) << "a 2^62-byte allocation succeeded";
  LOOM_EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted) << huge.status().to_string();
}

LOOM_CASE(Abi, StreamsAndEvents) {
  Stream s1 = unwrap(dev_->create_stream(), "stream");
  Stream s2 = unwrap(dev_->create_stream(), "second stream");
  loom_graph_t empty{sizeof(loom_graph_t), 0, nullptr, 0};
  LOOM_EXPECT_OK(s1.compute(empty));
  LOOM_EXPECT_OK(s1.synchronize());
  LOOM_EXPECT_OK(s2.synchronize());
  if (s1.has_set_async()) {
    Buffer b = unwrap(dev_->alloc_buffer(256), "alloc");
    loom_tensor_t t = placed(b, 0, 256);
    std::vector<uint8_t> in(256), out(256);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(255 - i);
    LOOM_EXPECT_OK(s1.set_tensor_async(&t, in.data(), 0, 256));
    LOOM_EXPECT_OK(s1.get_tensor_async(&t, out.data(), 0, 256));
    LOOM_EXPECT_OK(s1.synchronize());
    LOOM_EXPECT_EQ(out, in) << "queued set then get";
  }
  if (!dev_->has_events()) return;
  Event e = unwrap(dev_->create_event(), "event");
  LOOM_EXPECT_OK(e.synchronize());  // never recorded: returns at once
  LOOM_EXPECT_OK(s1.record_event(e.raw()));
  LOOM_EXPECT_OK(s2.wait_event(e.raw()));
  LOOM_EXPECT_OK(e.synchronize());
  LOOM_EXPECT_OK(s2.synchronize());
}

}  // namespace
}  // namespace loom::conformance
