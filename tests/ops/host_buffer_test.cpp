// The cpu plugin's host buffers: clear(0) on a buffer of 1 GiB or more
// hands its pages back (they read as zero and cost no memory until written
// again: a KV cache for a long context grows as its rows fill); any other
// value, and a smaller buffer, are written byte by byte (its pages resident
// before the first step); either way every byte reads back as the value.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "test_device.hpp"

namespace loom::optest {
namespace {

// This process's resident memory now (Linux: /proc/self/statm), 0 if unknown.
size_t resident_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<size_t>(resident) * static_cast<size_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

// Whether every byte of [p, p + n) is v.
bool all_bytes(const void* p, size_t n, uint8_t v) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) {
    if (b[i] != v) return false;
  }
  return true;
}

class HostBufferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing_reference_device()) GTEST_SKIP() << "the cpu plugin's buffers (device under test: not cpu)";
    device_ = test_device();
    ASSERT_NE(device_, nullptr) << registry_report();
  }
  registry::Device* device_ = nullptr;
};

TEST_F(HostBufferTest, ClearZeroHandsLargeBuffersPagesBack) {
  constexpr size_t kBytes = size_t{1} << 30, kWritten = size_t{64} << 20;
  auto buf = device_->alloc_buffer(kBytes);
  ASSERT_TRUE(buf.ok()) << buf.status().to_string();
  ASSERT_TRUE(buf->is_host());
  auto* base = static_cast<char*>(buf->base());
  const size_t fresh = resident_bytes();
  ASSERT_TRUE(buf->clear(0).ok());
  const size_t cleared_fresh = resident_bytes();
  std::memset(base + kBytes - kWritten, 0x5A, kWritten);  // 64 MiB resident
  const size_t written = resident_bytes();
  ASSERT_TRUE(buf->clear(0).ok());
  const size_t cleared = resident_bytes();
#ifdef __linux__
  // memset would have made all 1 GiB resident, and kept the 64 MiB.
  EXPECT_LT(cleared_fresh, fresh + (size_t{16} << 20)) << "resident " << fresh << " -> " << cleared_fresh;
  EXPECT_LT(cleared + (size_t{48} << 20), written) << "resident " << written << " -> " << cleared << " bytes";
#endif
  EXPECT_TRUE(all_bytes(base + kBytes - kWritten, kWritten, 0));
  EXPECT_TRUE(all_bytes(base, 4096, 0));
  // Written again after the clear: the new bytes stay.
  std::memset(base + 12345, 0x33, 1000);
  EXPECT_TRUE(all_bytes(base + 12345, 1000, 0x33));
  EXPECT_TRUE(all_bytes(base, 12345, 0));
}

TEST_F(HostBufferTest, SmallerBuffersAreWrittenWhole) {
  constexpr size_t kBytes = size_t{64} << 20;
  auto buf = device_->alloc_buffer(kBytes);
  ASSERT_TRUE(buf.ok()) << buf.status().to_string();
  const size_t fresh = resident_bytes();
  ASSERT_TRUE(buf->clear(0).ok());
#ifdef __linux__
  // Resident before any step writes it (no page fault inside a step).
  EXPECT_GT(resident_bytes(), fresh + (size_t{48} << 20));
#endif
  EXPECT_TRUE(all_bytes(buf->base(), kBytes, 0));
  ASSERT_TRUE(buf->clear(0x11).ok());
  EXPECT_TRUE(all_bytes(buf->base(), kBytes, 0x11));
}

TEST_F(HostBufferTest, FreshLargeBufferReadsZeroAndSmallBuffersClear) {
  constexpr size_t kBytes = (size_t{3} << 20) + 4321;  // not whole pages
  auto big = device_->alloc_buffer(kBytes);
  ASSERT_TRUE(big.ok()) << big.status().to_string();
  std::memset(big->base(), 0x7F, kBytes);
  ASSERT_TRUE(big->clear(0).ok());
  EXPECT_TRUE(all_bytes(big->base(), kBytes, 0));
  auto small = device_->alloc_buffer(4096);
  ASSERT_TRUE(small.ok()) << small.status().to_string();
  std::memset(small->base(), 0x7F, 4096);
  ASSERT_TRUE(small->clear(0).ok());
  EXPECT_TRUE(all_bytes(small->base(), 4096, 0));
}

}  // namespace
}  // namespace loom::optest
