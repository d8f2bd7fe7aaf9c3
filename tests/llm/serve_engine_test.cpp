// The serving engine (llm/serve) on stories260K over the cpu: a greedy
// completion equals llm::generate's text (what `loom run` prints); eight
// requests at once each get their solo text; a shared prompt prefix is
// reused, not recomputed; stop strings, max_tokens and the context end
// finish a request with the right reason; cancel frees the slot; a full
// queue, a prompt past the context and a request after shutdown are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/serve/completion_text.hpp"
#include "llm/serve/llama_engine.hpp"
#include "llm/session/generate.hpp"
#include "llm/session/llama_session.hpp"
#include "llm_test_util.hpp"
#include "tiny_llama.hpp"
#include "loom/registry/registry.hpp"

namespace loom::llm::serve {
namespace {

using namespace std::chrono_literals;

struct Reply {
  std::string text;
  CompletionEvent done;
  int events = 0;
  std::vector<llm::serve::TokenLogprob> logprobs;  // every event's, in order
};

// Every event of a stream until its done event (at most `limit`).
Reply collect(Stream& s, std::chrono::milliseconds limit = 60s) {
  Reply r;
  const auto end = std::chrono::steady_clock::now() + limit;
  CompletionEvent ev;
  while (std::chrono::steady_clock::now() < end) {
    if (!s.next(&ev, 100ms)) continue;
    ++r.events;
    r.text += ev.text;
    r.logprobs.insert(r.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
    if (ev.done) {
      r.done = ev;
      return r;
    }
  }
  ADD_FAILURE() << "no done event within the limit";
  return r;
}

// A system prompt two requests share.
constexpr char kSystem[] =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.";

class ServeEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test::stories_path();
    if (!std::ifstream(path_).good()) {
      GTEST_SKIP() << path_ << " not found (set LOOM_MODELS_DIR to the folder holding stories260K.gguf)";
    }
    registry::Options o;
    o.paths = {LOOM_TEST_PLUGIN_DIR};
    o.use_env = false;
    reg_ = registry::Registry::load(o);
    dev_ = reg_->device("cpu");
    ASSERT_NE(dev_, nullptr);
  }

  std::unique_ptr<Engine> engine(int32_t slots, int64_t n_ctx) {
    EngineOptions o;
    o.slots = slots;
    o.n_ctx = n_ctx;
    return engine(o);
  }
  std::unique_ptr<Engine> engine(EngineOptions o) {
    auto m = LlamaModel::load(path_, dev_);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    if (!m.ok()) return nullptr;
    auto e = make_llama_engine(std::move(m).value(), "stories260K.gguf", o);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return e.ok() ? std::move(e).value() : nullptr;
  }

  // llm::generate's greedy text for the prompt (loom run's path).
  std::string solo_text(const std::string& prompt, int n) {
    auto m = LlamaModel::load(path_, dev_);
    EXPECT_TRUE(m.ok());
    auto tok = Tokenizer::from_gguf((*m)->file());
    SessionOptions so;
    so.n_ctx = 256;
    auto s = LlamaSession::create(m->get(), so);
    EXPECT_TRUE(s.ok());
    GenerateOptions g;
    g.n_predict = n;
    auto r = generate(**s, *tok, prompt, g);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    s->reset();
    return r.ok() ? r->text : std::string();
  }

  static CompletionRequest request(const Engine& e, const std::string& prompt, int max_tokens) {
    CompletionRequest r;
    r.prompt = e.tokenizer().encode_prompt(prompt);
    r.max_tokens = max_tokens;
    return r;
  }

  std::string path_;
  std::unique_ptr<registry::Registry> reg_;
  registry::Device* dev_ = nullptr;
};

TEST_F(ServeEngine, GreedyTextEqualsGenerate) {
  const std::string want = solo_text("Once upon a time", 40);
  EngineOptions o;
  o.slots = 2;
  o.n_ctx = 256;
  auto e = engine(o);
  ASSERT_NE(e, nullptr);
  auto s = e->submit(request(*e, "Once upon a time", 40));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const Reply r = collect(**s);
  EXPECT_EQ(r.text, want);
  EXPECT_EQ(r.done.finish, FinishReason::kLength);
  EXPECT_EQ(r.done.completion_tokens, 40);
  EXPECT_EQ(r.done.prompt_tokens, static_cast<int64_t>(e->tokenizer().encode_prompt("Once upon a time").size()));
  EXPECT_GT(r.events, 5);  // streamed in pieces
  EXPECT_EQ(e->model_id(), "stories260K.gguf");
  EXPECT_EQ(e->n_ctx_per_slot(), 256);
}

// Logprobs: one entry per generated token, the log-softmax of the logits a
// session gives at that position (computed here in double), the greedy
// token the most likely of its `top`, sorted, each <= 0.
TEST_F(ServeEngine, LogprobsAreTheModelsLogSoftmax) {
  auto e = engine(2, 256);
  ASSERT_NE(e, nullptr);
  CompletionRequest req = request(*e, "Once upon a time", 12);
  req.sampling.temperature = 0.0f;
  req.logprobs = 3;
  auto s = e->submit(req);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const Reply r = collect(**s);
  ASSERT_EQ(r.logprobs.size(), 12u);
  // The same positions through a session of the same model.
  auto m = LlamaModel::load(path_, dev_);
  ASSERT_TRUE(m.ok());
  SessionOptions so;
  so.n_ctx = 256;
  auto sess = LlamaSession::create(m->get(), so);
  ASSERT_TRUE(sess.ok());
  std::vector<TokenId> seq = req.prompt;
  std::vector<float> logits;
  ASSERT_TRUE((*sess)->eval(seq, false, &logits).ok());
  for (const llm::serve::TokenLogprob& t : r.logprobs) {
    double mx = logits[0];
    for (float v : logits) mx = std::max<double>(mx, v);
    double z = 0.0;
    for (float v : logits) z += std::exp(v - mx);
    const double want = logits[static_cast<size_t>(t.token)] - mx - std::log(z);
    EXPECT_NEAR(t.logprob, want, 1e-4);
    EXPECT_LE(t.logprob, 0.0f);
    ASSERT_EQ(t.top.size(), 3u);
    EXPECT_EQ(t.top[0].first, t.token);  // greedy: the most likely
    EXPECT_FLOAT_EQ(t.top[0].second, t.logprob);
    EXPECT_GE(t.top[0].second, t.top[1].second);
    EXPECT_GE(t.top[1].second, t.top[2].second);
    EXPECT_NEAR(t.top[2].second, logits[static_cast<size_t>(t.top[2].first)] - mx - std::log(z), 1e-4);
    ASSERT_TRUE((*sess)->eval({t.token}, false, &logits).ok());
  }
  // Out of range: refused.
  CompletionRequest bad = request(*e, "Once", 2);
  bad.logprobs = llm::serve::kMaxTopLogprobs + 1;
  EXPECT_EQ(e->submit(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ServeEngine, EightAtOnceEachGetItsSoloText) {
  const std::vector<std::string> prompts = {"Once upon a time", "The dog", "Lily saw", "Tim and Sue went",
                                            "One day, a bird", "The sun was", "Max the cat", "There was a big"};
  std::vector<std::string> want;
  for (const auto& p : prompts) want.push_back(solo_text(p, 30));
  EngineOptions o;
  o.slots = 8;
  o.n_ctx = 128;
  o.prefill_chunk = 4;  // prompts read in chunks beside the decodes
  auto e = engine(o);
  ASSERT_NE(e, nullptr);
  std::vector<std::shared_ptr<Stream>> streams;
  for (const auto& p : prompts) {
    auto s = e->submit(request(*e, p, 30));
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    streams.push_back(*s);
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(collect(*streams[i]).text, want[i]) << prompts[i];
  const EngineMetrics m = e->metrics();
  EXPECT_EQ(m.requests_total, 8u);
  EXPECT_EQ(m.generated_tokens_total, 8u * 30u);
  EXPECT_EQ(m.sequences_active, 0);
  EXPECT_GT(m.kv_cells_used, 8 * 30);  // each slot keeps its tokens for a later prefix
  EXPECT_EQ(m.kv_cells_total, 8 * 128);
  // Fewer steps than 8 requests one after another would take.
  EXPECT_LT(m.steps_total, 8u * 30u / 2);
}

TEST_F(ServeEngine, SharedPrefixIsReusedNotRecomputed) {
  const std::string sys = kSystem;
  auto e = engine(2, 256);
  ASSERT_NE(e, nullptr);
  auto a = e->submit(request(*e, sys + " One day", 8));
  ASSERT_TRUE(a.ok());
  const Reply ra = collect(**a);
  EXPECT_EQ(ra.done.cached_tokens, 0);
  const uint64_t computed = e->metrics().prompt_tokens_total;
  auto b = e->submit(request(*e, sys + " The next day", 8));
  ASSERT_TRUE(b.ok());
  const Reply rb = collect(**b);
  const auto n_sys = static_cast<int64_t>(e->tokenizer().encode_prompt(sys).size());
  EXPECT_GE(rb.done.cached_tokens, n_sys - 1);
  EXPECT_EQ(rb.text, solo_text(sys + " The next day", 8));
  EXPECT_EQ(e->metrics().prompt_tokens_total - computed,
            static_cast<uint64_t>(rb.done.prompt_tokens - rb.done.cached_tokens));
}

// Two requests at once sharing a long prefix: the second copies the first's
// rows from its slot.
TEST_F(ServeEngine, PrefixIsCopiedFromABusySlot) {
  const std::string sys = kSystem;
  auto e = engine(2, 256);
  ASSERT_NE(e, nullptr);
  auto a = e->submit(request(*e, sys + " One day", 60));
  ASSERT_TRUE(a.ok());
  CompletionEvent ev;
  ASSERT_TRUE((*a)->next(&ev, 30s));  // a is decoding: its prompt is in its slot
  auto b = e->submit(request(*e, sys + " The next day", 8));
  ASSERT_TRUE(b.ok());
  const Reply rb = collect(**b);
  EXPECT_GE(rb.done.cached_tokens, 16);
  EXPECT_EQ(rb.text, solo_text(sys + " The next day", 8));
  collect(**a);
}

TEST_F(ServeEngine, StopStringsAndLimitsFinishWithTheirReason) {
  const std::string full = solo_text("Once upon a time", 40);
  const size_t cut = full.find(" she");
  ASSERT_NE(cut, std::string::npos) << full;
  EngineOptions o;
  o.slots = 1;
  o.n_ctx = 64;
  auto e = engine(o);
  ASSERT_NE(e, nullptr);
  CompletionRequest r = request(*e, "Once upon a time", 40);
  r.stop = {" she", "zzz"};
  auto s = e->submit(r);
  ASSERT_TRUE(s.ok());
  Reply got = collect(**s);
  EXPECT_EQ(got.text, full.substr(0, cut));
  EXPECT_EQ(got.done.finish, FinishReason::kStop);
  // max_tokens 0: nothing, "length".
  s = e->submit(request(*e, "Once upon a time", 0));
  ASSERT_TRUE(s.ok());
  got = collect(**s);
  EXPECT_EQ(got.text, "");
  EXPECT_EQ(got.done.finish, FinishReason::kLength);
  EXPECT_EQ(got.done.completion_tokens, 0);
  // The context's end (64 positions) before max_tokens.
  s = e->submit(request(*e, "Once upon a time", 1000));
  ASSERT_TRUE(s.ok());
  got = collect(**s);
  EXPECT_EQ(got.done.finish, FinishReason::kLength);
  EXPECT_EQ(got.done.prompt_tokens + got.done.completion_tokens, 64 + 1);
}

// ignore_eos: a reply that ends at an end-of-generation token runs on to
// max_tokens instead.
TEST_F(ServeEngine, IgnoreEosRunsToMaxTokens) {
  // stories260K's stories never end (greedy or sampled): a tiny model whose
  // end-of-sequence token is the one its greedy reply starts with.
  test::TinyLlama tiny;
  tiny.n_tokens = 6;
  tiny.keys["context_length"] = 64;
  const std::string path = ::testing::TempDir() + "/serve_engine_tiny.gguf";
  auto tiny_engine = [&]() -> std::unique_ptr<Engine> {
    EXPECT_TRUE(tiny.write(path));
    auto m = LlamaModel::load(path, dev_);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    if (!m.ok()) return nullptr;
    EngineOptions o;
    o.slots = 1;
    o.n_ctx = 64;
    auto e = make_llama_engine(std::move(m).value(), "tiny.gguf", o);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return e.ok() ? std::move(e).value() : nullptr;
  };
  CompletionRequest r;
  r.prompt = {1, 3, 4};
  r.max_tokens = 1;
  auto e = tiny_engine();
  ASSERT_NE(e, nullptr);
  auto s = e->submit(r);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(collect(**s).done.completion_tokens, 1);
  // Each ordinary token in turn as the end-of-sequence token: one of them
  // is in the greedy reply and ends it.
  bool found = false;
  for (uint32_t id = 3; id < 6 && !found; ++id) {
    tiny.eos_id = id;
    e = tiny_engine();
    ASSERT_NE(e, nullptr);
    r.max_tokens = 10;
    r.ignore_eos = false;
    s = e->submit(r);
    ASSERT_TRUE(s.ok());
    const Reply natural = collect(**s);
    if (natural.done.finish != FinishReason::kStop) continue;
    found = true;
    r.ignore_eos = true;
    s = e->submit(r);
    ASSERT_TRUE(s.ok());
    const Reply forced = collect(**s);
    EXPECT_EQ(forced.done.finish, FinishReason::kLength);
    EXPECT_EQ(forced.done.completion_tokens, 10);
    EXPECT_LT(natural.done.completion_tokens, 10);
  }
  EXPECT_TRUE(found) << "no token of the tiny model's greedy reply could serve as its end";
}

TEST_F(ServeEngine, CancelFreesTheSlot) {
  EngineOptions o;
  o.slots = 1;
  o.n_ctx = 256;
  auto e = engine(o);
  ASSERT_NE(e, nullptr);
  auto s = e->submit(request(*e, "Once upon a time", 200));
  ASSERT_TRUE(s.ok());
  CompletionEvent ev;
  ASSERT_TRUE((*s)->next(&ev, 30s));
  (*s)->cancel();
  const Reply r = collect(**s);
  EXPECT_EQ(r.done.finish, FinishReason::kCancelled);
  EXPECT_LT(r.done.completion_tokens, 200);
  for (int i = 0; i < 100 && e->metrics().sequences_active != 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(e->metrics().sequences_active, 0);
  // The slot serves the next request.
  auto t = e->submit(request(*e, "The dog", 5));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(collect(**t).done.completion_tokens, 5);
}

TEST_F(ServeEngine, RefusalsNameTheirReason) {
  EngineOptions o;
  o.slots = 1;
  o.n_ctx = 4096;  // the running request below cannot end before shutdown
  o.max_queue = 1;
  auto e = engine(o);
  ASSERT_NE(e, nullptr);
  CompletionRequest empty;
  EXPECT_EQ(e->submit(empty).status().code(), StatusCode::kInvalidArgument);
  std::string text;
  for (int i = 0; i < 1100; ++i) text += "Once upon a time ";
  CompletionRequest long_one = request(*e, text, 4);
  const auto n_long = long_one.prompt.size();
  ASSERT_GT(n_long, 4096u);
  Status st = e->submit(long_one).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("prompt of " + std::to_string(n_long) + " tokens"), std::string::npos) << st.to_string();
  EXPECT_NE(st.message().find("context of 4096"), std::string::npos) << st.to_string();
  CompletionRequest bad_tok = request(*e, "a", 4);
  bad_tok.prompt.push_back(1 << 30);
  EXPECT_EQ(e->submit(bad_tok).status().code(), StatusCode::kInvalidArgument);
  // One running (it never ends by itself within the test), one queued, the third refused.
  auto a = e->submit(request(*e, "Once", 1000));
  ASSERT_TRUE(a.ok());
  CompletionEvent ev;
  ASSERT_TRUE((*a)->next(&ev, 30s));
  auto b = e->submit(request(*e, "Once", 4));
  ASSERT_TRUE(b.ok());
  auto c = e->submit(request(*e, "Once", 4));
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted) << c.status().to_string();
  EXPECT_GE(e->metrics().requests_rejected, 4u);
  e->shutdown(false);
  EXPECT_EQ(collect(**a).done.finish, FinishReason::kCancelled);
  EXPECT_EQ(collect(**b).done.finish, FinishReason::kCancelled);
  EXPECT_EQ(e->submit(request(*e, "Once", 4)).status().code(), StatusCode::kUnavailable);
}

TEST(CompletionText, WholeUtf8Prefix) {
  EXPECT_EQ(whole_utf8_prefix(""), 0u);
  EXPECT_EQ(whole_utf8_prefix("abc"), 3u);
  EXPECT_EQ(whole_utf8_prefix("a\xC3"), 1u);              // é's lead byte alone
  EXPECT_EQ(whole_utf8_prefix("a\xC3\xA9"), 3u);          // é whole
  EXPECT_EQ(whole_utf8_prefix("a\xE2\x82"), 1u);          // € missing its last byte
  EXPECT_EQ(whole_utf8_prefix("a\xF0\x9F\x98\x80"), 5u);  // an emoji whole
  EXPECT_EQ(whole_utf8_prefix("a\xF0\x9F\x98"), 1u);
}

}  // namespace
}  // namespace loom::llm::serve
