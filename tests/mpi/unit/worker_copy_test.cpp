// Rank to rank copies on the worker (a copies request: send, receive and
// local items) without mpirun: two WorkerServers (ranks 1 and 2 of a
// 3-rank job) joined by an in-memory PeerLink. The bytes go from one
// server's buffer to the other's; every malformed item (an op that is not
// one, a rank that is not another worker, an unknown buffer, a range
// outside the tensor, a bad size, tag or wait, a request cut short or too
// long) refuses the whole request with an error reply naming the item,
// moves nothing, and the server keeps serving; a refused request still
// settles the other side of each good item (an empty message to a
// receiver, or the sender's message taken and dropped).
#include <deque>
#include <map>
#include <tuple>

#include "worker_fixture.hpp"

namespace {

using namespace loom_test_worker;  // NOLINT: the fixture and its helpers
using loom::Status;
using loom::cli::worker::Transfer;

// Messages by (from, to, tag); what the links were asked to drop.
struct Mailbox {
  std::map<std::tuple<int, int, int>, std::deque<std::vector<uint8_t>>> queued;
  int discarded = 0;
  size_t pending(int from, int to, int tag) {
    auto it = queued.find({from, to, tag});
    return it == queued.end() ? 0 : it->second.size();
  }
};

// Sends land in the mailbox; receives take what an earlier request of the
// other server sent (the tests order them so).
class FakeLink : public loom::cli::worker::PeerLink {
 public:
  FakeLink(Mailbox* box, int rank) : box_(box), rank_(rank) {}
  int world_size() const override { return 3; }
  void exchange(std::vector<Transfer>* transfers) override {
    for (Transfer& t : *transfers) {
      if (t.send) {
        box_->queued[{rank_, t.peer, t.tag}].push_back(t.bytes);
        continue;
      }
      auto& q = box_->queued[{t.peer, rank_, t.tag}];
      if (q.empty()) {
        t.status = loom::unavailable("fake link: nothing from rank " + std::to_string(t.peer));
      } else if (q.front().size() > t.bytes.size()) {
        t.status = loom::unavailable("fake link: message too long");
        q.pop_front();
      } else {
        if (!q.front().empty()) std::memcpy(t.bytes.data(), q.front().data(), q.front().size());  // a "refused" note is empty
        t.got = q.front().size();
        q.pop_front();
      }
    }
  }
  void discard(int from, int tag, double) override {
    auto& q = box_->queued[{from, rank_, tag}];
    if (!q.empty()) q.pop_front();
    ++box_->discarded;
  }

 private:
  Mailbox* box_;
  int rank_;
};

constexpr uint32_t kTag = wire::kMpiCopyTagBase + 5;

wire::WireCopy side(wire::CopyOp op, int peer, const wire::WireTensor& t, uint64_t offset, uint64_t size,
                    uint32_t tag = kTag, uint32_t wait_ms = 1000) {
  wire::WireCopy c;
  c.op = static_cast<uint32_t>(op);
  c.peer = peer;
  c.tag = tag;
  c.wait_ms = wait_ms;
  c.tensor = t;
  c.offset = offset;
  c.size = size;
  return c;
}

wire::WireCopy local(const wire::WireTensor& dst, const wire::WireTensor& src, uint64_t offset, uint64_t size) {
  wire::WireCopy c = side(wire::CopyOp::kLocal, 0, dst, offset, size, 0, 0);
  c.src = src;
  return c;
}

wire::Writer request(const std::vector<wire::WireCopy>& items) {
  wire::Writer w(wire::Kind::kCopies, kVersion);
  w.u32(static_cast<uint32_t>(items.size()));
  for (const auto& c : items) wire::write_copy(w, c);
  return w;
}

class WorkerCopyTest : public WorkerServerTest {
 protected:
  void SetUp() override {
    WorkerServerTest::SetUp();
    link1_ = std::make_unique<FakeLink>(&box_, 1);
    link2_ = std::make_unique<FakeLink>(&box_, 2);
    server_->set_peer_link(link1_.get());
    rank2_ = std::make_unique<WorkerServer>(std::vector<loom::registry::Device*>{cpu_}, kVersion, 2, "testhost");
    rank2_->set_peer_link(link2_.get());
  }
  void TearDown() override {
    rank2_.reset();
    WorkerServerTest::TearDown();
  }

  // The request on rank 2's server instead of rank 1's.
  Reply on_rank2(wire::Writer& w) {
    std::swap(server_, rank2_);
    Reply r = send(w);
    std::swap(server_, rank2_);
    return r;
  }
  uint64_t alloc_rank2(uint64_t size) {
    std::swap(server_, rank2_);
    const uint64_t id = alloc(size);
    std::swap(server_, rank2_);
    return id;
  }
  std::vector<float> get(const wire::WireTensor& t, size_t n, bool rank2) {
    wire::Writer w(wire::Kind::kGet, kVersion);
    wire::write_tensor(w, t);
    w.u64(0);
    w.u64(n * 4);
    Reply r = rank2 ? on_rank2(w) : send(w);
    EXPECT_TRUE(r.ok()) << r.message;
    std::vector<float> v(n);
    if (r.payload.size() == n * 4) std::memcpy(v.data(), r.payload.data(), n * 4);
    return v;
  }
  // An INVALID_ARGUMENT reply whose message holds `what`, then a good request answered.
  void expect_refused(wire::Writer w, const std::string& what) {
    Reply r = send(w);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.code, static_cast<uint32_t>(LOOM_STATUS_INVALID_ARGUMENT)) << r.message;
    EXPECT_NE(r.message.find(what), std::string::npos) << r.message;
    expect_still_serving();
  }

  Mailbox box_;
  std::unique_ptr<FakeLink> link1_, link2_;
  std::unique_ptr<WorkerServer> rank2_;
};

TEST_F(WorkerCopyTest, BytesGoFromOneWorkersBufferToTheOthers) {
  const uint64_t b1 = alloc(64);
  ASSERT_TRUE(set(f32(4, b1, 0, "h"), 0, {1, 2, 3, 4}).ok());
  ASSERT_TRUE(set(f32(4, b1, 16, "k"), 0, {5, 6, 7, 8}).ok());
  const uint64_t b2 = alloc_rank2(128);
  // Elements 1..2 of h into h2 (offset 64 in rank 2's buffer), all of k into k2: one request per rank.
  wire::Writer s = request({side(wire::CopyOp::kSend, 2, f32(4, b1, 0, "h"), 4, 8),
                            side(wire::CopyOp::kSend, 2, f32(4, b1, 16, "k"), 0, 16, kTag + 1)});
  Reply sr = send(s);
  ASSERT_TRUE(sr.ok()) << sr.message;
  EXPECT_EQ(box_.pending(1, 2, kTag), 1u);
  wire::Writer rv = request({side(wire::CopyOp::kRecv, 1, f32(4, b2, 64, "h2"), 4, 8),
                             side(wire::CopyOp::kRecv, 1, f32(4, b2, 0, "k2"), 0, 16, kTag + 1)});
  Reply rr = on_rank2(rv);
  ASSERT_TRUE(rr.ok()) << rr.message;
  const std::vector<float> h2 = get(f32(4, b2, 64, "h2"), 4, true);
  EXPECT_EQ(h2[1], 2);
  EXPECT_EQ(h2[2], 3);
  EXPECT_EQ(get(f32(4, b2, 0, "k2"), 4, true), (std::vector<float>{5, 6, 7, 8}));
  // And on one rank: h into g of the same worker.
  wire::Writer l = request({local(f32(4, b1, 32, "g"), f32(4, b1, 0, "h"), 0, 16)});
  Reply lr = send(l);
  ASSERT_TRUE(lr.ok()) << lr.message;
  EXPECT_EQ(get(f32(4, b1, 32, "g"), 4, false), (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(WorkerCopyTest, AMalformedItemRefusesTheRequestAndTheReceiversAreTold) {
  const uint64_t b = alloc(64);
  const wire::WireTensor h = f32(4, b, 0, "h");
  // Ranks that are not another worker, a tag or wait that is not one: nobody can be told.
  for (int peer : {0, 1, 3, -1}) expect_refused(request({side(wire::CopyOp::kSend, peer, h, 0, 16)}), "is not another worker");
  expect_refused(request({side(wire::CopyOp::kSend, 2, h, 0, 16, wire::kMpiTag)}), "is not a copy tag");
  expect_refused(request({side(wire::CopyOp::kSend, 2, h, 0, 16, kTag, 0)}), "wait of 0 ms");
  EXPECT_TRUE(box_.queued.empty());
  // The rank and tag are good: each refused request sends rank 2 one empty message.
  expect_refused(request({side(wire::CopyOp::kSend, 2, f32(4, 999, 0, "h"), 0, 16)}), "buffer 999 is not a buffer");
  expect_refused(request({side(wire::CopyOp::kSend, 2, h, 8, 16)}), "item 0 of 1");
  expect_refused(request({side(wire::CopyOp::kSend, 2, f32(4, b, 60, "h"), 0, 16)}), "do not fit the buffer");
  expect_refused(request({side(wire::CopyOp::kSend, 2, h, 0, 0)}), "copy of 0 bytes");
  expect_refused(request({side(wire::CopyOp::kSend, 2, h, 0, wire::kWireMaxCopyBytes + 1)}), "per item");
  wire::Writer longer = request({side(wire::CopyOp::kSend, 2, h, 0, 16)});
  longer.u32(7);
  expect_refused(std::move(longer), "left over");
  EXPECT_EQ(box_.pending(1, 2, kTag), 6u);
  for (const auto& m : box_.queued[std::make_tuple(1, 2, kTag)]) EXPECT_TRUE(m.empty());
  // A good item before a bad one moves nothing either: both receivers are told.
  expect_refused(request({side(wire::CopyOp::kSend, 2, h, 0, 16, kTag + 1), side(wire::CopyOp::kSend, 2, h, 4, 16)}),
                 "item 1 of 2");
  ASSERT_EQ(box_.pending(1, 2, kTag + 1), 1u);
  EXPECT_TRUE(box_.queued[std::make_tuple(1, 2, kTag + 1)].front().empty());
  EXPECT_EQ(box_.pending(1, 2, kTag), 7u);
  // Cut short, or an op that is not one: nothing after it can be read.
  wire::Writer cut = request({side(wire::CopyOp::kSend, 2, f32(4, b, 0, "a-name-of-twenty-chr"), 0, 16)});
  cut.data().resize(cut.data().size() - 3);
  expect_refused(std::move(cut), "item 0 of 1: malformed or cut short");
  wire::WireCopy odd = side(wire::CopyOp::kSend, 2, h, 0, 16);
  odd.op = 9;
  expect_refused(request({odd}), "malformed or cut short");
  EXPECT_EQ(box_.pending(1, 2, kTag), 7u);
  // Counts that do not fit the request.
  wire::Writer none = request({});
  expect_refused(std::move(none), "0 items");
  wire::Writer many(wire::Kind::kCopies, kVersion);
  many.u32(1u << 20);
  expect_refused(std::move(many), "items in a");
  // The receiver of a refused send fails at once, naming the sender.
  const uint64_t b2 = alloc_rank2(64);
  box_.queued[{1, 2, kTag}].resize(1);
  wire::Writer rv = request({side(wire::CopyOp::kRecv, 1, f32(4, b2, 0, "h2"), 0, 16)});
  Reply r = on_rank2(rv);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("rank 1 sent 0 of 16 bytes"), std::string::npos) << r.message;
}

TEST_F(WorkerCopyTest, AMalformedReceiveDropsTheSendersBytes) {
  const uint64_t b = alloc(64);
  box_.queued[{2, 1, kTag}].push_back(std::vector<uint8_t>(16, 1));
  expect_refused(request({side(wire::CopyOp::kRecv, 2, f32(4, 77, 0, "x"), 0, 16)}), "buffer 77 is not a buffer");
  EXPECT_EQ(box_.pending(2, 1, kTag), 0u);  // taken and dropped: no stray message for a later copy
  EXPECT_EQ(box_.discarded, 1);
  expect_refused(request({side(wire::CopyOp::kRecv, 2, f32(4, b, 0, "x"), 12, 8)}), "item 0 of 1");
  expect_refused(request({side(wire::CopyOp::kRecv, 1, f32(4, b, 0, "x"), 0, 16)}), "is not another worker");
  EXPECT_EQ(box_.discarded, 2);  // not for a rank that is not another worker
  // More bytes than asked for: an error, not an overflow.
  box_.queued[{2, 1, kTag}].push_back(std::vector<uint8_t>(32, 1));
  wire::Writer small = request({side(wire::CopyOp::kRecv, 2, f32(4, b, 0, "x"), 0, 16)});
  Reply r = send(small);
  EXPECT_FALSE(r.ok());
  expect_still_serving();
  // Local items: an unknown source, a range past the destination, a rank named.
  expect_refused(request({local(f32(4, b, 0, "g"), f32(4, 55, 0, "h"), 0, 16)}), "buffer 55");
  expect_refused(request({local(f32(4, b, 0, "g"), f32(4, b, 32, "h"), 4, 16)}), "item 0 of 1");
  wire::WireCopy named = local(f32(4, b, 0, "g"), f32(4, b, 32, "h"), 0, 16);
  named.peer = 2;
  expect_refused(request({named}), "names a rank");
}

TEST_F(WorkerCopyTest, WithoutALinkCopiesBetweenRanksAreRefused) {
  server_->set_peer_link(nullptr);
  const uint64_t b = alloc(64);
  wire::Writer w = request({side(wire::CopyOp::kSend, 2, f32(4, b, 0, "h"), 0, 16)});
  Reply r = send(w);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.code, static_cast<uint32_t>(LOOM_STATUS_UNAVAILABLE)) << r.message;
  EXPECT_NE(r.message.find("no link to the other ranks"), std::string::npos) << r.message;
  expect_still_serving();
}

}  // namespace
