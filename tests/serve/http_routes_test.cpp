// `loom serve`'s routes over a fake engine: health, models, both
// completions (whole), tokenize, detokenize, metrics; what reaches the
// engine; usage counts.
#include <gtest/gtest.h>

#include "serve/chat_prompt.hpp"
#include "serve_fixture.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

TEST_F(ServeHttp, HealthIs503UntilTheEngineIsSet) {
  start({}, /*with_engine=*/false);
  HttpReply r = get("/health");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(json_of(r)["status"], "loading");
  // Model routes say the same, as an OpenAI error.
  r = post("/v1/chat/completions", kChatBody);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(error_of(r)["code"], "loading");
  server->set_engine(engine);
  r = get("/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json_of(r)["status"], "ok");
}

TEST_F(ServeHttp, Models) {
  start();
  HttpReply r = get("/v1/models");
  ASSERT_EQ(r.status, 200);
  json j = json_of(r);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "fake.gguf");
  EXPECT_EQ(get("/v1/models/fake.gguf").status, 200);
  r = get("/v1/models/other.gguf");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(error_of(r)["code"], "model_not_found");
}

TEST_F(ServeHttp, ChatCompletionWhole) {
  start();
  HttpReply r = post("/v1/chat/completions", R"({"messages": [{"role": "system", "content": "Be kind."},
      {"role": "user", "content": "Hi"}], "temperature": 0.5, "top_p": 0.8, "top_k": 5, "seed": 7,
      "stop": ["\n\n", "END"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/json");
  json j = json_of(r);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["model"], "fake.gguf");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello, world!");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");

  // The engine got the conversation as loom chat renders it, and the fields.
  const llm::Tokenizer& tok = engine->tokenizer();
  const auto want = cli::serve::chat_prompt_tokens({{"system", "Be kind."}, {"user", "Hi"}},
                                                   llm::ChatTemplate(llm::ChatFormat::kChatml), tok, nullptr);
  ASSERT_TRUE(want.ok());
  auto recs = engine->records();
  ASSERT_EQ(recs.size(), 1u);
  const CompletionRequest& got = recs[0].request;
  EXPECT_EQ(got.prompt, *want);
  EXPECT_EQ(got.max_tokens, engine->n_ctx - static_cast<int64_t>(want->size()));  // chat: the rest of the context
  EXPECT_FLOAT_EQ(got.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(got.sampling.top_p, 0.8f);
  EXPECT_EQ(got.sampling.top_k, 5);
  EXPECT_EQ(got.sampling.seed, 7u);
  EXPECT_EQ(got.stop, (std::vector<std::string>{"\n\n", "END"}));

  EXPECT_EQ(j["usage"]["prompt_tokens"], want->size());
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_EQ(j["usage"]["total_tokens"], want->size() + 4);
}

TEST_F(ServeHttp, TextCompletionStopsAtMaxTokens) {
  start();
  HttpReply r = post("/v1/completions", R"({"prompt": "Once", "max_tokens": 2, "temperature": 0})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json_of(r);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["text"], "Hello,");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  const auto prompt = engine->tokenizer().encode_prompt("Once");
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(j["usage"]["total_tokens"], prompt.size() + 2);
  auto recs = engine->records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].request.prompt, prompt);
  EXPECT_EQ(recs[0].request.max_tokens, 2);
  EXPECT_FLOAT_EQ(recs[0].request.sampling.temperature, 0.0f);
}

TEST_F(ServeHttp, CompletionDefaultsTo16Tokens) {
  start();
  ASSERT_EQ(post("/v1/completions", R"({"prompt": "a"})").status, 200);
  EXPECT_EQ(engine->records().at(0).request.max_tokens, 16);
  // ... and never past the end of the context.
  ASSERT_EQ(post("/v1/completions", R"({"prompt": "a", "max_tokens": 1000})").status, 200);
  const auto n_prompt = static_cast<int64_t>(engine->tokenizer().encode_prompt("a").size());
  EXPECT_EQ(engine->records().at(1).request.max_tokens, engine->n_ctx - n_prompt);
}

TEST_F(ServeHttp, RoutesWithoutV1) {
  start();
  EXPECT_EQ(post("/chat/completions", kChatBody).status, 200);
  EXPECT_EQ(post("/completions", R"({"prompt": "a"})").status, 200);
  EXPECT_EQ(get("/models").status, 200);
}

TEST_F(ServeHttp, TokenizeAndDetokenize) {
  start();
  HttpReply r = post("/tokenize", R"({"content": "Hi there"})");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto ids = json_of(r)["tokens"].get<std::vector<int>>();
  const auto want = engine->tokenizer().encode("Hi there", false);
  EXPECT_EQ(ids, std::vector<int>(want.begin(), want.end()));
  r = post("/tokenize", R"({"content": "Hi", "add_special": true})");
  EXPECT_EQ(json_of(r)["tokens"][0], engine->tokenizer().special().bos);

  json body;
  body["tokens"] = ids;
  r = post("/detokenize", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json_of(r)["content"], "Hi there");

  r = post("/detokenize", R"({"tokens": [1, 999999]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error_of(r)["param"], "tokens[1]");
  r = post("/tokenize", R"({"text": "Hi"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error_of(r)["param"], "content");
}

TEST_F(ServeHttp, MetricsArePrometheusText) {
  start();
  ASSERT_EQ(post("/v1/completions", R"({"prompt": "a"})").status, 200);
  HttpReply r = get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"].rfind("text/plain; version=0.0.4", 0), 0u) << r.headers["content-type"];
  for (const char* line : {"# TYPE loom_requests_total counter\nloom_requests_total 1\n",
                           "loom_sequences_active 0\n", "loom_sequences_queued 0\n", "loom_kv_cells_used 42\n",
                           "loom_prompt_tokens_per_second 500\n", "loom_generation_tokens_per_second 100\n",
                           "loom_prompt_tokens_total 1000\n", "loom_generated_tokens_total 500\n"}) {
    EXPECT_NE(r.body.find(line), std::string::npos) << line << "\nin:\n" << r.body;
  }
}

TEST_F(ServeHttp, KeepAliveServesSeveralRequestsOnOneConnection) {
  start();
  RawConnection c(server->port());
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           "Content-Length: 15\r\n";
  ASSERT_TRUE(c.send(head + "\r\n{\"prompt\": \"a\"}"));
  const std::string first = c.read(5000, "\r\n0\r\n\r\n");
  EXPECT_EQ(parse_reply(first).status, 200) << first;
  EXPECT_FALSE(c.closed_by_server());
  ASSERT_TRUE(c.send(head + "Connection: close\r\n\r\n{\"prompt\": \"b\"}"));
  const std::string all = c.read(5000);
  EXPECT_TRUE(c.closed_by_server());
  size_t n = 0;
  for (size_t p = all.find("HTTP/1.1 200"); p != std::string::npos; p = all.find("HTTP/1.1 200", p + 1)) ++n;
  EXPECT_EQ(n, 2u) << all;
  EXPECT_EQ(engine->records().size(), 2u);
}

}  // namespace
}  // namespace loom::test
