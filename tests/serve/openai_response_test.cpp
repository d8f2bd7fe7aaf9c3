// The JSON of `loom serve`'s answers (tools/loom/serve/openai_response.hpp)
// and of GET /metrics (metrics_text.hpp): OpenAI's shapes, field by field.
#include "serve/openai_response.hpp"

#include <gtest/gtest.h>

#include "fake_engine.hpp"

#include "serve/metrics_text.hpp"

namespace loom::cli::serve {
namespace {

TEST(ServeResponse, IdsAreRandomHexWithTheirPrefix) {
  const ResponseMeta a = new_response_meta(Endpoint::kChat, "m.gguf");
  const ResponseMeta b = new_response_meta(Endpoint::kChat, "m.gguf");
  const ResponseMeta c = new_response_meta(Endpoint::kCompletion, "m.gguf");
  EXPECT_EQ(a.id.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(c.id.rfind("cmpl-", 0), 0u);
  EXPECT_EQ(a.id.size(), 9u + 24u);
  EXPECT_EQ(a.id.find_first_not_of("0123456789abcdef", 9), std::string::npos);
  EXPECT_NE(a.id, b.id);
  EXPECT_GT(a.created, 1600000000);
  EXPECT_EQ(a.model, "m.gguf");
}

TEST(ServeResponse, ChatCompletion) {
  const ResponseMeta m = new_response_meta(Endpoint::kChat, "m");
  const Json j = completion_json(m, "Hi!", "stop", Usage{7, 3, 2});
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"], m.id);
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hi!");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  EXPECT_EQ(j["usage"]["total_tokens"], 10);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
}

TEST(ServeResponse, TextCompletion) {
  const Json j = completion_json(new_response_meta(Endpoint::kCompletion, "m"), " there", "length", Usage{1, 16, 0});
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], " there");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
}

TEST(ServeResponse, Chunks) {
  const ResponseMeta m = new_response_meta(Endpoint::kChat, "m");
  const Json first = chunk_json(m, "", true, nullptr);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  const Json piece = chunk_json(m, "ab", false, nullptr);
  EXPECT_FALSE(piece["choices"][0]["delta"].contains("role"));
  EXPECT_EQ(piece["choices"][0]["delta"]["content"], "ab");
  const Json last = chunk_json(m, "", false, "stop");
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  const Json usage = usage_chunk_json(m, Usage{2, 3, 0});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 5);
  const Json text = chunk_json(new_response_meta(Endpoint::kCompletion, "m"), "x", false, nullptr);
  EXPECT_EQ(text["object"], "text_completion");
  EXPECT_EQ(text["choices"][0]["text"], "x");
}

// Logprobs in OpenAI's two shapes, over a vocabulary of byte tokens
// (<0x41> is "A", <0xC3> half of a character: its text replaced, its bytes
// exact).
TEST(ServeResponse, LogprobsShapes) {
  const llm::Tokenizer tok = test::fake_tokenizer();  // byte b is token 3 + b
  const llm::TokenId a = 3 + 'A', b = 3 + 'b', half = 3 + 0xC3;
  std::vector<llm::serve::TokenLogprob> lps(2);
  lps[0].token = a;
  lps[0].logprob = -0.25f;
  lps[0].top = {{a, -0.25f}, {b, -1.5f}};
  lps[1].token = half;
  lps[1].logprob = -2.0f;
  int64_t offset = 10;
  const Json chat = logprobs_json(Endpoint::kChat, lps, tok, &offset);
  EXPECT_EQ(offset, 10);  // (chat has no offsets)
  ASSERT_EQ(chat["content"].size(), 2u);
  EXPECT_EQ(chat["content"][0]["token"], "A");
  EXPECT_FLOAT_EQ(chat["content"][0]["logprob"].get<float>(), -0.25f);
  EXPECT_EQ(chat["content"][0]["bytes"], Json::array({65}));
  ASSERT_EQ(chat["content"][0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(chat["content"][0]["top_logprobs"][1]["token"], "b");
  EXPECT_FLOAT_EQ(chat["content"][0]["top_logprobs"][1]["logprob"].get<float>(), -1.5f);
  EXPECT_EQ(chat["content"][1]["bytes"], Json::array({0xC3}));
  EXPECT_TRUE(chat["content"][1]["top_logprobs"].empty());
  EXPECT_TRUE(chat["refusal"].is_null());
  EXPECT_NE(json_body(chat).find("\xEF\xBF\xBD"), std::string::npos);  // the half character, replaced (U+FFFD)
  const Json done = logprobs_json(Endpoint::kCompletion, lps, tok, &offset);
  EXPECT_EQ(done["tokens"][0], "A");
  EXPECT_EQ(done["token_logprobs"], Json::array({-0.25f, -2.0f}));
  EXPECT_FLOAT_EQ(done["top_logprobs"][0]["b"].get<float>(), -1.5f);
  EXPECT_EQ(done["text_offset"], Json::array({10, 11}));
  EXPECT_EQ(offset, 12);
  // In the answers: the choice's logprobs, null when not asked for.
  const ResponseMeta m = new_response_meta(Endpoint::kChat, "m");
  EXPECT_EQ(completion_json(m, "A", "stop", Usage{1, 2, 0}, chat)["choices"][0]["logprobs"], chat);
  EXPECT_TRUE(completion_json(m, "A", "stop", Usage{1, 2, 0})["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(chunk_json(m, "A", false, nullptr, chat)["choices"][0]["logprobs"], chat);
}

TEST(ServeResponse, FinishReasons) {
  using llm::serve::FinishReason;
  EXPECT_STREQ(openai_finish_reason(FinishReason::kStop), "stop");
  EXPECT_STREQ(openai_finish_reason(FinishReason::kLength), "length");
  EXPECT_EQ(openai_finish_reason(FinishReason::kCancelled), nullptr);
  EXPECT_EQ(openai_finish_reason(FinishReason::kError), nullptr);
}

TEST(ServeResponse, ErrorObject) {
  const Json e = error_json("bad", "invalid_request_error", "max_tokens");
  EXPECT_EQ(e["error"]["message"], "bad");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_EQ(e["error"]["param"], "max_tokens");
  EXPECT_TRUE(e["error"]["code"].is_null());
}

TEST(ServeResponse, BadUtf8IsReplacedNotThrown) {
  const Json j = completion_json(new_response_meta(Endpoint::kCompletion, "m"), "a\xff\xfe", "stop", Usage{});
  std::string body;
  EXPECT_NO_THROW(body = json_body(j));
  EXPECT_NE(body.find("\xef\xbf\xbd"), std::string::npos) << body;  // U+FFFD
  EXPECT_EQ(sse_event(Json{{"a", 1}}), "data: {\"a\":1}\n\n");
}

TEST(ServeResponse, ModelList) {
  const Json j = models_json("stories.gguf", 5);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "stories.gguf");
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["owned_by"], "loom");
}

TEST(ServeMetrics, PrometheusText) {
  llm::serve::EngineMetrics m;
  m.requests_total = 12;
  m.sequences_active = 3;
  m.sequences_queued = 1;
  m.kv_cells_used = 99;
  m.prompt_tokens_total = 300;
  m.prompt_seconds_total = 2;
  m.generated_tokens_total = 50;
  m.generation_seconds_total = 10;
  const std::string t = prometheus_text(m);
  for (const char* line :
       {"# TYPE loom_requests_total counter\nloom_requests_total 12\n", "loom_sequences_active 3\n",
        "# TYPE loom_sequences_queued gauge\nloom_sequences_queued 1\n", "loom_kv_cells_used 99\n",
        "loom_prompt_tokens_per_second 150\n", "loom_generation_tokens_per_second 5\n",
        "loom_generated_tokens_total 50\n"}) {
    EXPECT_NE(t.find(line), std::string::npos) << line << "\nin:\n" << t;
  }
  EXPECT_NE(prometheus_text(llm::serve::EngineMetrics{}).find("loom_generation_tokens_per_second 0\n"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::cli::serve
