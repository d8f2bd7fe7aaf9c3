// `loom serve`'s streamed answers over a fake engine: server-sent events in
// OpenAI's chunk format ending with [DONE], usage chunks, and a client that
// hangs up mid-stream cancelling its stream.
#include <gtest/gtest.h>

#include <thread>

#include "serve_fixture.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

std::vector<json> chunks_of(const std::vector<std::string>& events) {
  std::vector<json> out;
  for (size_t i = 0; i + 1 < events.size(); ++i) out.push_back(json::parse(events[i]));
  return out;
}

TEST_F(ServeHttp, ChatStreamIsServerSentEvents) {
  start();
  HttpReply r = post("/v1/chat/completions",
                     R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "text/event-stream");
  EXPECT_EQ(r.headers["transfer-encoding"], "chunked");
  // Every event is one "data: ...\n\n" line; the last is [DONE].
  EXPECT_EQ(r.body.substr(r.body.size() - 14), "data: [DONE]\n\n");
  const auto events = sse_data(r.body);
  ASSERT_GE(events.size(), 3u) << r.body;
  EXPECT_EQ(events.back(), "[DONE]");
  const std::vector<json> chunks = chunks_of(events);
  const std::string id = chunks[0]["id"];
  EXPECT_EQ(id.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  int finishes = 0;
  for (const json& c : chunks) {
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_EQ(c["id"], id);
    EXPECT_EQ(c["model"], "fake.gguf");
    EXPECT_FALSE(c.contains("usage"));
    const json& choice = c["choices"][0];
    if (choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
    if (!choice["finish_reason"].is_null()) {
      ++finishes;
      EXPECT_EQ(choice["finish_reason"], "stop");
      EXPECT_EQ(&c, &chunks.back());
    }
  }
  EXPECT_EQ(text, "Hello, world!");
  EXPECT_EQ(finishes, 1);
}

TEST_F(ServeHttp, StreamUsageChunkWhenAskedFor) {
  start();
  HttpReply r = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true,
                                                 "stream_options": {"include_usage": true}, "max_tokens": 3})");
  ASSERT_EQ(r.status, 200);
  const std::vector<json> chunks = chunks_of(sse_data(r.body));
  ASSERT_GE(chunks.size(), 2u);
  const json& usage = chunks.back();
  EXPECT_TRUE(usage["choices"].empty());
  const size_t n_prompt = engine->records().at(0).request.prompt.size();
  EXPECT_EQ(usage["usage"]["prompt_tokens"], n_prompt);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 3);
  EXPECT_EQ(usage["usage"]["total_tokens"], n_prompt + 3);
  EXPECT_EQ(chunks[chunks.size() - 2]["choices"][0]["finish_reason"], "length");
}

TEST_F(ServeHttp, TextCompletionStream) {
  start();
  HttpReply r = post("/v1/completions", R"({"prompt": "Once", "stream": true})");
  ASSERT_EQ(r.status, 200);
  const auto events = sse_data(r.body);
  ASSERT_EQ(events.back(), "[DONE]");
  std::string text;
  for (const json& c : chunks_of(events)) {
    EXPECT_EQ(c["object"], "text_completion");
    EXPECT_EQ(c["id"].get<std::string>().rfind("cmpl-", 0), 0u);
    text += c["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, "Hello, world!");
  EXPECT_EQ(chunks_of(events).back()["choices"][0]["finish_reason"], "stop");
}

// Logprobs through the HTTP layer: each streamed chunk carries its tokens'
// (chat's content entries, a completion's token lists with byte offsets),
// a whole answer all of them; none when not asked for.
TEST_F(ServeHttp, LogprobsRideWithTheirText) {
  start();
  HttpReply r = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true,
                                                 "logprobs": true, "top_logprobs": 2})");
  ASSERT_EQ(r.status, 200);
  std::vector<json> entries;
  for (const json& c : chunks_of(sse_data(r.body))) {
    const json& choice = c["choices"][0];
    const bool has_text = choice["delta"].contains("content") && !choice["delta"]["content"].get<std::string>().empty();
    if (!has_text) {
      EXPECT_TRUE(choice["logprobs"].is_null()) << c;
      continue;
    }
    ASSERT_EQ(choice["logprobs"]["content"].size(), 1u) << c;
    entries.push_back(choice["logprobs"]["content"][0]);
  }
  ASSERT_EQ(entries.size(), 4u);  // "Hello", ",", " world", "!"
  EXPECT_EQ(entries[0]["token"], "H");
  EXPECT_FLOAT_EQ(entries[2]["logprob"].get<float>(), -1.5f);
  EXPECT_EQ(entries[3]["bytes"], json::array({'!'}));
  ASSERT_EQ(entries[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(entries[0]["top_logprobs"][1]["token"], "b");
  EXPECT_EQ(engine->records().at(0).request.logprobs, 2);

  HttpReply whole = post("/v1/completions", R"({"prompt": "Once", "logprobs": 1})");
  ASSERT_EQ(whole.status, 200);
  const json lp = json_of(whole)["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json::array({"H", ",", " ", "!"}));
  EXPECT_EQ(lp["text_offset"], json::array({0, 1, 2, 3}));  // (the fake's tokens are single bytes)
  EXPECT_EQ(lp["top_logprobs"][0], json({{"a", -1.0}}));

  HttpReply plain = post("/v1/completions", R"({"prompt": "Once"})");
  EXPECT_TRUE(json_of(plain)["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(engine->records().at(2).request.logprobs, -1);
}

TEST_F(ServeHttp, ClientHangingUpMidStreamCancelsIt) {
  engine->hold(true);
  start();
  {
    RawConnection c(server->port());
    ASSERT_TRUE(c.send(http_request("POST", "/v1/chat/completions",
                                    R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true})")));
    // The headers and the role chunk come at once, before any token.
    const std::string got = c.read(5000, "\"role\"");
    ASSERT_NE(got.find("\"role\":\"assistant\""), std::string::npos) << got;
  }  // hung up
  EXPECT_TRUE(engine->wait_cancelled(0, std::chrono::seconds(5)));
  // The server goes on serving.
  engine->hold(false);
  EXPECT_EQ(post("/v1/completions", R"({"prompt": "a"})").status, 200);
}

TEST_F(ServeHttp, ClientHangingUpBeforeAWholeAnswerCancelsIt) {
  engine->hold(true);
  start();
  {
    RawConnection c(server->port());
    ASSERT_TRUE(c.send(http_request("POST", "/v1/completions", R"({"prompt": "a"})")));
    for (int i = 0; i < 500 && engine->unfinished() < 1; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(engine->unfinished(), 1);
  }
  EXPECT_TRUE(engine->wait_cancelled(0, std::chrono::seconds(5)));
}

TEST_F(ServeHttp, ManyStreamsAtOnce) {
  start();
  std::vector<std::unique_ptr<RawConnection>> cs;
  for (int i = 0; i < 16; ++i) {
    cs.push_back(std::make_unique<RawConnection>(server->port()));
    ASSERT_TRUE(cs.back()->send(http_request("POST", "/v1/completions", R"({"prompt": "a", "stream": true})")));
  }
  for (auto& c : cs) {
    HttpReply r = parse_reply(c->read(10000));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(sse_data(r.body).back(), "[DONE]");
  }
}

}  // namespace
}  // namespace loom::test
