// The load_file request (weights read by the worker from its own copy of
// the model file): a good load, then each refusal rank 0 must hear about by
// name (bad offset, a slice past the end of the file, a checksum that
// differs, a missing file, a tensor past its buffer, a bad path map), the
// server still serving after each; the path map and the checksum's pinned
// values (plugins/common/checksum64.h is part of the file_load ABI).
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "common/checksum64.h"
#include "worker/path_map.hpp"
#include "worker_fixture.hpp"

namespace {

using namespace loom_test_worker;  // NOLINT: the fixture and its helpers
using loom::cli::worker::PathMap;
using loom::common::checksum64;

class WorkerFileLoadTest : public WorkerServerTest {
 protected:
  void SetUp() override {
    WorkerServerTest::SetUp();
    char tmpl[] = "/tmp/loom_file_load_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/weights.bin";
    // 16 bytes of header, then 8 floats.
    bytes_.assign(16, 0xAB);
    for (int i = 0; i < 8; ++i) {
      const float f = static_cast<float>(i) + 0.5f;
      const auto* p = reinterpret_cast<const uint8_t*>(&f);
      bytes_.insert(bytes_.end(), p, p + 4);
    }
    std::ofstream(path_, std::ios::binary).write(reinterpret_cast<const char*>(bytes_.data()),
                                                 static_cast<std::streamsize>(bytes_.size()));
  }
  void TearDown() override {
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
    WorkerServerTest::TearDown();
  }

  Reply load(const wire::WireTensor& t, const std::string& path, uint64_t offset, uint64_t size, uint64_t sum) {
    wire::Writer w(wire::Kind::kLoadFile, kVersion);
    wire::write_tensor(w, t);
    w.str(path);
    w.u64(offset);
    w.u64(size);
    w.u64(sum);
    return send(w);
  }
  uint64_t sum_of(uint64_t offset, uint64_t size) const { return checksum64(bytes_.data() + offset, size); }

  std::vector<float> get(const wire::WireTensor& t, uint64_t n) {
    wire::Writer w(wire::Kind::kGet, kVersion);
    wire::write_tensor(w, t);
    w.u64(0);
    w.u64(n * 4);
    Reply r = send(w);
    EXPECT_TRUE(r.ok()) << r.message;
    std::vector<float> v(n);
    if (r.payload.size() == n * 4) std::memcpy(v.data(), r.payload.data(), n * 4);
    return v;
  }

  std::string dir_, path_;
  std::vector<uint8_t> bytes_;
};

TEST_F(WorkerFileLoadTest, AGoodLoadPutsTheFileBytesInTheTensor) {
  const uint64_t b = alloc(64);
  const wire::WireTensor t = f32(8, b, 0, "w");
  Reply r = load(t, path_, 16, 32, sum_of(16, 32));
  ASSERT_TRUE(r.ok()) << r.message;
  const std::vector<float> v = get(t, 8);
  EXPECT_EQ(v[0], 0.5f);
  EXPECT_EQ(v[7], 7.5f);
  EXPECT_EQ(server_->files_loaded(), 1u);
  EXPECT_EQ(server_->file_bytes_loaded(), 32u);
}

TEST_F(WorkerFileLoadTest, AnOffsetOrSizePastTheEndOfTheFileIsRefused) {
  const uint64_t b = alloc(64);
  const wire::WireTensor t = f32(8, b, 0, "w");
  Reply r = load(t, path_, 20, 32, 0);  // 4 bytes past the 48-byte file
  EXPECT_EQ(r.code, static_cast<uint32_t>(LOOM_STATUS_INVALID_ARGUMENT));
  EXPECT_NE(r.message.find("past its end (48 bytes)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(path_), std::string::npos) << r.message;
  r = load(t, path_, ~uint64_t{0} - 8, 32, 0);  // the offset alone overflows with the size
  EXPECT_NE(r.message.find("past its end"), std::string::npos) << r.message;
  r = load(t, path_, 1000, 0, 0);
  EXPECT_NE(r.message.find("past its end"), std::string::npos) << r.message;
  expect_still_serving();
}

TEST_F(WorkerFileLoadTest, ASizePastTheTensorOrBufferIsRefused) {
  const uint64_t b = alloc(64);
  Reply r = load(f32(4, b, 0, "w"), path_, 16, 32, sum_of(16, 32));  // 32 bytes into a 16-byte tensor
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("tensor 'w'"), std::string::npos) << r.message;
  r = load(f32(8, b, 48, "w"), path_, 16, 32, sum_of(16, 32));  // the tensor runs past the 64-byte buffer
  EXPECT_NE(r.message.find("do not fit the buffer"), std::string::npos) << r.message;
  r = load(f32(8, b + 9, 0, "w"), path_, 16, 32, sum_of(16, 32));
  EXPECT_NE(r.message.find("is not a buffer of this device"), std::string::npos) << r.message;
  EXPECT_EQ(server_->files_loaded(), 0u);
  expect_still_serving();
}

TEST_F(WorkerFileLoadTest, AChecksumMismatchIsRefusedNamingThePath) {
  const uint64_t b = alloc(64);
  Reply r = load(f32(8, b, 0, "w"), path_, 16, 32, sum_of(16, 32) ^ 1);
  EXPECT_EQ(r.code, static_cast<uint32_t>(LOOM_STATUS_INVALID_ARGUMENT));
  EXPECT_NE(r.message.find("checksum"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(path_), std::string::npos) << r.message;
  EXPECT_EQ(server_->files_loaded(), 0u);
  expect_still_serving();
}

TEST_F(WorkerFileLoadTest, AMissingFileOrABadPathIsRefused) {
  const uint64_t b = alloc(64);
  const wire::WireTensor t = f32(8, b, 0, "w");
  Reply r = load(t, dir_ + "/absent.gguf", 16, 32, 0);
  EXPECT_EQ(r.code, static_cast<uint32_t>(LOOM_STATUS_NOT_FOUND));
  EXPECT_NE(r.message.find(dir_ + "/absent.gguf"), std::string::npos) << r.message;
  r = load(t, "relative.gguf", 16, 32, 0);
  EXPECT_NE(r.message.find("not an absolute path"), std::string::npos) << r.message;
  r = load(t, dir_, 0, 32, 0);  // a directory
  EXPECT_NE(r.message.find("not a regular file"), std::string::npos) << r.message;
  wire::Writer shortmsg(wire::Kind::kLoadFile, kVersion);
  wire::write_tensor(shortmsg, t);
  shortmsg.str(path_);
  r = send(shortmsg);
  EXPECT_NE(r.message.find("ends early"), std::string::npos) << r.message;
  expect_still_serving();
}

TEST_F(WorkerFileLoadTest, ThePathMapFindsTheFileElsewhere) {
  const uint64_t b = alloc(64);
  server_->set_path_map("/models/site=" + dir_);
  Reply r = load(f32(8, b, 0, "w"), "/models/site/weights.bin", 16, 32, sum_of(16, 32));
  ASSERT_TRUE(r.ok()) << r.message;
  r = load(f32(8, b, 0, "w"), "/models/site/absent.bin", 16, 32, 0);
  EXPECT_NE(r.message.find("through LOOM_MPI_PATH_MAP"), std::string::npos) << r.message;
  server_->set_path_map("no-equals-sign");
  r = load(f32(8, b, 0, "w"), path_, 16, 32, sum_of(16, 32));
  EXPECT_NE(r.message.find("LOOM_MPI_PATH_MAP entry 'no-equals-sign'"), std::string::npos) << r.message;
  expect_still_serving();
}

TEST(PathMapTest, LongestPrefixAtAPathBoundaryWins) {
  auto m = PathMap::parse("/a=/x:/a/b/=/y/:/c=/");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->apply("/a/f.gguf"), "/x/f.gguf");
  EXPECT_EQ(m->apply("/a/b/f.gguf"), "/y/f.gguf");
  EXPECT_EQ(m->apply("/ab/f.gguf"), "/ab/f.gguf");  // not at a boundary
  EXPECT_EQ(m->apply("/a"), "/x");
  EXPECT_EQ(m->apply("/c/f.gguf"), "/f.gguf");
  EXPECT_EQ(m->apply("/other/f.gguf"), "/other/f.gguf");
  EXPECT_TRUE(PathMap::parse("")->empty());
  EXPECT_FALSE(PathMap::parse("/a=relative").ok());
  EXPECT_FALSE(PathMap::parse("/a=/b=/c").ok());
}

TEST(Checksum64Test, PinnedValues) {
  // FNV-1a 64 over little-endian words, then tail bytes, then the length.
  EXPECT_EQ(checksum64(nullptr, 0), 0xaf63bd4c8601b7dfull);
  EXPECT_EQ(checksum64("a", 1), 0x089be307b544f397ull);
  EXPECT_EQ(checksum64("abcdefgh", 8), 0xe8f7192949dab24cull);
  EXPECT_EQ(checksum64("abcdefghi", 9), 0xb7dbaa287fb4fa62ull);
  const std::vector<uint8_t> z(17, 0);
  EXPECT_EQ(checksum64(z.data(), 16), 0xd94d22186c0f4ae7ull);
  EXPECT_EQ(checksum64(z.data(), 17), 0x4d25657f9dcdf712ull);  // zero tails of other lengths differ
}

}  // namespace
