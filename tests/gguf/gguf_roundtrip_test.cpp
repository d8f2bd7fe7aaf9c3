// Round trips: images written by the test writer read back with every value
// type, arrays (nested too), tensors of every type and custom alignment.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "gguf_writer.hpp"
#include "loom/runtime/gguf.hpp"

namespace loom {
namespace {

using testing::Bytes;
using testing::GgufBuilder;
namespace t = testing;

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

GgufBuilder all_values(uint32_t version) {
  GgufBuilder b(version);
  b.kv("v.u8", t::kU8, uint8_t{200})
      .kv("v.i8", t::kI8, int8_t{-100})
      .kv("v.u16", t::kU16, uint16_t{60000})
      .kv("v.i16", t::kI16, int16_t{-30000})
      .kv("v.u32", t::kU32, uint32_t{4000000000u})
      .kv("v.i32", t::kI32, int32_t{-2000000000})
      .kv("v.f32", t::kF32, 1.5f)
      .kv("v.bool", t::kBool, uint8_t{1})
      .kv_str("v.str", "hello \xe2\x96\x81 world")
      .kv("v.u64", t::kU64, uint64_t{18000000000000000000ull})
      .kv("v.i64", t::kI64, int64_t{-9000000000000000000ll})
      .kv("v.f64", t::kF64, 2.25)
      .kv_str("v.empty", "")
      .kv_arr("a.f32", t::kF32, std::vector<float>{0.5f, -1.0f, 3.25f})
      .kv_arr("a.i32", t::kI32, std::vector<int32_t>{1, -2, 3, 6})
      .kv_arr("a.u8", t::kU8, std::vector<uint8_t>{9, 8})
      .kv_arr("a.u64", t::kU64, std::vector<uint64_t>{1ull << 40})
      .kv_arr("a.f64", t::kF64, std::vector<double>{0.125})
      .kv_arr("a.empty", t::kI32, std::vector<int32_t>{})
      .kv_arr_str("a.str", {"<unk>", "", "\xe2\x96\x81the"});
  // [[1, 2], [], [3]] as an array of arrays of int16, then one level deeper.
  Bytes nested;
  nested.u32(t::kArr).u64(3);
  nested.u32(t::kI16).u64(2).put(int16_t{1}).put(int16_t{2});
  nested.u32(t::kI16).u64(0);
  nested.u32(t::kI16).u64(1).put(int16_t{3});
  b.kv_raw("a.nested", t::kArr, nested);
  Bytes deep;
  deep.u32(t::kArr).u64(1).u32(t::kArr).u64(1).u32(t::kStr).u64(1).str("deep");
  b.kv_raw("a.deep", t::kArr, deep);
  return b;
}

void check_all_values(const GgufFile& f) {
  EXPECT_EQ(*f.get_u8("v.u8"), 200);
  EXPECT_EQ(*f.get_i8("v.i8"), -100);
  EXPECT_EQ(*f.get_u16("v.u16"), 60000);
  EXPECT_EQ(*f.get_i16("v.i16"), -30000);
  EXPECT_EQ(*f.get_u32("v.u32"), 4000000000u);
  EXPECT_EQ(*f.get_i32("v.i32"), -2000000000);
  EXPECT_EQ(*f.get_f32("v.f32"), 1.5f);
  EXPECT_EQ(*f.get_bool("v.bool"), true);
  EXPECT_EQ(*f.get_str("v.str"), "hello \xe2\x96\x81 world");
  EXPECT_EQ(*f.get_u64("v.u64"), 18000000000000000000ull);
  EXPECT_EQ(*f.get_i64("v.i64"), -9000000000000000000ll);
  EXPECT_EQ(*f.get_f64("v.f64"), 2.25);
  EXPECT_EQ(*f.get_str("v.empty"), "");
  EXPECT_EQ(*f.get_int("v.u32"), 4000000000ll);
  EXPECT_EQ(*f.get_int("v.i8"), -100);

  EXPECT_EQ(*f.get_arr_f32("a.f32"), (std::vector<float>{0.5f, -1.0f, 3.25f}));
  EXPECT_EQ(*f.get_arr_f32("a.f64"), (std::vector<float>{0.125f}));
  EXPECT_EQ(*f.get_arr_int("a.i32"), (std::vector<int64_t>{1, -2, 3, 6}));
  EXPECT_EQ(*f.get_arr_int("a.u8"), (std::vector<int64_t>{9, 8}));
  EXPECT_EQ(*f.get_arr_int("a.u64"), (std::vector<int64_t>{1ll << 40}));
  EXPECT_TRUE(f.get_arr_int("a.empty")->empty());
  EXPECT_EQ(*f.get_arr_str("a.str"), (std::vector<std::string_view>{"<unk>", "", "\xe2\x96\x81the"}));

  auto nested = f.get_arr("a.nested");
  ASSERT_TRUE(nested.ok()) << nested.status().to_string();
  ASSERT_EQ((*nested)->elem_type(), GgufType::kArray);
  const auto& rows = (*nested)->arrays();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].elem_type(), GgufType::kInt16);
  ASSERT_EQ(rows[0].size(), 2u);
  EXPECT_EQ(rows[0].elem_int(0), 1);
  EXPECT_EQ(rows[0].elem_int(1), 2);
  EXPECT_EQ(rows[1].size(), 0u);
  EXPECT_EQ(rows[2].elem_int(0), 3);
  auto deep = f.get_arr("a.deep");
  ASSERT_TRUE(deep.ok());
  EXPECT_EQ((*deep)->arrays().at(0).arrays().at(0).strings().at(0), "deep");
}

TEST(GgufRoundTrip, EveryValueTypeV3) {
  auto bytes = all_values(3).build();
  auto f = GgufFile::parse(bytes.data(), bytes.size(), "v3.gguf");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->kvs().size(), 22u);
  EXPECT_TRUE(f->tensors().empty());
  check_all_values(*f);
}

TEST(GgufRoundTrip, EveryValueTypeV2) {
  auto bytes = all_values(2).build();
  auto f = GgufFile::parse(bytes.data(), bytes.size(), "v2.gguf");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 2u);
  check_all_values(*f);
}

TEST(GgufRoundTrip, KvsKeepFileOrder) {
  auto bytes = all_values(3).build();
  auto f = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kvs().front().key, "v.u8");
  EXPECT_EQ(f->kvs().back().key, "a.deep");
}

TEST(GgufRoundTrip, WrongTypeNamesKeyAndTypes) {
  auto bytes = all_values(3).build();
  auto f = GgufFile::parse(bytes.data(), bytes.size(), "x.gguf");
  ASSERT_TRUE(f.ok());
  auto s = f->get_u32("v.i32").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("x.gguf"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'v.i32'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("expected uint32, got int32"), std::string::npos) << s.message();
  s = f->get_arr_str("a.f32").status();
  EXPECT_NE(s.message().find("expected array of string, got array of float32"), std::string::npos) << s.message();
  s = f->get_int("v.str").status();
  EXPECT_NE(s.message().find("expected an integer, got string"), std::string::npos) << s.message();
  s = f->get_arr_int("v.u8").status();
  EXPECT_NE(s.message().find("got uint8"), std::string::npos) << s.message();
  s = f->get_int("v.u64").status();  // 1.8e19 > INT64_MAX
  EXPECT_NE(s.message().find("does not fit in int64"), std::string::npos) << s.message();
  s = f->get_str("no.such.key").status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("'no.such.key'"), std::string::npos) << s.message();
  EXPECT_FALSE(f->has("no.such.key"));
  EXPECT_TRUE(f->has("v.u8"));
}

// One tensor of every type loom knows, 3-D and 4-D shapes, custom alignment.
GgufBuilder all_tensors(uint32_t version, uint32_t alignment) {
  GgufBuilder b(version);
  b.alignment(alignment).kv_str("general.architecture", "test");
  b.tensor("f32", {3, 2}, LOOM_TYPE_F32, pattern(24, 1))
      .tensor("f16", {5}, LOOM_TYPE_F16, pattern(10, 2))
      .tensor("bf16", {2, 1, 3}, LOOM_TYPE_BF16, pattern(12, 3))
      .tensor("q4_0", {64, 2}, LOOM_TYPE_Q4_0, pattern(4 * 18, 4))
      .tensor("q8_0", {32, 1, 1, 2}, LOOM_TYPE_Q8_0, pattern(2 * 34, 5))
      .tensor("i32", {7}, LOOM_TYPE_I32, pattern(28, 6))
      .tensor("i64", {1, 2}, LOOM_TYPE_I64, pattern(16, 7))
      .tensor("empty", {0, 4}, LOOM_TYPE_F32, {});
  return b;
}

void check_all_tensors(const GgufFile& f, uint32_t alignment, const std::vector<uint8_t>& bytes) {
  EXPECT_EQ(f.alignment(), alignment);
  EXPECT_EQ(f.data_offset() % alignment, 0u);
  ASSERT_EQ(f.tensors().size(), 8u);
  struct Want {
    const char* name;
    uint32_t type;
    int64_t ne[4];
    uint32_t n_dims;
    uint64_t nbytes;
    uint8_t seed;
  } want[] = {
      {"f32", LOOM_TYPE_F32, {3, 2, 1, 1}, 2, 24, 1},  {"f16", LOOM_TYPE_F16, {5, 1, 1, 1}, 1, 10, 2},
      {"bf16", LOOM_TYPE_BF16, {2, 1, 3, 1}, 3, 12, 3}, {"q4_0", LOOM_TYPE_Q4_0, {64, 2, 1, 1}, 2, 72, 4},
      {"q8_0", LOOM_TYPE_Q8_0, {32, 1, 1, 2}, 4, 68, 5}, {"i32", LOOM_TYPE_I32, {7, 1, 1, 1}, 1, 28, 6},
      {"i64", LOOM_TYPE_I64, {1, 2, 1, 1}, 2, 16, 7},   {"empty", LOOM_TYPE_F32, {0, 4, 1, 1}, 2, 0, 0},
  };
  for (size_t i = 0; i < 8; ++i) {
    SCOPED_TRACE(want[i].name);
    const GgufTensorInfo& t = f.tensors()[i];
    EXPECT_EQ(t.name, want[i].name);
    EXPECT_EQ(t.type, want[i].type);
    EXPECT_EQ(t.n_dims, want[i].n_dims);
    for (int d = 0; d < 4; ++d) EXPECT_EQ(t.ne[d], want[i].ne[d]) << "dim " << d;
    EXPECT_EQ(t.nbytes, want[i].nbytes);
    EXPECT_EQ(t.offset % alignment, 0u);
    EXPECT_EQ(static_cast<const uint8_t*>(t.data), f.image() + f.data_offset() + t.offset);
    EXPECT_LE(f.data_offset() + t.offset + t.nbytes, bytes.size());
    EXPECT_EQ(std::vector<uint8_t>(static_cast<const uint8_t*>(t.data),
                                   static_cast<const uint8_t*>(t.data) + t.nbytes),
              pattern(t.nbytes, want[i].seed));
    EXPECT_EQ(f.find_tensor(want[i].name), &t);
  }
  EXPECT_EQ(f.find_tensor("nope"), nullptr);
  auto missing = f.get_tensor("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("'nope'"), std::string::npos);
}

TEST(GgufRoundTrip, TensorsOfEveryTypeAndAlignment) {
  for (uint32_t version : {2u, 3u}) {
    for (uint32_t alignment : {1u, 8u, 32u, 64u, 4096u}) {
      SCOPED_TRACE("v" + std::to_string(version) + " alignment " + std::to_string(alignment));
      auto bytes = all_tensors(version, alignment).build();
      auto f = GgufFile::parse(bytes.data(), bytes.size());
      ASSERT_TRUE(f.ok()) << f.status().to_string();
      check_all_tensors(*f, alignment, bytes);
    }
  }
}

TEST(GgufRoundTrip, DefaultAlignmentIs32) {
  GgufBuilder b;
  b.tensor("w", {8}, LOOM_TYPE_F32, pattern(32, 9)).tensor("v", {1}, LOOM_TYPE_F32, pattern(4, 1));
  auto bytes = b.build();
  auto f = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset() % 32, 0u);
  EXPECT_EQ(f->tensors()[1].offset, 32u);
}

TEST(GgufRoundTrip, OpenMapsFileAndSurvivesMove) {
  auto bytes = all_tensors(3, 32).build();
  std::string path = ::testing::TempDir() + "/loom_gguf_rt_" + std::to_string(getpid()) + ".gguf";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_TRUE(f->is_mapped());
  EXPECT_EQ(f->name(), path);
  GgufFile moved = std::move(*f);
  EXPECT_EQ(f->tensors().size(), 0u);  // moved-from is empty, not double-unmapped
  check_all_tensors(moved, 32, bytes);
  GgufFile assigned = std::move(moved);
  EXPECT_EQ(*assigned.get_str("general.architecture"), "test");
  std::remove(path.c_str());
}

TEST(GgufRoundTrip, OpenErrors) {
  auto missing = GgufFile::open("/nonexistent/dir/model.gguf");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("[gguf.open] /nonexistent/dir/model.gguf: cannot open"),
            std::string::npos)
      << missing.status().message();
  auto dir = GgufFile::open(::testing::TempDir());
  EXPECT_NE(dir.status().message().find("not a regular file"), std::string::npos) << dir.status().message();
  std::string path = ::testing::TempDir() + "/loom_gguf_empty_" + std::to_string(getpid()) + ".gguf";
  { std::ofstream out(path, std::ios::binary); }
  auto empty = GgufFile::open(path);
  EXPECT_NE(empty.status().message().find("empty file"), std::string::npos) << empty.status().message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace loom
