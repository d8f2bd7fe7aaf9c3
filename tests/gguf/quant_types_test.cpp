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
#include "loom/gguf.hpp"

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
