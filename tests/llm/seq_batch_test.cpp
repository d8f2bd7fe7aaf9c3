// Several sequences in one session (SessionOptions::n_seq, eval_seqs) on
// stories260K: prompts read together in one batch and decoded together give
// each sequence the logits and greedy tokens it gets alone; a prompt read in
// chunks beside running decodes; a prefix copied between slots; one graph
// per batch shape; bad batches refused. On cpu and vulkan0 (lavapipe
// counts), with the fused ATTENTION (the ranges form where the device runs
// it) and the unfused masked form.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/llama_session.hpp"
#include "llm/session/sampling.hpp"
#include "llm_test_util.hpp"
#include "loom/registry/registry.hpp"

namespace loom::llm {
namespace {

using test::stories_path;

const char* const kPrompts[] = {"Once upon a time", "The dog ran to the park and", "Lily saw a big red ball. She",
                                "Tim"};

class SeqBatch : public ::testing::TestWithParam<std::tuple<const char*, bool>> {
 protected:
  void SetUp() override {
    const std::string path = stories_path();
    if (!std::ifstream(path).good()) {
      GTEST_SKIP() << path << " not found (set LOOM_MODELS_DIR to the folder holding stories260K.gguf)";
    }
    registry::Options o;
    o.paths = {LOOM_TEST_PLUGIN_DIR};
    o.use_env = false;
    reg_ = registry::Registry::load(o);
    dev_ = reg_->device(std::get<0>(GetParam()));
    if (dev_ == nullptr) GTEST_SKIP() << "no device " << std::get<0>(GetParam()) << " here";
    auto m = LlamaModel::load(path, dev_);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    auto t = Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::make_unique<Tokenizer>(std::move(t).value());
    n_vocab_ = model_->hparams().n_vocab;
  }

  std::unique_ptr<LlamaSession> session(int32_t n_seq, int64_t n_ctx = 128) {
    SessionOptions o;
    o.n_ctx = n_ctx;
    o.n_seq = n_seq;
    o.n_batch = 64;
    o.fused_attention = std::get<1>(GetParam());
    auto s = LlamaSession::create(model_.get(), o);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  // The prompt alone in a one-slot session: its last token's logits and the
  // greedy tokens after it.
  void solo(const std::vector<TokenId>& prompt, int n_gen, std::vector<float>* last_logits,
            std::vector<TokenId>* gen) {
    auto s = session(1);
    ASSERT_NE(s, nullptr);
    std::vector<float> logits;
    ASSERT_TRUE(s->eval(prompt, false, &logits).ok());
    *last_logits = logits;
    for (int i = 0; i < n_gen; ++i) {
      const TokenId next = argmax(logits.data(), static_cast<int32_t>(n_vocab_));
      gen->push_back(next);
      ASSERT_TRUE(s->eval({next}, false, &logits).ok());
    }
  }

  // Largest |a - b| over the row, relative to the row's largest |b|.
  static double rel_diff(const float* a, const float* b, int64_t n) {
    double d = 0, m = 1e-6;
    for (int64_t i = 0; i < n; ++i) {
      d = std::max(d, static_cast<double>(std::fabs(a[i] - b[i])));
      m = std::max(m, static_cast<double>(std::fabs(b[i])));
    }
    return d / m;
  }

  std::unique_ptr<registry::Registry> reg_;
  registry::Device* dev_ = nullptr;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
  int64_t n_vocab_ = 0;
};

TEST_P(SeqBatch, PromptsTogetherGiveEachItsOwnLogitsAndTokens) {
  constexpr int kGen = 24;
  const int n = 4;
  std::vector<std::vector<TokenId>> prompts, want_gen(n);
  std::vector<std::vector<float>> want_logits(n);
  for (int i = 0; i < n; ++i) {
    prompts.push_back(tok_->encode_prompt(kPrompts[i]));
    solo(prompts[static_cast<size_t>(i)], kGen, &want_logits[static_cast<size_t>(i)], &want_gen[static_cast<size_t>(i)]);
  }
  auto s = session(n);
  ASSERT_NE(s, nullptr);
  // Every prompt in one batch, in slots 3, 1, 0, 2 (not the order of ids).
  const int slot_of[] = {3, 1, 0, 2};
  std::vector<SeqToken> batch;
  for (int i = 0; i < n; ++i) {
    const auto& p = prompts[static_cast<size_t>(i)];
    for (size_t j = 0; j < p.size(); ++j) {
      batch.push_back({p[j], slot_of[i], static_cast<int32_t>(j), j + 1 == p.size()});
    }
  }
  std::vector<float> logits;
  Status st = s->eval_seqs(batch, &logits);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_EQ(logits.size(), static_cast<size_t>(n * n_vocab_));
  for (int i = 0; i < n; ++i) {
    EXPECT_LT(rel_diff(logits.data() + i * n_vocab_, want_logits[static_cast<size_t>(i)].data(), n_vocab_), 1e-3)
        << "prompt " << i;
  }
  // Decode all four together; each gets its solo greedy tokens.
  std::vector<std::vector<TokenId>> got(n);
  for (int step = 0; step < kGen; ++step) {
    batch.clear();
    for (int i = 0; i < n; ++i) {
      const TokenId next = argmax(logits.data() + i * n_vocab_, static_cast<int32_t>(n_vocab_));
      got[static_cast<size_t>(i)].push_back(next);
      const auto pos = static_cast<int32_t>(prompts[static_cast<size_t>(i)].size() + static_cast<size_t>(step));
      batch.push_back({next, slot_of[i], pos, true});
    }
    st = s->eval_seqs(batch, &logits);
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  for (int i = 0; i < n; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], want_gen[static_cast<size_t>(i)]) << "prompt " << i;
  // Decode steps of one shape built one graph.
  EXPECT_EQ(s->steps_built(), 2u);
}

// A long prompt read in chunks of 5 beside two running decodes: every
// sequence still gets its solo tokens.
TEST_P(SeqBatch, ChunkedPromptBesideRunningDecodes) {
  constexpr int kGen = 16;
  const std::vector<TokenId> a = tok_->encode_prompt(kPrompts[0]);
  const std::vector<TokenId> b = tok_->encode_prompt(kPrompts[2]);
  std::vector<float> la, lb;
  std::vector<TokenId> ga, gb;
  solo(a, kGen, &la, &ga);
  solo(b, kGen, &lb, &gb);
  ASSERT_GT(b.size(), 10u);
  auto s = session(2);
  ASSERT_NE(s, nullptr);
  std::vector<float> logits;
  std::vector<SeqToken> batch;
  for (size_t j = 0; j < a.size(); ++j) batch.push_back({a[j], 0, static_cast<int32_t>(j), j + 1 == a.size()});
  ASSERT_TRUE(s->eval_seqs(batch, &logits).ok());
  std::vector<TokenId> got_a, got_b;
  TokenId next_a = argmax(logits.data(), static_cast<int32_t>(n_vocab_));
  size_t b_read = 0;
  TokenId next_b = -1;
  for (int step = 0; got_a.size() < kGen || got_b.size() < kGen; ++step) {
    batch.clear();
    if (got_a.size() < kGen) {
      got_a.push_back(next_a);
      batch.push_back({next_a, 0, static_cast<int32_t>(a.size() + got_a.size() - 1), true});
    }
    if (b_read < b.size()) {
      const size_t end = std::min(b.size(), b_read + 5);
      for (size_t j = b_read; j < end; ++j) batch.push_back({b[j], 1, static_cast<int32_t>(j), j + 1 == b.size()});
      b_read = end;
    } else if (got_b.size() < kGen) {
      got_b.push_back(next_b);
      batch.push_back({next_b, 1, static_cast<int32_t>(b.size() + got_b.size() - 1), true});
    }
    Status st = s->eval_seqs(batch, &logits);
    ASSERT_TRUE(st.ok()) << st.to_string();
    size_t row = 0;
    for (const SeqToken& t : batch) {
      if (!t.logits) continue;
      const TokenId best = argmax(logits.data() + row * n_vocab_, static_cast<int32_t>(n_vocab_));
      (t.seq == 0 ? next_a : next_b) = best;
      ++row;
    }
  }
  EXPECT_EQ(got_a, ga);
  EXPECT_EQ(got_b, gb);
}

// A prefix computed in slot 0 and copied into slot 2 continues there as if
// computed there.
TEST_P(SeqBatch, CopiedPrefixContinuesAsComputed) {
  const std::vector<TokenId> p = tok_->encode_prompt(kPrompts[1]);
  std::vector<float> want;
  std::vector<TokenId> gen;
  solo(p, 0, &want, &gen);
  auto s = session(3);
  ASSERT_NE(s, nullptr);
  std::vector<SeqToken> batch;
  for (size_t j = 0; j + 1 < p.size(); ++j) batch.push_back({p[j], 0, static_cast<int32_t>(j), j + 2 == p.size()});
  std::vector<float> logits;
  ASSERT_TRUE(s->eval_seqs(batch, &logits).ok());
  const auto n_prefix = static_cast<int64_t>(p.size() - 1);
  Status st = s->copy_seq(0, 2, n_prefix);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_TRUE(s->eval_seqs({{p.back(), 2, static_cast<int32_t>(n_prefix), true}}, &logits).ok());
  EXPECT_LT(rel_diff(logits.data(), want.data(), n_vocab_), 1e-3);
  // Slot 1 never got the prefix: the same last token there sees nothing before it.
  ASSERT_TRUE(s->eval_seqs({{p.back(), 1, static_cast<int32_t>(n_prefix), true}}, &logits).ok());
  EXPECT_GT(rel_diff(logits.data(), want.data(), n_vocab_), 1e-2);
  EXPECT_EQ(s->copy_seq(0, 3, 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->copy_seq(0, 1, 129).code(), StatusCode::kInvalidArgument);
}

TEST_P(SeqBatch, BadBatchesAreRefusedAndNothingRuns) {
  auto s = session(2, 32);
  ASSERT_NE(s, nullptr);
  std::vector<float> logits;
  auto code = [&](const std::vector<SeqToken>& b) { return s->eval_seqs(b, &logits).code(); };
  EXPECT_EQ(code({}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1, 2, 0, true}}), StatusCode::kInvalidArgument);   // slot 2 of 2
  EXPECT_EQ(code({{1, -1, 0, true}}), StatusCode::kInvalidArgument);  // slot -1
  EXPECT_EQ(code({{1, 0, 32, true}}), StatusCode::kInvalidArgument);  // position past the slot's context
  EXPECT_EQ(code({{static_cast<TokenId>(n_vocab_), 0, 0, true}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1, 0, 3, false}, {1, 0, 3, true}}), StatusCode::kInvalidArgument);  // (0, 3) twice
  EXPECT_EQ(code({{1, 0, 0, false}}), StatusCode::kInvalidArgument);  // no logits asked for
  std::vector<SeqToken> big;
  for (int32_t j = 0; j < 65; ++j) big.push_back({1, j % 2, j / 2, true});
  EXPECT_EQ(code(big), StatusCode::kInvalidArgument);  // over n_batch 64
  EXPECT_EQ(s->steps(), 0u);
  EXPECT_TRUE(s->eval_seqs({{1, 1, 0, true}}, &logits).ok());
}

// Two live sessions of one model: only the newest runs (an older one's
// rollback would destroy the newer one's cache), the older one's calls are
// UNAVAILABLE by name and touch nothing; freed newest first or oldest
// first, what is left decodes as before. (The guard's regression: an older
// session run beside a newer one failed with an unrelated node error.)
TEST_P(SeqBatch, OnlyTheNewestLiveSessionRuns) {
  const std::vector<TokenId> prompt = tok_->encode_prompt(kPrompts[0]);
  std::vector<float> want, got;
  {
    auto solo = session(1);
    ASSERT_NE(solo, nullptr);
    ASSERT_TRUE(solo->eval(prompt, false, &want).ok());
  }
  for (bool newer_freed_first : {true, false}) {
    SCOPED_TRACE(newer_freed_first ? "newer freed first" : "older freed first");
    auto older = session(1);
    ASSERT_NE(older, nullptr);
    ASSERT_TRUE(older->eval({prompt[0]}, false, &got).ok());
    auto newer = session(2);
    ASSERT_NE(newer, nullptr);
    for (const Status& st : {older->eval(prompt, false, &got), older->eval_seqs({{1, 0, 1, true}}, &got),
                             older->copy_seq(0, 0, 0), older->plan(1, PlanDetail::kNodes, PlanFormat::kDot).status()}) {
      EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.to_string();
      EXPECT_NE(st.message().find("a newer session of this model is alive"), std::string::npos) << st.to_string();
    }
    ASSERT_TRUE(newer->eval(prompt, false, &got).ok());
    EXPECT_LT(rel_diff(got.data(), want.data(), n_vocab_), 1e-4);
    if (newer_freed_first) {
      newer.reset();
      // The older one goes on from its one token.
      ASSERT_TRUE(older->eval(std::vector<TokenId>(prompt.begin() + 1, prompt.end()), false, &got).ok());
      EXPECT_LT(rel_diff(got.data(), want.data(), n_vocab_), 1e-4);
    } else {
      older.reset();
      newer->reset();
      ASSERT_TRUE(newer->eval(prompt, false, &got).ok());
      EXPECT_LT(rel_diff(got.data(), want.data(), n_vocab_), 1e-4);
      newer.reset();
      auto again = session(1);
      ASSERT_NE(again, nullptr);
      ASSERT_TRUE(again->eval(prompt, false, &got).ok());
      EXPECT_LT(rel_diff(got.data(), want.data(), n_vocab_), 1e-4);
    }
  }
}

std::string name(const ::testing::TestParamInfo<std::tuple<const char*, bool>>& i) {
  return std::string(std::get<0>(i.param)) + (std::get<1>(i.param) ? "_fused" : "_unfused");
}

INSTANTIATE_TEST_SUITE_P(Devices, SeqBatch,
                         ::testing::Combine(::testing::Values("cpu", "vulkan0"), ::testing::Bool()), name);

}  // namespace
}  // namespace loom::llm
