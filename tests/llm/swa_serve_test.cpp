// The serving engine (llm/serve/) over a gemma model whose sliding-window
// layers keep a bounded cache (llm/session/kv_window.hpp): requests stepped
// together in slots get the text each gets alone on the unbounded layout
// (LOOM_KV_SWA_FULL=1), and a prefix is reused only while the slot's window
// rows still hold it.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arch_fixture.hpp"
#include "llm/serve/llama_engine.hpp"

namespace loom::llm {
namespace {

using namespace std::chrono_literals;
using serve::CompletionEvent;
using serve::CompletionRequest;
using serve::Engine;
using serve::EngineOptions;

// Gemma 2, a window of 8, a tokenizer (the engine detokenizes).
ArchSpec gemma2_served() {
  ArchSpec s = gemma2_spec(8, 31);
  s.n_ctx = 256;
  s.tokenizer = true;
  return s;
}

struct Reply {
  std::string text;
  CompletionEvent done;
};

Reply collect(serve::Stream& s) {
  Reply r;
  const auto end = std::chrono::steady_clock::now() + 120s;
  CompletionEvent ev;
  while (std::chrono::steady_clock::now() < end) {
    if (!s.next(&ev, 100ms)) continue;
    r.text += ev.text;
    if (ev.done) {
      r.done = ev;
      return r;
    }
  }
  ADD_FAILURE() << "no done event within the limit";
  return r;
}

class SwaServe : public Architectures {
 protected:
  // An engine of `slots` slots (n_batch 5: window rows 8 + 5 = 13 per slot),
  // on the unbounded layout when full.
  std::unique_ptr<Engine> engine(int32_t slots, bool full) {
    test::ScopedEnv env("LOOM_KV_SWA_FULL", full ? std::optional<std::string>("1") : std::nullopt);
    const TinyArchModel m(gemma2_served());
    auto model = load(m);
    EXPECT_TRUE(model.ok()) << model.status().to_string();
    if (!model.ok()) return nullptr;
    EngineOptions o;
    o.slots = slots;
    o.n_ctx = 128;
    o.n_batch = 5;
    o.prefill_chunk = 2;
    auto e = serve::make_llama_engine(std::move(model).value(), "gemma2.gguf", o);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return e.ok() ? std::move(e).value() : nullptr;
  }

  static CompletionRequest request(const std::vector<TokenId>& prompt, int max_tokens) {
    CompletionRequest r;
    r.prompt = prompt;
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
  }

  static std::vector<TokenId> prompt(int n, int k) {
    std::vector<TokenId> p = {1};
    for (int i = 1; i < n; ++i) p.push_back(static_cast<TokenId>(4 + (i * k + 2 * k) % 36));
    return p;
  }
};

TEST_F(SwaServe, SlotsTogetherGetTheirSoloTextAndPrefixesStayWithinTheWindow) {
  const std::vector<std::vector<TokenId>> prompts = {prompt(20, 5), prompt(9, 7), prompt(14, 11)};
  std::vector<std::string> want;
  {
    auto solo = engine(1, true);
    ASSERT_NE(solo, nullptr);
    for (const auto& p : prompts) {
      auto s = solo->submit(request(p, 50));
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      want.push_back(collect(**s).text);
      EXPECT_FALSE(want.back().empty());
    }
  }
  auto e = engine(3, false);
  ASSERT_NE(e, nullptr);
  std::vector<std::shared_ptr<serve::Stream>> streams;
  for (const auto& p : prompts) {
    auto s = e->submit(request(p, 50));
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    streams.push_back(*s);
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(collect(*streams[i]).text, want[i]) << "request " << i;
  // Each slot's rows moved past its prompt's window: a prompt sharing it is recomputed.
  std::vector<TokenId> longer = prompts[0];
  longer.insert(longer.end(), {5, 6, 7});
  auto again = e->submit(request(longer, 10));
  ASSERT_TRUE(again.ok());
  const Reply r = collect(**again);
  EXPECT_EQ(r.done.cached_tokens, 0);
  // A short request leaves its slot's rows in place: a prompt continuing it reuses them.
  const std::vector<TokenId> shorter = prompt(10, 13);
  auto first = e->submit(request(shorter, 1));
  ASSERT_TRUE(first.ok());
  collect(**first);
  std::vector<TokenId> cont = shorter;
  cont.insert(cont.end(), {8, 9, 10, 11});
  auto second = e->submit(request(cont, 30));
  ASSERT_TRUE(second.ok());
  const Reply r2 = collect(**second);
  EXPECT_GE(r2.done.cached_tokens, 10);
  auto solo = engine(1, true);
  ASSERT_NE(solo, nullptr);
  for (const auto& [p, got] : {std::make_pair(longer, r.text), std::make_pair(cont, r2.text)}) {
    auto s = solo->submit(request(p, p == longer ? 10 : 30));
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(got, collect(**s).text);
  }
}

}  // namespace
}  // namespace loom::llm
