// GgufFile::open refuses what is not a regular file before opening it
// (issue 11, finding 4): a FIFO used to block open() until a writer came,
// so `loom run -m fifo` hung forever.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

#include "loom/runtime/gguf.hpp"

namespace loom {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(GgufOpen, FifoIsRefusedWithoutBlocking) {
  const std::string path = ::testing::TempDir() + "/loom_gguf_fifo_" + std::to_string(getpid());
  ::unlink(path.c_str());
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  auto opened = std::async(std::launch::async, [&] { return GgufFile::open(path); });
  const bool returned = opened.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!returned) {
    // Unblock the reader stuck in open() so the test can end: be its writer.
    const int fd = ::open(path.c_str(), O_WRONLY);
    if (fd >= 0) ::close(fd);
  }
  StatusOr<GgufFile> f = opened.get();
  ::unlink(path.c_str());
  ASSERT_TRUE(returned) << "GgufFile::open blocked on a FIFO";
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(has(f.status().message(), "[gguf.open] " + path + ": is a FIFO (named pipe), not a regular file"))
      << f.status().message();
}

TEST(GgufOpen, DevicesAndFoldersAreRefusedByKind) {
  auto zero = GgufFile::open("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_TRUE(has(zero.status().message(), "/dev/zero: is a character device, not a regular file"))
      << zero.status().message();
  auto dir = GgufFile::open(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_TRUE(has(dir.status().message(), "is a directory, not a regular file")) << dir.status().message();
}

}  // namespace
}  // namespace loom
