// The 8-bit KV cache (--kv-type q8_0, ABI 1.6's ATTENTION over Q8_0 K and
// V): a tiny llama with 32-wide heads against the double-precision
// reference whose K and V go through Q8_0's rounding (blocks of 32: d =
// max|x| / 127 kept as F16, x -> d * round(x / d)). loom with the 8-bit
// cache lands near that reference and far from the unrounded one (so a
// cache left in F32 or F16, or rounded another way, is caught); the fused
// ATTENTION and the unfused form (which reads the cache through a CPY to
// F32) see the same values and agree as closely as two F32 paths do.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "arch_fixture.hpp"
#include "plugins/common/fp16.h"

namespace loom::llm {
namespace {

ArchSpec wide_heads() {
  ArchSpec s;
  s.n_embd = 64;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.head_dim = 32;  // one Q8_0 block a head
  s.n_ff = 96;
  s.seed = 31;
  return s;
}

// Q8_0's rounding of x in blocks of 32, as the cache stores it (f32 steps,
// the scale kept as F16, ties away from zero).
void round_q8_0(std::vector<double>* x) {
  for (size_t b = 0; b + 32 <= x->size(); b += 32) {
    float amax = 0.0f;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(static_cast<float>((*x)[i])));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const float dh = common::f16_to_f32(common::f32_to_f16(d));
    for (size_t i = b; i < b + 32; ++i) (*x)[i] = dh * std::round(static_cast<float>((*x)[i]) * id);
  }
}

double largest(const std::vector<std::vector<double>>& rows) {
  double m = 0.0;
  for (const auto& row : rows) {
    for (double v : row) m = std::max(m, std::fabs(v));
  }
  return m;
}

// loom's logits with the 8-bit cache (layers where `where` says, or the
// cpu) against the reference rounded like it and the unrounded one.
// tol: relative to the largest logit.
class EightBitCache : public Architectures {
 protected:
  void check_q8(const LoadOptions* where, double tol) {
    const TinyArchModel m(wide_heads());
    auto model = load(m, m.gguf(), where);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const std::vector<std::vector<double>> plain = ReferenceForward(m).logits(prompt());
    ReferenceForward rounding(m);
    rounding.kv_round = round_q8_0;
    const std::vector<std::vector<double>> ref = rounding.logits(prompt());
    const double scale = largest(ref);
    ASSERT_GT(scale, 0.5) << "degenerate logits: the comparison would prove little";
    const auto fused = loom_logits(model->get(), 5, true, LOOM_TYPE_Q8_0);
    const auto unfused = loom_logits(model->get(), 5, false, LOOM_TYPE_Q8_0);
    const auto f16 = loom_logits(model->get(), 5, true, LOOM_TYPE_F16);
    ASSERT_EQ(fused.size(), ref.size());
    ASSERT_EQ(unfused.size(), ref.size());
    const double err = max_abs_diff(fused, ref), err_plain = max_abs_diff(fused, plain);
    const double err_unfused = max_abs_diff(unfused, ref), f16_err = max_abs_diff(f16, ref);
    std::cout << "[ kv q8_0 ] " << (where ? where->devices[0]->name() : "cpu")
              << ": max |loom - reference| rounded like Q8_0 " << err << " (unfused " << err_unfused
              << "), unrounded " << err_plain << "; an F16 cache vs the rounded reference " << f16_err
              << " (logits up to " << scale << ")\n";
    EXPECT_LT(err, tol * scale) << "fused: the 8-bit cache's values are not Q8_0's rounding";
    EXPECT_LT(err_unfused, tol * scale) << "unfused: the 8-bit cache's values are not Q8_0's rounding";
    EXPECT_GT(f16_err, 10 * tol * scale) << "the reference's rounding hardly shows: the comparison would prove little";
  }
};

TEST_F(EightBitCache, OnTheCpuMatchesAReferenceWithItsRounding) { check_q8(nullptr, kTol); }

// Every layer on vulkan0 (when this machine has one; lavapipe counts): its
// plugin writes the cache (SET_ROWS to Q8_0) and, not running ATTENTION over
// it, reads it on the unfused path. GPU f32 sums: a looser bound.
TEST_F(EightBitCache, OnVulkan0MatchesAReferenceWithItsRounding) {
  registry::Device* vk = reg_->device("vulkan0");
  if (vk == nullptr) GTEST_SKIP() << "no vulkan0 here";
  LoadOptions where;
  where.devices = {vk, dev_};
  where.n_gpu_layers = 2;
  check_q8(&where, 2e-4);
}

// Layers shared out over a simulated device and the cpu (SET_ROWS and
// ATTENTION stay on the cpu; the cache of the sim's layer on the host).
TEST_F(EightBitCache, SplitOverASimulatedDeviceMatchesAReferenceWithItsRounding) {
  auto reg = sim_and_cpu();
  if (reg == nullptr) GTEST_SKIP() << "sim plugin not loaded";
  LoadOptions where;
  where.devices = {reg->device("sim0"), reg->device("cpu")};
  where.tensor_split = {1, 1};
  check_q8(&where, kTol);
}

TEST_F(Architectures, EightBitCacheNeedsHeadsInWholeBlocks) {
  const TinyArchModel m(ArchSpec{});  // heads of 8
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  SessionOptions so;
  so.kv_type = LOOM_TYPE_Q8_0;
  auto s = LlamaSession::create(model->get(), so);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("heads are 8 wide"), std::string::npos) << s.status().to_string();
}

}  // namespace
}  // namespace loom::llm
