// The ABI 1.2 weight types in real files: ../shared/models/quant/ holds one
// random-weight model quantized by a widely used GGUF tool to every common
// type, and three of them dequantized back to F32 by the same tool. The
// reader opens every file, and loom's dequantization (plugins/common)
// reproduces the tool's F32 twin tensor by tensor, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/quant.h"
#include "common/type_traits.h"
#include "loom/runtime/gguf.hpp"

#ifndef LOOM_MODELS_DIR_DEFAULT
#define LOOM_MODELS_DIR_DEFAULT "../shared/models"
#endif

namespace loom {
namespace {

std::string quant_dir() {
  const char* env = std::getenv("LOOM_MODELS_DIR");
  return std::string(env && *env ? env : LOOM_MODELS_DIR_DEFAULT) + "/quant";
}

TEST(QuantFiles, EveryTypeOpensAndNamesItsTypes) {
  if (!std::filesystem::exists(quant_dir())) GTEST_SKIP() << quant_dir() << " not found (set LOOM_MODELS_DIR)";
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(quant_dir())) {
    if (e.path().extension() != ".gguf") continue;
    auto f = GgufFile::open(e.path().string());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    ++files;
    for (const auto& t : f->tensors()) {
      ASSERT_TRUE(gguf_tensor_type_known(t.type)) << e.path() << " " << t.name;
      EXPECT_EQ(t.nbytes, common::row_size(static_cast<int32_t>(t.type), t.ne[0]) *
                              static_cast<uint64_t>(t.ne[1] * t.ne[2] * t.ne[3]));
    }
  }
  EXPECT_GE(files, 10);
}

class DequantTwin : public ::testing::TestWithParam<const char*> {};

TEST_P(DequantTwin, MatchesTheToolsF32BitForBit) {
  const std::string base = quant_dir() + "/synth256-" + GetParam();
  if (!std::filesystem::exists(base + ".gguf")) GTEST_SKIP() << base << ".gguf not found";
  auto q = GgufFile::open(base + ".gguf");
  auto twin = GgufFile::open(base + ".deq-f32.gguf");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  ASSERT_TRUE(twin.ok()) << twin.status().to_string();
  int quantized = 0;
  for (const auto& t : q->tensors()) {
    const GgufTensorInfo* r = twin->find_tensor(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    ASSERT_EQ(r->n_elements(), t.n_elements()) << t.name;
    std::vector<float> got(static_cast<size_t>(t.n_elements())), want(got.size());
    common::to_float_row(static_cast<int32_t>(t.type), t.data, got.data(), t.n_elements());
    common::to_float_row(static_cast<int32_t>(r->type), r->data, want.data(), r->n_elements());
    size_t bad = 0, first = got.size();
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
        if (bad++ == 0) first = i;
      }
    }
    EXPECT_EQ(bad, 0u) << t.name << " (" << gguf_tensor_type_name(t.type) << "): " << bad << " of " << got.size()
                       << " differ, first at " << first << ": " << (first < got.size() ? got[first] : 0.0f)
                       << " vs " << (first < got.size() ? want[first] : 0.0f);
    quantized += common::type_traits(static_cast<int32_t>(t.type)).is_quantized;
  }
  EXPECT_GT(quantized, 0);
}

INSTANTIATE_TEST_SUITE_P(Types, DequantTwin, ::testing::Values("iq4_nl", "q2_k", "q3_k_m"));

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// Q4_1, Q5_0 and Q5_1 have no F32 twin in the folder, but the F32 model they
// were quantized from can be made again (the folder's README gives the
// command): every dequantized weight must lie within half a quantization
// step (plus the half-precision rounding of the block's scale and min) of
// the original (a whole step at Q5_0's clamped end). A wrong bit layout
// would miss by many steps.
TEST(QuantFiles, LegacyTypesRoundTheOriginalWeights) {
  const std::string tool = std::string(LOOM_MODELS_DIR_DEFAULT) + "/../tools/make_synth_gguf.py";
  const std::string stories = quant_dir() + "/../stories260K.gguf";
  if (!std::filesystem::exists(tool) || !std::filesystem::exists(stories)) GTEST_SKIP() << tool << " not found";
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3-numpy";
  char tmpl[] = "/tmp/loom-quant-orig-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string orig_path = std::string(tmpl) + "/synth256-f32.gguf";
  const std::string cmd = "/usr/bin/python3 " + tool + " " + orig_path + " --tokenizer-from " + stories +
                          " --dim 256 --layers 4 --heads 8 --kv-heads 2 --ffn 768 --type f32 --seed 11 >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto orig = GgufFile::open(orig_path);
  ASSERT_TRUE(orig.ok()) << orig.status().to_string();
  for (const char* type : {"q4_1", "q5_0", "q5_1"}) {
    const std::string path = quant_dir() + "/synth256-" + type + ".gguf";
    if (!std::filesystem::exists(path)) continue;
    auto q = GgufFile::open(path);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    int checked = 0;
    for (const auto& t : q->tensors()) {
      if (gguf_tensor_type_name(t.type) != std::string(type)) continue;
      const GgufTensorInfo* o = orig->find_tensor(t.name);
      ASSERT_NE(o, nullptr) << t.name;
      const int64_t n = t.n_elements();
      std::vector<float> got(static_cast<size_t>(n));
      common::to_float_row(static_cast<int32_t>(t.type), t.data, got.data(), n);
      const auto* want = static_cast<const float*>(o->data);
      double worst = 0;
      for (int64_t b = 0; b < n / 32; ++b) {
        float lo = want[b * 32], hi = want[b * 32];
        for (int i = 0; i < 32; ++i) lo = std::min(lo, want[b * 32 + i]), hi = std::max(hi, want[b * 32 + i]);
        // Step of the block: range/15 (Q4_1), range/31 (Q5_1), max|x|/16 (Q5_0).
        const double amax = std::max(std::fabs(lo), std::fabs(hi));
        const double step = std::string(type) == "q5_0" ? amax / 16 : (hi - lo) / (type[1] == '4' ? 15 : 31);
        for (int i = 0; i < 32; ++i) {
          const double err = std::fabs(double(got[b * 32 + i]) - want[b * 32 + i]);
          // Q5_0 clamps the far end of the range to 15 steps: up to a whole step there.
          const double steps = std::string(type) == "q5_0" ? 1.0 : 0.5;
          const double allowed = steps * step * 1.01 + 1e-3 * (amax + step * 32) + 1e-7;
          worst = std::max(worst, err / allowed);
        }
      }
      EXPECT_LE(worst, 1.0) << type << " " << t.name;
      ++checked;
    }
    EXPECT_GT(checked, 0) << type;
  }
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace loom
