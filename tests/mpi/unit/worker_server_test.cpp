// `loom worker`'s request handling without mpirun: every request kind
// against the real cpu device, and malformed requests (short, foreign,
// another version, bad ids, offsets, sizes, sources, op parameters) each
// answered with an error reply while the server keeps serving.
#include "worker_fixture.hpp"

namespace {

using namespace loom_test_worker;  // NOLINT: the fixture and its helpers

TEST_F(WorkerServerTest, HelloListsTheDevices) {
  wire::Writer w(wire::Kind::kHello, kVersion);
  Reply r = send(w);
  ASSERT_TRUE(r.ok()) << r.message;
  wire::Reader rd(r.payload.data(), r.payload.size());
  EXPECT_EQ(rd.str(256), "testhost");
  EXPECT_EQ(rd.u32(), 1u);
  EXPECT_EQ(rd.str(64), "cpu");
}

TEST_F(WorkerServerTest, SetGetAndAGraphRun) {
  const uint64_t b = alloc(3 * 64);
  const wire::WireTensor a = f32(4, b, 0, "a"), c = f32(4, b, 64, "c");
  ASSERT_TRUE(set(a, 0, {1, 2, 3, 4}).ok());
  ASSERT_TRUE(set(c, 0, {10, 20, 30, 40}).ok());
  // sum = a + c at offset 128
  wire::WireTensor sum = f32(4, b, 128, "sum");
  sum.op = LOOM_OP_ADD;
  sum.src[0] = 0;
  sum.src[1] = 1;
  wire::Writer g(wire::Kind::kGraph, kVersion);
  g.u32(0);
  g.u64(42);
  g.u32(3);
  wire::write_tensor(g, a);
  wire::write_tensor(g, c);
  wire::write_tensor(g, sum);
  g.u32(1);
  g.i32(2);
  Reply gr = send(g);
  ASSERT_TRUE(gr.ok()) << gr.message;
  wire::Writer run(wire::Kind::kRun, kVersion);
  run.u32(0);
  run.u64(42);
  run.u32(0);  // no queued writes
  Reply rr = send(run);
  ASSERT_TRUE(rr.ok()) << rr.message;
  ASSERT_EQ(rr.payload.size(), 4u);
  EXPECT_EQ(rr.payload[0], 1);  // ran
  wire::Writer get(wire::Kind::kGet, kVersion);
  wire::write_tensor(get, sum);
  get.u64(0);
  get.u64(16);
  Reply got = send(get);
  ASSERT_TRUE(got.ok()) << got.message;
  ASSERT_EQ(got.payload.size(), 16u);
  float v[4];
  std::memcpy(v, got.payload.data(), 16);
  EXPECT_EQ(v[0], 11);
  EXPECT_EQ(v[3], 44);
}

TEST_F(WorkerServerTest, AnUnknownGraphKeyIsNotRunAndSaysSo) {
  wire::Writer run(wire::Kind::kRun, kVersion);
  run.u32(0);
  run.u64(7);
  run.u32(0);
  Reply r = send(run);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.payload[0], 0);  // rank 0 then sends the graph again
}

TEST_F(WorkerServerTest, MalformedHeadersAreRefused) {
  Reply r = send_bytes({1, 2, 3});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("shorter than the 32-byte header"), std::string::npos) << r.message;
  wire::Writer foreign(wire::Kind::kHello, kVersion);
  foreign.data()[0] ^= 0xFF;
  r = send(foreign);
  EXPECT_NE(r.message.find("bad magic"), std::string::npos) << r.message;
  wire::Writer other(wire::Kind::kHello, "0.0.1-old");
  r = send(other);
  EXPECT_EQ(r.code, static_cast<uint32_t>(LOOM_STATUS_INCOMPATIBLE));
  EXPECT_NE(r.message.find("loom 0.0.1-old"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(kVersion), std::string::npos) << r.message;
  wire::Writer unknown(static_cast<wire::Kind>(77), kVersion);
  r = send(unknown);
  EXPECT_NE(r.message.find("unknown request kind 77"), std::string::npos) << r.message;
  expect_still_serving();
}

TEST_F(WorkerServerTest, BadBuffersOffsetsAndSizesAreRefused) {
  const uint64_t b = alloc(64);
  Reply r = set(f32(4, b + 100, 0, "x"), 0, {1, 2, 3, 4});
  EXPECT_NE(r.message.find("is not a buffer of this device"), std::string::npos) << r.message;
  r = set(f32(4, b, 1u << 30, "x"), 0, {1, 2, 3, 4});
  EXPECT_NE(r.message.find("past the buffer"), std::string::npos) << r.message;
  r = set(f32(16, b, 32, "x"), 0, {1});  // 64 bytes at 32 in a 64-byte buffer
  EXPECT_NE(r.message.find("do not fit the buffer"), std::string::npos) << r.message;
  r = set(f32(4, b, 0, "x"), 8, {1, 2, 3});  // 12 bytes at 8 of a 16-byte tensor
  EXPECT_FALSE(r.ok());
  r = set(f32(4, b, 0, "x"), 0, {1, 2}, 16);  // claims 16 bytes, carries 8
  EXPECT_NE(r.message.find("ends early"), std::string::npos) << r.message;
  wire::Writer a(wire::Kind::kAlloc, kVersion);
  a.u32(5);
  a.u64(64);
  r = send(a);
  EXPECT_NE(r.message.find("device index 5"), std::string::npos) << r.message;
  wire::Writer extra(wire::Kind::kFree, kVersion);
  extra.u64(b);
  extra.u32(0);
  r = send(extra);
  EXPECT_NE(r.message.find("left over"), std::string::npos) << r.message;
  expect_still_serving();
}

TEST_F(WorkerServerTest, BadGraphsAreRefused) {
  const uint64_t b = alloc(256);
  auto graph = [&](std::vector<wire::WireTensor> ts, uint32_t claimed = 0) {
    wire::Writer g(wire::Kind::kGraph, kVersion);
    g.u32(0);
    g.u64(9);
    g.u32(claimed ? claimed : static_cast<uint32_t>(ts.size()));
    for (const auto& t : ts) wire::write_tensor(g, t);
    g.u32(1);
    g.i32(static_cast<int32_t>(ts.size()) - 1);
    return send(g);
  };
  wire::Writer run(wire::Kind::kRun, kVersion);
  wire::WireTensor x = f32(4, b, 0, "x");
  wire::WireTensor y = f32(4, b, 64, "y");
  y.op = LOOM_OP_ADD;
  y.src[0] = 0;
  y.src[1] = 1;  // itself: not sent before it
  Reply r = graph({x, y});
  EXPECT_NE(r.message.find("not one sent before it"), std::string::npos) << r.message;
  y.src[1] = 0;
  y.op = 999;
  r = graph({x, y});
  EXPECT_NE(r.message.find("op id 999"), std::string::npos) << r.message;
  wire::WireTensor w8 = f32(8, b, 128, "w8");
  wire::WireTensor mm = f32(4, b, 192, "mm");
  mm.op = LOOM_OP_MUL_MAT;
  mm.src[0] = 0;  // K = 4
  mm.src[1] = 1;  // K = 8: the rule refuses
  r = graph({x, w8, mm});
  EXPECT_NE(r.message.find("not well-formed"), std::string::npos) << r.message;
  r = graph({x}, 1u << 30);
  EXPECT_NE(r.message.find("do not fit"), std::string::npos) << r.message;
  wire::WireTensor badtype = f32(4, b, 0, "t");
  badtype.type = 5;  // a hole in the type ids
  r = graph({badtype});
  EXPECT_NE(r.message.find("type 5"), std::string::npos) << r.message;
  EXPECT_EQ(server_->cached_graphs(), 0u);
  expect_still_serving();
}

TEST_F(WorkerServerTest, SupportsAsksTheDeviceAndRefusesBuffers) {
  auto ask = [&](wire::WireTensor node, uint64_t src_buffer) {
    wire::Writer q(wire::Kind::kSupports, kVersion);
    q.u32(0);
    q.u32(3);
    wire::write_tensor(q, f32(4, src_buffer, 0, ""));
    wire::write_tensor(q, f32(4, 0, 0, ""));
    wire::write_tensor(q, node);
    return send(q);
  };
  wire::WireTensor add = f32(4, 0, 0, "");
  add.op = LOOM_OP_ADD;
  add.src[0] = 0;
  add.src[1] = 1;
  Reply r = ask(add, 0);
  ASSERT_TRUE(r.ok()) << r.message;
  ASSERT_EQ(r.payload.size(), 12u);
  EXPECT_EQ(r.payload[0], 1);
  double us = -1;
  std::memcpy(&us, r.payload.data() + 4, 8);
  EXPECT_GT(us, 0.0);  // the cpu device's loom.cost estimate travels with the answer
  r = ask(add, 3);
  EXPECT_NE(r.message.find("in a query that has none"), std::string::npos) << r.message;
  expect_still_serving();
}

TEST_F(WorkerServerTest, AnImpossibleAllocationIsAnErrorNotACrash) {
  wire::Writer a(wire::Kind::kAlloc, kVersion);
  a.u32(0);
  a.u64(uint64_t{1} << 62);
  Reply r = send(a);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("exceed its memory"), std::string::npos) << r.message;
  expect_still_serving();
}

TEST_F(WorkerServerTest, ShutdownEndsTheLoop) {
  wire::Writer w(wire::Kind::kShutdown, kVersion);
  std::vector<uint8_t> out;
  EXPECT_FALSE(server_->handle(w.data().data(), w.data().size(), &out));
}

}  // namespace
