// A remote stream's queue on the worker: batches of writes and reads, and
// the writes a run carries (its step inputs), done in order; every item
// checked like a single set/get before any is done, so a malformed batch
// (bad buffer, range, op, count, cut short, a read inside a run) is an
// error reply that changes nothing while the server keeps serving. And
// loom.threads forwarded to the device, and a device's memory as it is now.
#include <cstdlib>

#include "worker_fixture.hpp"

namespace {

using namespace loom_test_worker;  // NOLINT: the fixture and its helpers

class WorkerBatchTest : public WorkerServerTest {
 protected:
  static void put(wire::Writer& w, const wire::WireTensor& t, uint64_t offset, const std::vector<float>& v) {
    wire::write_access(w, wire::Access::kWrite, t, offset, v.size() * 4, v.data());
  }
  static void ask(wire::Writer& w, const wire::WireTensor& t, uint64_t offset, uint64_t size) {
    wire::write_access(w, wire::Access::kRead, t, offset, size, nullptr);
  }
  std::vector<float> read(const wire::WireTensor& t, size_t n) {
    wire::Writer b(wire::Kind::kBatch, kVersion);
    b.u32(1);
    ask(b, t, 0, n * 4);
    Reply r = send(b);
    EXPECT_TRUE(r.ok()) << r.message;
    std::vector<float> v(n);
    if (r.payload.size() == n * 4) std::memcpy(v.data(), r.payload.data(), n * 4);
    return v;
  }
  // a + c -> sum in buffer b, cached under key 42.
  void send_add_graph(uint64_t b) {
    wire::WireTensor sum = f32(4, b, 128, "sum");
    sum.op = LOOM_OP_ADD;
    sum.src[0] = 0;
    sum.src[1] = 1;
    wire::Writer g(wire::Kind::kGraph, kVersion);
    g.u32(0);
    g.u64(42);
    g.u32(3);
    wire::write_tensor(g, f32(4, b, 0, "a"));
    wire::write_tensor(g, f32(4, b, 64, "c"));
    wire::write_tensor(g, sum);
    g.u32(1);
    g.i32(2);
    Reply r = send(g);
    ASSERT_TRUE(r.ok()) << r.message;
  }
};

TEST_F(WorkerBatchTest, ABatchWritesAndReadsInOrder) {
  const uint64_t b = alloc(3 * 64);
  const wire::WireTensor a = f32(4, b, 0, "a"), c = f32(4, b, 64, "c");
  wire::Writer w(wire::Kind::kBatch, kVersion);
  w.u32(4);
  put(w, a, 0, {1, 2, 3, 4});
  ask(w, a, 4, 8);  // a[1..2] after the write above
  put(w, c, 0, {5, 6, 7, 8});
  ask(w, c, 0, 16);
  Reply r = send(w);
  ASSERT_TRUE(r.ok()) << r.message;
  ASSERT_EQ(r.payload.size(), 24u);
  float v[6];
  std::memcpy(v, r.payload.data(), 24);
  EXPECT_EQ(v[0], 2);
  EXPECT_EQ(v[1], 3);
  EXPECT_EQ(v[2], 5);
  EXPECT_EQ(v[5], 8);
}

TEST_F(WorkerBatchTest, ARunDoesTheWritesItCarriesFirst) {
  const uint64_t b = alloc(3 * 64);
  send_add_graph(b);
  wire::Writer run(wire::Kind::kRun, kVersion);
  run.u32(0);
  run.u64(42);
  run.u32(2);
  put(run, f32(4, b, 0, "a"), 0, {1, 2, 3, 4});
  put(run, f32(4, b, 64, "c"), 0, {10, 20, 30, 40});
  Reply r = send(run);
  ASSERT_TRUE(r.ok()) << r.message;
  ASSERT_EQ(r.payload.size(), 4u);
  EXPECT_EQ(r.payload[0], 1);
  const std::vector<float> sum = read(f32(4, b, 128, "sum"), 4);
  EXPECT_EQ(sum[0], 11);
  EXPECT_EQ(sum[3], 44);
}

TEST_F(WorkerBatchTest, ARunOfAnUnknownKeyStillDoesItsWrites) {
  // Rank 0 then sends the graph and a run without writes.
  const uint64_t b = alloc(64);
  wire::Writer run(wire::Kind::kRun, kVersion);
  run.u32(0);
  run.u64(7);
  run.u32(1);
  put(run, f32(4, b, 0, "a"), 0, {9, 8, 7, 6});
  Reply r = send(run);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.payload[0], 0);
  EXPECT_EQ(read(f32(4, b, 0, "a"), 4)[0], 9);
}

TEST_F(WorkerBatchTest, AMalformedBatchIsRefusedWholeAndChangesNothing) {
  const uint64_t b = alloc(64);
  const wire::WireTensor a = f32(4, b, 0, "a");
  wire::Writer init(wire::Kind::kBatch, kVersion);
  init.u32(1);
  put(init, a, 0, {1, 1, 1, 1});
  ASSERT_TRUE(send(init).ok());
  // A good write, then a bad item: the good one must not be done either.
  auto with_bad = [&](auto bad) {
    wire::Writer w(wire::Kind::kBatch, kVersion);
    w.u32(2);
    put(w, a, 0, {5, 5, 5, 5});
    bad(w);
    Reply r = send(w);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(read(a, 4)[0], 1) << "a refused batch wrote its first item";
    return r;
  };
  Reply r = with_bad([&](wire::Writer& w) { put(w, f32(4, b + 9, 0, "x"), 0, {1, 2, 3, 4}); });
  EXPECT_NE(r.message.find("item 1 of 2"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("is not a buffer of this device"), std::string::npos) << r.message;
  r = with_bad([&](wire::Writer& w) { ask(w, a, 8, 12); });  // 12 bytes at 8 of a 16-byte tensor
  EXPECT_NE(r.message.find("item 1 of 2"), std::string::npos) << r.message;
  r = with_bad([&](wire::Writer& w) { ask(w, f32(16, b, 32, "x"), 0, 4); });  // past the 64-byte buffer
  EXPECT_NE(r.message.find("do not fit the buffer"), std::string::npos) << r.message;
  r = with_bad([&](wire::Writer& w) { put(w, f32(4, b, 1u << 30, "x"), 0, {1}); });
  EXPECT_NE(r.message.find("past the buffer"), std::string::npos) << r.message;
  r = with_bad([&](wire::Writer& w) {  // an op that is neither write nor read
    wire::write_access(w, static_cast<wire::Access>(3), a, 0, 4, nullptr);
  });
  EXPECT_NE(r.message.find("malformed or cut short"), std::string::npos) << r.message;
  r = with_bad([&](wire::Writer& w) {  // a write that claims 16 bytes and carries 4
    w.u32(static_cast<uint32_t>(wire::Access::kWrite));
    wire::write_tensor(w, a);
    w.u64(0);
    w.u64(16);
    w.u32(0);
  });
  EXPECT_NE(r.message.find("cut short"), std::string::npos) << r.message;
  wire::Writer extra(wire::Kind::kBatch, kVersion);
  extra.u32(1);
  put(extra, a, 0, {5, 5, 5, 5});
  extra.u32(0);  // bytes left over after the one item
  r = send(extra);
  EXPECT_NE(r.message.find("left over"), std::string::npos) << r.message;
  EXPECT_EQ(read(a, 4)[0], 1);
  expect_still_serving();
}

TEST_F(WorkerBatchTest, CountsAndSizesAreBoundedBeforeAnythingIsAllocated) {
  const uint64_t b = alloc(64);
  wire::Writer many(wire::Kind::kBatch, kVersion);
  many.u32(0xFFFFFFFFu);
  put(many, f32(4, b, 0, "a"), 0, {1, 2, 3, 4});
  Reply r = send(many);
  EXPECT_NE(r.message.find("items do not fit"), std::string::npos) << r.message;
  wire::Writer none(wire::Kind::kBatch, kVersion);
  none.u32(0);
  r = send(none);
  EXPECT_NE(r.message.find("no items"), std::string::npos) << r.message;
  wire::Writer empty(wire::Kind::kBatch, kVersion);
  r = send(empty);
  EXPECT_NE(r.message.find("before the item count"), std::string::npos) << r.message;
  // A run may carry writes only: a read there has nowhere to go.
  wire::Writer run(wire::Kind::kRun, kVersion);
  run.u32(0);
  run.u64(42);
  run.u32(1);
  ask(run, f32(4, b, 0, "a"), 0, 16);
  r = send(run);
  EXPECT_NE(r.message.find("only writes"), std::string::npos) << r.message;
  // A run's bad write is refused before the graph would run.
  wire::Writer bad(wire::Kind::kRun, kVersion);
  bad.u32(0);
  bad.u64(42);
  bad.u32(1);
  put(bad, f32(4, b, 60, "a"), 0, {1, 2, 3, 4});  // 16 bytes at 60 of a 64-byte buffer
  r = send(bad);
  EXPECT_NE(r.message.find("[worker.run] item 0 of 1"), std::string::npos) << r.message;
  expect_still_serving();
}

TEST_F(WorkerBatchTest, ThreadsAreSetOnTheDevice) {
  const int before = cpu_->threads();
  ASSERT_GE(before, 1) << "the cpu device offers loom.threads";
  wire::Writer set(wire::Kind::kThreads, kVersion);
  set.u32(0);
  set.i32(1);
  Reply r = send(set);
  ASSERT_TRUE(r.ok()) << r.message;
  ASSERT_EQ(r.payload.size(), 4u);
  EXPECT_EQ(r.payload[0], 1);
  EXPECT_EQ(cpu_->threads(), 1);
  wire::Writer bad(wire::Kind::kThreads, kVersion);
  bad.u32(3);
  bad.i32(1);
  r = send(bad);
  EXPECT_NE(r.message.find("device index 3"), std::string::npos) << r.message;
  wire::Writer neg(wire::Kind::kThreads, kVersion);
  neg.u32(0);
  neg.i32(-2);
  r = send(neg);
  EXPECT_FALSE(r.ok());
  ASSERT_TRUE(cpu_->set_threads(before).ok());
  expect_still_serving();
}

// "memory" answers what the device says now, not what it said at hello:
// on a simulated device of 1 MiB, a 256 KiB buffer takes 256 KiB off the
// free figure, and freeing it gives them back (what rank 0's fit reads).
TEST_F(WorkerBatchTest, MemoryIsTheDevicesNow) {
  // The fixture's server, over the simulated device instead of the cpu.
  server_.reset();
  setenv("LOOM_SIM_DEVICES", "1", 1);
  setenv("LOOM_SIM_MEMORY_0", "1048576", 1);
  reg_ = load_registry(LOOM_TEST_SIM_DIR);
  unsetenv("LOOM_SIM_MEMORY_0");
  unsetenv("LOOM_SIM_DEVICES");
  loom::registry::Device* sim = reg_->device("sim0");
  ASSERT_NE(sim, nullptr) << "the sim plugin in " << LOOM_TEST_SIM_DIR;
  server_ = std::make_unique<WorkerServer>(std::vector<loom::registry::Device*>{sim}, kVersion, 1, "testhost");
  auto memory = [&](uint32_t dev) {
    wire::Writer w(wire::Kind::kMemory, kVersion);
    w.u32(dev);
    return send(w);
  };
  auto free_bytes = [&]() -> uint64_t {
    Reply r = memory(0);
    EXPECT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(r.payload.size(), 16u);
    uint64_t v[2] = {0, 0};
    if (r.payload.size() == 16) std::memcpy(v, r.payload.data(), 16);
    EXPECT_EQ(v[0], 1048576u) << "total";
    return v[1];
  };
  const uint64_t before = free_bytes();
  EXPECT_EQ(before, 1048576u);
  const uint64_t id = alloc(262144);
  EXPECT_EQ(free_bytes(), before - 262144);
  wire::Writer f(wire::Kind::kFree, kVersion);
  f.u64(id);
  EXPECT_TRUE(send(f).ok());
  EXPECT_EQ(free_bytes(), before);
  // A device index it does not have, or bytes past the index: errors.
  EXPECT_NE(memory(2).message.find("device index 2"), std::string::npos);
  wire::Writer longer(wire::Kind::kMemory, kVersion);
  longer.u32(0);
  longer.u32(0);
  EXPECT_FALSE(send(longer).ok());
  expect_still_serving();
}

}  // namespace
