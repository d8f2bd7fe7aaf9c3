// The serve engine's step-time model and its prompt budget beside decodes
// (llm/serve/step_time.hpp): deterministic, from given step times.
#include "llm/serve/step_time.hpp"

#include <gtest/gtest.h>

namespace loom::llm::serve {
namespace {

TEST(StepTime, FitsFixedAndPerTokenCost) {
  StepTimeModel m;
  EXPECT_FALSE(m.known());
  for (int rep = 0; rep < 3; ++rep) {
    for (int64_t n : {1, 9, 17}) m.add(n, 0.0025 + 0.0005 * static_cast<double>(n));
  }
  ASSERT_TRUE(m.known());
  EXPECT_NEAR(m.per_token_s(), 0.0005, 1e-9);
  EXPECT_NEAR(m.fixed_s(), 0.0025, 1e-9);
}

TEST(StepTime, OneStepSizeIsNotEnoughForASlope) {
  for (int64_t size : {1, 7, 13, 255}) {  // the spread is 0 only up to rounding
    StepTimeModel one;
    for (int i = 0; i < 300; ++i) one.add(size, 0.0013 * static_cast<double>(size) + 0.0007 * (i % 3));
    EXPECT_FALSE(one.known()) << size;
  }
  StepTimeModel m;
  for (int i = 0; i < 10; ++i) m.add(4, 0.004);
  EXPECT_FALSE(m.known());
  // Until the slope is known, the first chunk (a power of two).
  EXPECT_EQ(prefill_budget(m, {4, 1, 256, 2.0}), 8);
  EXPECT_EQ(prefill_budget(m, {4, 1, 256, 2.0}, 12), 8);
  m.add(0, 0.001);  // ignored: no rows
  m.add(5, -1.0);   // ignored: no time
  EXPECT_FALSE(m.known());
}

TEST(StepTime, RecentStepsOutweighOldOnes) {
  StepTimeModel m;
  for (int i = 0; i < 20; ++i) m.add(1 + i % 8, 0.001 * (1 + i % 8));
  for (int i = 0; i < 200; ++i) m.add(1 + i % 8, 0.002 + 0.003 * (1 + i % 8));  // the machine got busy
  EXPECT_NEAR(m.per_token_s(), 0.003, 1e-4);
  EXPECT_NEAR(m.fixed_s(), 0.002, 5e-4);
}

// What the old rule got wrong: it subtracted a decode-only step time learned
// with 1 sequence from steps of 8 decodes + 1 prompt token, charged the
// difference (~9.5 ms) to that one token and so allowed 1 token a step from
// then on; a model over all rows sees 8 decodes + 1 for what it is.
TEST(StepTime, BudgetGrowsWithTheDecodesItRidesBeside) {
  StepTimeModel m;
  for (int i = 0; i < 3; ++i) m.add(1, 0.0030);
  for (int i = 0; i < 20; ++i) m.add(9, 0.0125);
  ASSERT_TRUE(m.known());
  // fixed ~1.8 ms, ~1.19 ms a row: 8 decodes ~11.3 ms alone, room for ~9 more rows at ratio 2.
  EXPECT_EQ(prefill_budget(m, {8, 1, 256, 2.0}), 8);
  EXPECT_EQ(prefill_budget(m, {1, 1, 256, 2.0}), 2);
  EXPECT_EQ(prefill_budget(m, {16, 1, 256, 2.0}), 16);
  EXPECT_EQ(prefill_budget(m, {8, 1, 256, 1.5}), 4);
}

TEST(StepTime, ACrowdOfWaitingPromptsGetsAtLeastItsChunks) {
  StepTimeModel m;
  for (int i = 0; i < 10; ++i) {
    m.add(1, 0.0026);
    m.add(2, 0.0040);
  }
  ASSERT_TRUE(m.known());
  // One fast decode and a short room: 1 token a step for a lone waiter...
  EXPECT_EQ(prefill_budget(m, {1, 1, 256, 2.0}), 1);
  // ...but 15 prompts waiting beside 1 decode take 8 tokens each (120: 64).
  EXPECT_EQ(prefill_budget(m, {1, 15, 256, 2.0}), 64);
  EXPECT_EQ(prefill_budget(m, {1, 15, 256, 2.0}, 8, 16), 128);
  // No floor while as many sequences decode as prompts wait.
  EXPECT_EQ(prefill_budget(m, {15, 15, 256, 2.0}), 8);  // 22.2 ms alone: room for 15 rows
  // Never past the batch.
  EXPECT_EQ(prefill_budget(m, {1, 15, 32, 2.0}), 32);
  EXPECT_EQ(prefill_budget(m, {1, 15, 1, 2.0}), 1);
}

// What a serve run on a Zen 5 showed: 4 decodes beside a prompt in steps of
// 8 and 12 rows (3.3-5.0 ms) and slow 4-row steps: the fitted slope came out
// nearly flat, promised room for ~110 prompt tokens (64 before this rule;
// 128 in that run), and such a step took 28 ms (running streams waited 8x
// their usual gap). A step now grows to at most twice the largest one timed
// lately.
TEST(StepTime, ANearlyFlatSlopeDoesNotPromiseHugeSteps) {
  StepTimeModel m;
  for (double s : {0.0036, 0.0036, 0.0036, 0.0033}) m.add(8, s);
  m.add(4, 0.0040);
  for (double s : {0.0043, 0.0036, 0.0037, 0.0035, 0.0036, 0.0036, 0.0050}) m.add(12, s);
  ASSERT_TRUE(m.known());
  EXPECT_LT(m.per_token_s(), 0.0001);  // the fit: nearly flat
  EXPECT_EQ(prefill_budget(m, {4, 1, 256, 2.0}), 16);  // 2 x 12 - 4 = 20 rows at most
  // Steps of 20 rows timed at the same slope: the reach grows with them.
  for (int i = 0; i < 4; ++i) m.add(20, 0.0041);
  EXPECT_EQ(prefill_budget(m, {4, 1, 256, 2.0}), 32);
  // A crowd still gets its chunks; many decodes may double their own step.
  EXPECT_EQ(prefill_budget(m, {4, 8, 256, 2.0}), 64);
  EXPECT_EQ(prefill_budget(m, {64, 1, 256, 2.0}), 64);
}

TEST(StepTime, PowersOfTwoBelow) {
  EXPECT_EQ(pow2_floor(-3), 1);
  EXPECT_EQ(pow2_floor(1), 1);
  EXPECT_EQ(pow2_floor(2), 2);
  EXPECT_EQ(pow2_floor(37), 32);
  EXPECT_EQ(pow2_floor(64), 64);
  EXPECT_EQ(pow2_floor(255), 128);
}

}  // namespace
}  // namespace loom::llm::serve
