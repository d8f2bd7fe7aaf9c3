// The fixture of the worker-server tests: a WorkerServer over the real cpu
// device, and helpers that build requests and decode replies.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/mpi_wire.h"
#include "loom/registry/registry.hpp"
#include "worker/worker_server.hpp"

namespace loom_test_worker {

namespace wire = loom::common::mpi;
using loom::cli::worker::WorkerServer;

constexpr const char* kVersion = "9.9.9-test";

struct Reply {
  uint32_t kind = 0;
  uint32_t code = 0;
  std::string message;
  std::vector<uint8_t> payload;
  bool ok() const { return kind == static_cast<uint32_t>(wire::Kind::kReplyOk); }
};

class WorkerServerTest : public ::testing::Test {
 protected:
  // The plugins of `dir` alone, probed in this process.
  static std::unique_ptr<loom::registry::Registry> load_registry(const char* dir) {
    loom::registry::Options o;
    o.paths = {dir};
    o.use_env = false;
    o.search_library_dir = false;
    o.search_install_dir = false;
    o.probe = loom::registry::ProbeMode::kInline;
    return loom::registry::Registry::load(o);
  }

  void SetUp() override {
    reg_ = load_registry(LOOM_TEST_PLUGIN_DIR);
    cpu_ = reg_->device("cpu");
    ASSERT_NE(cpu_, nullptr);
    server_ = std::make_unique<WorkerServer>(std::vector<loom::registry::Device*>{cpu_}, kVersion, 1, "testhost");
  }
  void TearDown() override { server_.reset(); }

  Reply send_bytes(const std::vector<uint8_t>& msg) {
    std::vector<uint8_t> out;
    server_->handle(msg.data(), msg.size(), &out);
    Reply r;
    EXPECT_GE(out.size(), sizeof(wire::WireHeader));
    if (out.size() < sizeof(wire::WireHeader)) return r;
    wire::WireHeader h;
    std::memcpy(&h, out.data(), sizeof h);
    EXPECT_EQ(wire::check_header(h, kVersion, 1), "");
    r.kind = h.kind;
    wire::Reader rd(out.data() + sizeof h, out.size() - sizeof h);
    if (!r.ok()) {
      r.code = rd.u32();
      r.message = rd.str(1 << 20);
    } else {
      r.payload.assign(out.begin() + sizeof h, out.end());
    }
    return r;
  }
  Reply send(wire::Writer& w) { return send_bytes(w.data()); }

  uint64_t alloc(uint64_t size) {
    wire::Writer w(wire::Kind::kAlloc, kVersion);
    w.u32(0);
    w.u64(size);
    Reply r = send(w);
    EXPECT_TRUE(r.ok()) << r.message;
    uint64_t id = 0;
    if (r.payload.size() == 8) std::memcpy(&id, r.payload.data(), 8);
    return id;
  }

  static wire::WireTensor f32(int64_t n, uint64_t buffer, uint64_t offset, const char* name) {
    wire::WireTensor t;
    t.type = LOOM_TYPE_F32;
    t.ne[0] = n;
    t.nb[0] = 4;
    t.nb[1] = t.nb[2] = t.nb[3] = static_cast<uint64_t>(4 * n);
    t.buffer = buffer;
    t.offset = offset;
    t.name = name;
    return t;
  }

  Reply set(const wire::WireTensor& t, uint64_t offset, const std::vector<float>& v, int64_t claimed = -1) {
    wire::Writer w(wire::Kind::kSet, kVersion);
    wire::write_tensor(w, t);
    w.u64(offset);
    w.u64(claimed < 0 ? v.size() * 4 : static_cast<uint64_t>(claimed));
    w.bytes(v.data(), v.size() * 4);
    return send(w);
  }

  // The server still answers a good request after whatever came before.
  void expect_still_serving() {
    wire::Writer w(wire::Kind::kHello, kVersion);
    EXPECT_TRUE(send(w).ok());
  }

  std::unique_ptr<loom::registry::Registry> reg_;
  loom::registry::Device* cpu_ = nullptr;
  std::unique_ptr<WorkerServer> server_;
};

}  // namespace loom_test_worker
