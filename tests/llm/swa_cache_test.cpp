// The bounded KV cache of sliding-window layers (llm/session/kv_cache.hpp,
// kv_window.hpp): tiny gemma2 / gemma3 models generating well past several
// windows give the logits of the unbounded layout (SessionOptions::window_kv
// false) on the cpu, on vulkan0 and split over a simulated device; the KV
// bytes (session and fit) shrink by the expected amount; sequence slots,
// prefix copies and rewinds keep to the window's rules.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "arch_fixture.hpp"
#include "llm/placement/fit.hpp"
#include "llm/session/kv_cache.hpp"
#include "loom/runtime/types.hpp"

namespace loom::llm {
namespace {

// Gemma 2 with a window of 8: layers 0 and 2 local, 1 and 3 global.
ArchSpec gemma2_w8() {
  ArchSpec s = gemma2_spec(8, 21);
  s.n_ctx = 256;
  return s;
}

// Gemma 3 with a window of 8: layers 0-4 local, 5 global (gemma3's period
// of 6); Q/K norms, its own local RoPE base.
ArchSpec gemma3_w8() {
  ArchSpec s = gemma3_spec(8, 22);
  s.n_ctx = 256;
  return s;
}

constexpr int64_t kBatch = 5;  // window rows 8 + max(5, 8/4) = 13 per slot
constexpr int64_t kWindowRows = 13;

std::vector<TokenId> prompt37() {
  std::vector<TokenId> p;
  for (int i = 0; i < 37; ++i) p.push_back(static_cast<TokenId>(1 + (i * 7 + 3) % 39));
  return p;
}

TokenId argmax(const float* row, int64_t n) { return static_cast<TokenId>(std::max_element(row, row + n) - row); }

// Rows of logits, the largest |a - b| relative to the largest |b|.
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0.0, scale = 1.0;
  for (size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return d / scale;
}

class SwaCache : public Architectures {
 protected:
  std::unique_ptr<LlamaSession> session(LlamaModel* m, bool window, bool fused, int32_t n_seq = 1) const {
    SessionOptions so;
    so.n_batch = kBatch;
    so.n_seq = n_seq;
    so.kv_type = kv_type_;
    so.fused_attention = fused;
    so.window_kv = window;
    auto s = LlamaSession::create(m, so);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  // Greedy: the prompt (last logits only: the pipelined path on a split),
  // then n_gen single-token steps; the tokens and each step's logits.
  static void generate(LlamaSession& s, int n_gen, std::vector<TokenId>* tokens, std::vector<float>* rows) {
    const int64_t n_vocab = s.model().hparams().n_vocab;
    std::vector<float> logits;
    *tokens = prompt37();
    const Status first = s.eval(*tokens, false, &logits);
    ASSERT_TRUE(first.ok()) << first.to_string();
    rows->assign(logits.begin(), logits.end());
    for (int i = 0; i < n_gen; ++i) {
      tokens->push_back(argmax(logits.data(), n_vocab));
      const Status st = s.eval({tokens->back()}, false, &logits);
      ASSERT_TRUE(st.ok()) << st.to_string();
      rows->insert(rows->end(), logits.begin(), logits.end());
    }
  }

  // Every position's logits of `tokens`, fed in chunks of 1..7 tokens
  // (chunks longer than the batch are cut by eval: they straddle moves).
  static std::vector<float> chunked(LlamaSession& s, const std::vector<TokenId>& tokens) {
    static const size_t kChunks[] = {4, 1, 1, 3, 7, 1, 2, 6};
    std::vector<float> all, logits;
    for (size_t at = 0, c = 0; at < tokens.size(); ++c) {
      const size_t len = std::min(kChunks[c % 8], tokens.size() - at);
      const std::vector<TokenId> part(tokens.begin() + static_cast<std::ptrdiff_t>(at),
                                      tokens.begin() + static_cast<std::ptrdiff_t>(at + len));
      const Status st = s.eval(part, true, &logits);
      EXPECT_TRUE(st.ok()) << st.to_string();
      if (!st.ok()) return {};
      all.insert(all.end(), logits.begin(), logits.end());
      at += len;
    }
    return all;
  }

  // The cache's type in session() (F16 rows move through GET_ROWS to F32
  // and SET_ROWS back exactly).
  loom_type_t kv_type_ = LOOM_TYPE_F32;

  // The windowed layout against the unbounded one on the model at `where`
  // (nullptr: the cpu): greedy tokens equal, logits within tol, every
  // position's logits within tol when fed in chunks.
  // kv_on: the device layer 0's cache must live on (nullptr: not checked).
  void compare(const ArchSpec& spec, const LoadOptions* where, double tol, std::vector<bool> forms = {true, false},
               registry::Device* kv_on = nullptr) {
    SCOPED_TRACE(spec.arch);
    const TinyArchModel m(spec);
    auto model = load(m, m.gguf(), where);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    for (bool fused : forms) {
      SCOPED_TRACE(fused ? "fused" : "unfused");
      std::vector<TokenId> want, got;
      std::vector<float> want_rows, got_rows;
      {
        auto full = session(model->get(), false, fused);
        ASSERT_TRUE(full);
        EXPECT_FALSE(full->kv_cache().windowed());
        generate(*full, 110, &want, &want_rows);
      }
      auto win = session(model->get(), true, fused);
      ASSERT_TRUE(win);
      ASSERT_TRUE(win->kv_cache().windowed());
      if (kv_on != nullptr) {
        EXPECT_EQ(win->kv_device(0), kv_on);
      }
      EXPECT_EQ(win->kv_cache().window_rows(), kWindowRows);
      generate(*win, 110, &got, &got_rows);
      // Over two devices the prompt went through pipelined micro-batches (groups cut at the moves).
      if (win->pipeline() > 1) {
        EXPECT_GT(win->pipelined_batches(), 0u);
      }
      EXPECT_EQ(got, want) << "greedy tokens differ";
      EXPECT_LT(rel_diff(got_rows, want_rows), tol);
      // 147 positions through 13 rows: the rows moved many times.
      EXPECT_GT(win->kv_cache().base(0), 120);
      std::vector<float> a, b;
      {
        auto full = session(model->get(), false, fused);
        ASSERT_TRUE(full);
        b = chunked(*full, want);
      }
      win->reset();
      EXPECT_EQ(win->kv_cache().base(0), 0);
      a = chunked(*win, want);
      ASSERT_EQ(a.size(), b.size());
      ASSERT_EQ(a.size(), want.size() * static_cast<size_t>(spec.n_vocab));
      EXPECT_LT(rel_diff(a, b), tol) << "chunked prefill and decode";
    }
  }
};

TEST_F(SwaCache, Gemma2WindowedMatchesUnboundedOnCpu) {
  compare(gemma2_w8(), nullptr, kTol);
  // F16 rows: the sums over a different number of masked rows round apart a little more.
  kv_type_ = LOOM_TYPE_F16;
  compare(gemma2_w8(), nullptr, 1e-4, {true});
}
TEST_F(SwaCache, Gemma3WindowedMatchesUnboundedOnCpu) { compare(gemma3_w8(), nullptr, kTol); }

TEST_F(SwaCache, WindowedMatchesUnboundedOnVulkan0) {
  registry::Device* vk = reg_->device("vulkan0");
  if (vk == nullptr) GTEST_SKIP() << "no vulkan0 here";
  LoadOptions where;
  where.devices = {vk, dev_};
  where.n_gpu_layers = 99;
  for (const ArchSpec& spec : {gemma2_w8(), gemma3_w8()}) compare(spec, &where, 1e-4, {true}, vk);
  kv_type_ = LOOM_TYPE_F16;
  compare(gemma3_w8(), &where, 1e-4, {true}, vk);
}

TEST_F(SwaCache, WindowedMatchesUnboundedSplitOverASimulatedDevice) {
  auto reg = sim_and_cpu();
  if (reg == nullptr) GTEST_SKIP() << "sim plugin not loaded";
  LoadOptions where;
  where.devices = {reg->device("sim0"), reg->device("cpu")};
  where.tensor_split = {1, 1};
  for (const ArchSpec& spec : {gemma2_w8(), gemma3_w8()}) compare(spec, &where, kTol, {true});
}

// KV bytes: local layers hold kWindowRows rows per slot instead of n_ctx,
// in the session's cache and in the fit's report alike.
TEST_F(SwaCache, KvBytesShrinkByTheWindowRule) {
  const ArchSpec spec = gemma2_w8();  // 2 local, 2 global layers
  const TinyArchModel m(spec);
  auto model = load(m);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const int64_t kv_dim = spec.n_head_kv * spec.hd();
  for (int32_t n_seq : {1, 3}) {
    SessionOptions so;
    so.n_batch = kBatch;
    so.n_seq = n_seq;
    so.n_ctx = 128;
    so.kv_type = LOOM_TYPE_F16;
    EXPECT_EQ(KvCache::window_rows(8, kBatch, so.n_ctx), kWindowRows);
    const uint64_t row = 2 * type_row_size(LOOM_TYPE_F16, kv_dim);  // K and V
    const uint64_t full = 4 * row * 128 * static_cast<uint64_t>(n_seq);
    const uint64_t bounded = (2 * row * 128 + 2 * row * kWindowRows) * static_cast<uint64_t>(n_seq);
    for (bool window : {false, true}) {
      so.window_kv = window;
      auto s = LlamaSession::create(model->get(), so);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      EXPECT_EQ((*s)->kv_cache().tensor_bytes(), window ? bounded : full) << n_seq << " slots";
      EXPECT_GE((*s)->kv_cache().bytes(), (*s)->kv_cache().tensor_bytes());
      FitRequest f;
      f.devices = {dev_};
      f.n_gpu_layers = 0;
      const LoadOptions::FitSession fs = fit_session(so);
      f.n_ctx = fs.n_ctx;
      f.n_batch = fs.n_batch;
      f.kv_type = fs.kv_type;
      f.n_seq = fs.n_seq;
      f.window_kv = fs.window_kv;
      auto plan = fit_model(path_, f);
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      EXPECT_EQ(plan->devices[0].kv, window ? bounded : full) << "fit, " << n_seq << " slots";
    }
  }
  // A window as large as the context: nothing to bound.
  SessionOptions so;
  so.n_ctx = 12;
  so.n_batch = kBatch;
  auto s = LlamaSession::create(model->get(), so);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE((*s)->kv_cache().windowed());
}

// A model without a window: one layout whatever window_kv says.
TEST_F(SwaCache, ModelsWithoutAWindowKeepTheirLayout) {
  ArchSpec spec;
  spec.arch = "llama";
  const TinyArchModel m(spec);
  auto model = load(m);
  ASSERT_TRUE(model.ok());
  auto s = session(model->get(), true, true);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->kv_cache().windowed());
  EXPECT_EQ(s->kv_cache().tensor_bytes(), 2u * 2u * 4u * static_cast<size_t>(spec.n_head_kv * spec.hd()) * 64u);
}

}  // namespace
}  // namespace loom::llm

namespace loom::llm {
namespace {

// Three sequences in the slots of one windowed cache, stepped together (a
// decode beside prompt chunks, as the server does), each matching its own
// single-sequence run on the unbounded layout; a prefix copied from a slot
// whose rows moved on continues as the original; a rewind below the rows
// kept is refused, a restart from position 0 is not.
TEST_F(SwaCache, SequenceSlotsMatchSingleSequences) {
  for (const ArchSpec& spec : {gemma2_w8(), gemma3_w8()}) {
    SCOPED_TRACE(spec.arch);
    const TinyArchModel m(spec);
    auto model = load(m);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const auto n_vocab = static_cast<size_t>(spec.n_vocab);
    constexpr int32_t kLen = 60;
    std::vector<std::vector<TokenId>> toks(3);
    std::vector<std::vector<float>> ref(3);
    for (size_t q = 0; q < 3; ++q) {
      for (int32_t p = 0; p < kLen + 10; ++p) toks[q].push_back(static_cast<TokenId>(1 + (p * (3 + 2 * q) + q) % 39));
      auto full = session(model->get(), false, true);
      ASSERT_TRUE(full);
      ASSERT_TRUE(full->eval(toks[q], true, &ref[q]).ok());
    }
    auto s = session(model->get(), true, true, 3);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->kv_cache().windowed());
    auto expect_rows = [&](const std::vector<SeqToken>& batch, const std::vector<float>& logits) {
      size_t row = 0;
      for (const SeqToken& b : batch) {
        if (!b.logits) continue;
        const auto q = static_cast<size_t>(b.seq);
        const std::vector<float> got(logits.begin() + static_cast<std::ptrdiff_t>(row * n_vocab),
                                     logits.begin() + static_cast<std::ptrdiff_t>((row + 1) * n_vocab));
        const std::vector<float> want(ref[q].begin() + static_cast<std::ptrdiff_t>(b.pos * n_vocab),
                                      ref[q].begin() + static_cast<std::ptrdiff_t>((b.pos + 1) * n_vocab));
        EXPECT_LT(rel_diff(got, want), kTol) << "sequence " << b.seq << " position " << b.pos;
        ++row;
      }
    };
    // Per step: sequence 0 one token, 1 and 2 two each (2 starts later).
    int32_t at[3] = {0, 0, -6};
    const int32_t take[3] = {1, 2, 2};
    std::vector<float> logits;
    while (at[0] < kLen || at[1] < kLen || at[2] < kLen) {
      std::vector<SeqToken> batch;
      for (int32_t q = 0; q < 3; ++q) {
        if (at[q] < 0) {
          ++at[q];
          continue;
        }
        for (int32_t k = 0; k < take[q] && at[q] < kLen; ++k, ++at[q]) {
          batch.push_back({toks[static_cast<size_t>(q)][static_cast<size_t>(at[q])], q, at[q], k % 2 == 0 || q == 0});
        }
      }
      const Status st = s->eval_seqs(batch, &logits);
      ASSERT_TRUE(st.ok()) << st.to_string();
      expect_rows(batch, logits);
    }
    for (int32_t q = 0; q < 3; ++q) EXPECT_GT(s->kv_cache().base(q), kLen - 14) << "slot " << q;
    // The window before 10 is gone from slot 0; the one before 60 is there.
    EXPECT_EQ(s->reusable_prefix(0, 10), 0);
    EXPECT_EQ(s->reusable_prefix(0, kLen), kLen);
    const Status gone = s->copy_seq(0, 2, 10);
    EXPECT_EQ(gone.code(), StatusCode::kInvalidArgument) << gone.to_string();
    // Slot 1 takes slot 0's prefix [0, 60) and continues it as slot 0 would.
    ASSERT_TRUE(s->copy_seq(0, 1, kLen).ok());
    for (int32_t p = kLen; p < kLen + 10; ++p) {
      const std::vector<SeqToken> batch = {{toks[0][static_cast<size_t>(p)], 1, p, true}};
      ASSERT_TRUE(s->eval_seqs(batch, &logits).ok());
      const std::vector<float> want(ref[0].begin() + static_cast<std::ptrdiff_t>(p * n_vocab),
                                    ref[0].begin() + static_cast<std::ptrdiff_t>((p + 1) * n_vocab));
      EXPECT_LT(rel_diff(logits, want), kTol) << "copied prefix, position " << p;
    }
    // Rewinding slot 0 to position 10 needs keys it no longer holds.
    const Status rewind = s->eval_seqs({{toks[0][10], 0, 10, true}}, &logits);
    EXPECT_EQ(rewind.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(rewind.message().find("again from position 0"), std::string::npos) << rewind.message();
    // Starting over at 0 needs none.
    std::vector<SeqToken> restart;
    for (int32_t p = 0; p < 5; ++p) restart.push_back({toks[2][static_cast<size_t>(p)], 0, p, true});
    ASSERT_TRUE(s->eval_seqs(restart, &logits).ok());
    std::vector<float> want(ref[2].begin(), ref[2].begin() + static_cast<std::ptrdiff_t>(5 * n_vocab));
    EXPECT_LT(rel_diff(logits, want), kTol) << "restart";
  }
}

}  // namespace
}  // namespace loom::llm
