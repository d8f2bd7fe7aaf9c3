// Malformed images: each must give a clear "[gguf.open]" status naming the
// problem, and none may crash, abort or allocate absurd amounts (run this
// suite under ASan/UBSan too: LOOM_SANITIZE=address,undefined).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "gguf_writer.hpp"
#include "peak_rss.hpp"
#include "loom/runtime/gguf.hpp"

namespace loom {
namespace {

using testing::Bytes;
using testing::GgufBuilder;
namespace t = testing;

// A small valid image touching every section: kvs (scalar, string, arrays,
// nested array), alignment and three tensors.
GgufBuilder small_valid() {
  GgufBuilder b(3);
  b.alignment(16)
      .kv_str("general.architecture", "llama")
      .kv("llama.block_count", t::kU32, uint32_t{2})
      .kv_arr_str("tokenizer.ggml.tokens", {"a", "bc"})
      .kv_arr("tokenizer.ggml.scores", t::kF32, std::vector<float>{0.f, -1.f});
  Bytes nested;
  nested.u32(t::kArr).u64(1).u32(t::kU8).u64(2).u8(1).u8(2);
  b.kv_raw("x.nested", t::kArr, nested);
  b.tensor("tok_embd", {4, 2}, LOOM_TYPE_F32, std::vector<uint8_t>(32, 1))
      .tensor("q", {32}, LOOM_TYPE_Q8_0, std::vector<uint8_t>(34, 2))
      .tensor("n", {3}, LOOM_TYPE_F16, std::vector<uint8_t>(6, 3));
  return b;
}

// Parses `bytes` and expects an error containing every string in `needles`.
void expect_error(const std::vector<uint8_t>& bytes, std::initializer_list<const char*> needles) {
  auto f = GgufFile::parse(bytes.data(), bytes.size(), "bad.gguf");
  ASSERT_FALSE(f.ok()) << "parsed a malformed image";
  const std::string m = f.status().message();  // status() returns a copy
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument) << m;
  EXPECT_EQ(m.rfind("[gguf.open] bad.gguf: ", 0), 0u) << m;
  for (const char* n : needles) EXPECT_NE(m.find(n), std::string::npos) << "missing '" << n << "' in: " << m;
}

TEST(GgufMalformed, ValidBaselineParses) {
  auto bytes = small_valid().build();
  auto f = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->tensors().size(), 3u);
}

TEST(GgufMalformed, EveryTruncatedPrefixFails) {
  const auto bytes = small_valid().build();
  // The last tensor ends the file, so every strict prefix is missing something.
  for (size_t n = 0; n < bytes.size(); ++n) {
    // Copy into an exact-size heap block so ASan catches any read past n.
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    auto f = GgufFile::parse(prefix.data(), prefix.size(), "bad.gguf");
    ASSERT_FALSE(f.ok()) << "prefix of " << n << " bytes parsed";
    const std::string m = f.status().message();  // status() returns a copy
    EXPECT_EQ(m.rfind("[gguf.open] bad.gguf: ", 0), 0u) << m;
    EXPECT_TRUE(m.find("truncated") != std::string::npos || m.find("past the end") != std::string::npos ||
                m.find("cannot fit") != std::string::npos || m.find("needs at least") != std::string::npos)
        << "prefix " << n << ": " << m;
  }
}

TEST(GgufMalformed, NullAndEmpty) {
  auto f = GgufFile::parse(nullptr, 100, "bad.gguf");
  EXPECT_NE(f.status().message().find("truncated: magic"), std::string::npos) << f.status().message();
  expect_error({}, {"truncated: magic at offset 0 needs 4 bytes, 0 left"});
}

TEST(GgufMalformed, BadMagic) {
  auto bytes = small_valid().build();
  bytes[0] = 'X';
  expect_error(bytes, {"not a GGUF file", "'XGUF'"});
}

TEST(GgufMalformed, UnsupportedVersions) {
  expect_error(GgufBuilder(1).build(), {"unsupported version 1", "versions 2 and 3"});
  expect_error(GgufBuilder(4).build(), {"unsupported version 4"});
  expect_error(GgufBuilder(0x03000000u).build(), {"big-endian"});
}

TEST(GgufMalformed, AbsurdCounts) {
  GgufBuilder b = small_valid();
  b.kv_count_override = ~0ull;
  expect_error(b.build(), {"absurd counts", "18446744073709551615 metadata keys"});
  b = small_valid();
  b.tensor_count_override = 1ull << 60;
  expect_error(b.build(), {"absurd counts", "1152921504606846976 tensors"});
  b = small_valid();
  b.kv_count_override = 1000;  // small enough to be plausible, more than the file holds
  expect_error(b.build(), {"absurd counts"});
  b = small_valid();
  b.kv_count_override = 7;  // two more than written: runs into the tensor infos
  auto bytes = b.build();
  auto f = GgufFile::parse(bytes.data(), bytes.size(), "bad.gguf");
  EXPECT_FALSE(f.ok());
}

TEST(GgufMalformed, AbsurdArrayLengths) {
  GgufBuilder b;
  Bytes arr;
  arr.u32(t::kU64).u64(1ull << 61);  // count * 8 overflows 64 bits
  b.kv_raw("k.big", t::kArr, arr);
  expect_error(b.build(), {"key 'k.big'", "array of 2305843009213693952 uint64 elements", "more than 2^64"});
  GgufBuilder s;
  Bytes sarr;
  sarr.u32(t::kStr).u64(1u << 30);
  s.kv_raw("k.strs", t::kArr, sarr);
  expect_error(s.build(), {"key 'k.strs'", "array of 1073741824 string elements", "needs at least 8589934592"});
}

// Counts that the file size allows are still only claims: the parser grows
// its tables as entries are read, so a 64 MiB image claiming two million
// tensor infos (or eight million strings) that fails at the first entry
// costs next to nothing (resizing for the claim first took ~200 MiB).
TEST(GgufMalformed, ClaimedCountsCostNothingBeforeTheirBytesAreRead) {
  constexpr size_t kImage = size_t{64} << 20;
  GgufBuilder tensors;
  tensors.tensor_count_override = (kImage - 64) / 32;  // just what the size allows
  std::vector<uint8_t> a = tensors.build();
  a.resize(kImage, 0);  // zeros: the first tensor info has n_dims 0
  GgufBuilder strings;
  Bytes sarr;
  sarr.u32(t::kStr).u64((kImage - 128) / 8);
  strings.kv_raw("k.strs", t::kArr, sarr);
  std::vector<uint8_t> b = strings.build();
  b.resize(kImage, 0xff);  // an early string length runs past the end
  const size_t before = test::peak_rss_bytes();
  auto fa = GgufFile::parse(a.data(), a.size(), "a.gguf");
  EXPECT_FALSE(fa.ok());
  EXPECT_NE(fa.status().message().find("n_dims 0 outside 1..4"), std::string::npos) << fa.status().message();
  auto fb = GgufFile::parse(b.data(), b.size(), "b.gguf");
  EXPECT_FALSE(fb.ok());
  EXPECT_NE(fb.status().message().find("past the end of the file"), std::string::npos) << fb.status().message();
  EXPECT_LT(test::peak_rss_bytes() - before, size_t{16} << 20);
}

TEST(GgufMalformed, StringLengthsPastTheEnd) {
  GgufBuilder b;
  Bytes v;
  v.u64(1000).raw({'a', 'b'});
  b.kv_raw("k.s", t::kStr, v);
  expect_error(b.build(), {"key 'k.s' value: string length 1000", "past the end of the file"});
  // A key whose own length runs off the end.
  Bytes raw;
  raw.b = {'G', 'G', 'U', 'F'};
  raw.u32(3).u64(0).u64(1).u64(~0ull - 3).u32(0).u8(0);
  expect_error(raw.b, {"key 0: string length 18446744073709551612", "past the end"});
  // A string element inside an array.
  GgufBuilder a;
  Bytes arr;
  arr.u32(t::kStr).u64(2).str("ok").u64(99);
  a.kv_raw("k.a", t::kArr, arr);
  a.kv("pad", t::kU64, uint64_t{0});  // keeps the array's minimum size within the file
  expect_error(a.build(), {"key 'k.a' element 1: string length 99"});
}

TEST(GgufMalformed, UnknownValueTypes) {
  GgufBuilder b;
  b.kv("k.bad", 13u, uint32_t{0});
  expect_error(b.build(), {"key 'k.bad': unknown value type 13"});
  GgufBuilder a;
  Bytes arr;
  arr.u32(0xdeadu).u64(0);
  a.kv_raw("k.arr", t::kArr, arr);
  expect_error(a.build(), {"key 'k.arr': array of unknown element type 57005"});
}

TEST(GgufMalformed, NestingTooDeep) {
  GgufBuilder b;
  Bytes v;
  for (int i = 0; i < 20; ++i) v.u32(t::kArr).u64(1);
  v.u32(t::kU8).u64(0);
  b.kv_raw("k.deep", t::kArr, v);
  expect_error(b.build(), {"key 'k.deep'", "nested deeper than 8"});
  // Exactly the limit parses.
  GgufBuilder ok;
  Bytes w;
  for (int i = 0; i < kGgufMaxArrayDepth - 1; ++i) w.u32(t::kArr).u64(1);
  w.u32(t::kU8).u64(1).u8(5);
  ok.kv_raw("k.deep", t::kArr, w);
  auto bytes = ok.build();
  EXPECT_TRUE(GgufFile::parse(bytes.data(), bytes.size()).ok());
}

TEST(GgufMalformed, DuplicateKeys) {
  GgufBuilder b;
  b.kv("general.x", t::kU8, uint8_t{1}).kv_str("b", "b").kv("general.x", t::kU32, uint32_t{2});
  expect_error(b.build(), {"duplicate key 'general.x' (entries 0 and 2)"});
}

TEST(GgufMalformed, UnknownTensorType) {
  GgufBuilder b;
  b.tensor("blk.0.ffn_up.weight", {256}, 15u /* Q8_K: GGUF has it, loom does not */, std::vector<uint8_t>(292));
  expect_error(b.build(), {"tensor 'blk.0.ffn_up.weight'", "unknown or unsupported tensor type id 15"});
  GgufBuilder c;
  c.tensor("t", {4}, 999u, std::vector<uint8_t>(16));
  expect_error(c.build(), {"tensor 't'", "type id 999"});
}

TEST(GgufMalformed, DuplicateTensorNames) {
  GgufBuilder b;
  b.tensor("w", {1}, LOOM_TYPE_F32, std::vector<uint8_t>(4))
      .tensor("x", {1}, LOOM_TYPE_F32, std::vector<uint8_t>(4))
      .tensor("w", {1}, LOOM_TYPE_F32, std::vector<uint8_t>(4));
  expect_error(b.build(), {"duplicate tensor name 'w' (tensors 0 and 2)"});
}

TEST(GgufMalformed, BadAlignment) {
  for (uint32_t a : {0u, 3u, 48u, 0x80000001u}) {
    GgufBuilder b;
    b.kv("general.alignment", t::kU32, a);
    expect_error(b.build(), {"key 'general.alignment'", (std::to_string(a) + " is not a power of two").c_str()});
  }
  GgufBuilder w;
  w.kv("general.alignment", t::kU64, uint64_t{32});
  expect_error(w.build(), {"key 'general.alignment': expected uint32, got uint64"});
  // A huge power of two puts the data section past the end.
  GgufBuilder h;
  h.kv("general.alignment", t::kU32, uint32_t{1u << 31});
  h.tensor("w", {1}, LOOM_TYPE_F32, {}, 0);
  expect_error(h.build(), {"data section starts at 2147483648", "past the end of the file"});
}

TEST(GgufMalformed, BadDims) {
  for (uint32_t n_dims : {0u, 5u, 0xffffffffu}) {
    Bytes raw;
    raw.b = {'G', 'G', 'U', 'F'};
    raw.u32(3).u64(1).u64(0).str("w").u32(n_dims);
    for (int i = 0; i < 8; ++i) raw.u64(1);
    expect_error(raw.b, {"tensor 'w': n_dims", (std::to_string(n_dims) + " outside 1..4").c_str()});
  }
  GgufBuilder o;
  o.tensor("big", {1ull << 32, 1ull << 32}, LOOM_TYPE_F32, {});
  expect_error(o.build(), {"tensor 'big': element count overflows", "4294967296, 4294967296"});
  GgufBuilder neg;
  neg.tensor("neg", {~0ull}, LOOM_TYPE_F32, {});
  expect_error(neg.build(), {"tensor 'neg': dim 0 is 18446744073709551615, above INT64_MAX"});
  GgufBuilder bytes_ovf;  // elements fit int64, bytes do not fit 64 bits
  bytes_ovf.tensor("wide", {1ull << 31, 1ull << 31}, LOOM_TYPE_I64, {});
  expect_error(bytes_ovf.build(), {"tensor 'wide': byte size overflows"});
  GgufBuilder blk;
  blk.tensor("q", {48}, LOOM_TYPE_Q4_0, std::vector<uint8_t>(36));
  expect_error(blk.build(), {"tensor 'q': ne[0] = 48 is not a multiple of the q4_0 block size 32"});
}

TEST(GgufMalformed, TensorDataPastTheEnd) {
  GgufBuilder b;
  b.tensor("blk.0.attn_q.weight", {4}, LOOM_TYPE_F32, {}, 1024);
  auto bytes = b.build();
  std::string want = "tensor 'blk.0.attn_q.weight' data [";
  expect_error(bytes, {want.c_str(), "past the end of the file (" });
  expect_error(bytes, {("(" + std::to_string(bytes.size()) + " bytes)").c_str()});
  GgufBuilder o;
  o.tensor("w", {4}, LOOM_TYPE_F32, {}, ~0ull - 31);  // aligned, but offset + start overflows
  expect_error(o.build(), {"tensor 'w' data [", "overflow", "past the end"});
  GgufBuilder m;
  m.tensor("w", {4}, LOOM_TYPE_F32, {}, 8);
  expect_error(m.build(), {"tensor 'w': offset 8 is not a multiple of the alignment 32"});
}

TEST(GgufMalformed, OverlappingTensorsAreAllowed) {
  GgufBuilder b;
  b.tensor("a", {8}, LOOM_TYPE_F32, std::vector<uint8_t>(32)).tensor("b", {4}, LOOM_TYPE_F32, {}, 0);
  auto bytes = b.build();
  auto f = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->tensors()[0].data, f->tensors()[1].data);
}

TEST(GgufMalformed, LongTensorName) {
  GgufBuilder b;
  b.tensor(std::string(LOOM_MAX_NAME, 'n'), {1}, LOOM_TYPE_F32, std::vector<uint8_t>(4));
  expect_error(b.build(), {"name is 64 bytes, loom allows at most 63"});
}

TEST(GgufMalformed, NonPrintableNamesAreEscaped) {
  GgufBuilder b;
  b.kv(std::string("k\n\x01", 3), 77u, uint8_t{0});
  expect_error(b.build(), {"key 'k\\x0a\\x01': unknown value type 77"});
}

// Random single-byte corruptions of a valid image: must never crash (the
// result may be OK when the byte was padding or data).
TEST(GgufMalformed, RandomByteFlipsNeverCrash) {
  const auto bytes = small_valid().build();
  uint32_t rng = 12345;
  for (int iter = 0; iter < 5000; ++iter) {
    auto copy = bytes;
    for (int k = 0; k < 1 + iter % 3; ++k) {
      rng = rng * 1664525u + 1013904223u;
      copy[(rng >> 8) % copy.size()] = static_cast<uint8_t>(rng >> 24);
    }
    auto f = GgufFile::parse(copy.data(), copy.size(), "bad.gguf");
    if (!f.ok()) {
      EXPECT_EQ(f.status().message().rfind("[gguf.open] bad.gguf: ", 0), 0u);
    }
  }
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// Writes the valid images used here as a fuzz seed corpus when
// LOOM_GGUF_SEED_DIR names a folder (see fuzz/gguf_fuzz.cpp).
TEST(GgufMalformed, WriteFuzzSeeds) {
  const char* dir = std::getenv("LOOM_GGUF_SEED_DIR");
  if (dir == nullptr) GTEST_SKIP() << "LOOM_GGUF_SEED_DIR not set";
  auto write = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream out(std::string(dir) + "/" + name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out.good()) << name;
  };
  write("small_valid.gguf", small_valid().build());
  GgufBuilder v2(2);
  v2.kv_arr_str("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"})
      .kv_arr("tokenizer.ggml.token_type", t::kI32, std::vector<int32_t>{2, 3, 3})
      .tensor("q4", {32, 2}, LOOM_TYPE_Q4_0, std::vector<uint8_t>(36, 7))
      .tensor("bf", {2, 2, 2, 2}, LOOM_TYPE_BF16, std::vector<uint8_t>(32, 1));
  write("v2_tokens.gguf", v2.build());
}

}  // namespace
}  // namespace loom
