// `loom serve`'s error answers over a fake engine: each status with an
// OpenAI error object naming what was wrong.
#include <gtest/gtest.h>

#include <thread>

#include "serve_fixture.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

TEST_F(ServeHttp, MalformedJsonIs400) {
  start();
  for (const char* body : {"{", "not json", "[]", "{\"messages\": [}"}) {
    HttpReply r = post("/v1/chat/completions", body);
    EXPECT_EQ(r.status, 400) << body;
    json e = error_of(r);
    EXPECT_EQ(e["type"], "invalid_request_error");
    EXPECT_TRUE(e["param"].is_null());
  }
  EXPECT_TRUE(engine->records().empty());
}

TEST_F(ServeHttp, BadFieldsAre400NamingTheField) {
  start();
  const std::pair<const char*, const char*> cases[] = {
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -5})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 3})", "n"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a", "b", "c", "d", "e"]})", "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "model": 1})", "model"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]})", "messages"},
  };
  for (const auto& [body, param] : cases) {
    HttpReply r = post("/v1/chat/completions", body);
    EXPECT_EQ(r.status, 400) << body;
    json e = error_of(r);
    EXPECT_EQ(e["param"], param) << body;
    EXPECT_NE(e["message"].get<std::string>().find(param), std::string::npos) << e["message"];
  }
  HttpReply r = post("/v1/completions", R"({"prompt": "x", "top_p": 7})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error_of(r)["param"], "top_p");
  EXPECT_TRUE(engine->records().empty());
}

TEST_F(ServeHttp, MissingOrWrongKeyIs401) {
  cli::serve::ServerOptions o;
  o.api_key = "s3cret-key";
  start(o);
  HttpReply r = post("/v1/chat/completions", kChatBody);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(error_of(r)["code"], "invalid_api_key");
  r = post("/v1/chat/completions", kChatBody, "Authorization: Bearer s3cret-kez\r\n");
  EXPECT_EQ(r.status, 401);
  r = post("/v1/chat/completions", kChatBody, "Authorization: Bearer s3cret-key-and-more\r\n");
  EXPECT_EQ(r.status, 401);
  r = post("/v1/chat/completions", kChatBody, "Authorization: s3cret-key\r\n");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(get("/v1/models").status, 401);
  EXPECT_EQ(get("/metrics").status, 401);
  EXPECT_EQ(post("/tokenize", R"({"content": "a"})").status, 401);
  EXPECT_TRUE(engine->records().empty());
  // The right key; /health needs none.
  EXPECT_EQ(post("/v1/chat/completions", kChatBody, "Authorization: Bearer s3cret-key\r\n").status, 200);
  EXPECT_EQ(get("/v1/models", "authorization: bearer s3cret-key\r\n").status, 200);
  EXPECT_EQ(get("/health").status, 200);
}

TEST_F(ServeHttp, UnknownRouteIs404) {
  start();
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v2/models"}, {"POST", "/v1/embeddings"}, {"GET", "/v1/chat/completions"}, {"GET", "/"}}) {
    HttpReply r = http_exchange(server->port(), http_request(method, path, method == "POST" ? "{}" : ""));
    EXPECT_EQ(r.status, 404) << method << " " << path;
    json e = error_of(r);
    EXPECT_EQ(e["code"], "not_found");
    EXPECT_NE(e["message"].get<std::string>().find(path), std::string::npos);
  }
}

TEST_F(ServeHttp, BodyOverTheLimitIs413) {
  cli::serve::ServerOptions o;
  o.max_body_bytes = 1000;
  start(o);
  const std::string big = R"({"prompt": ")" + std::string(2000, 'a') + R"("})";
  HttpReply r = post("/v1/completions", big);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(error_of(r)["code"], "payload_too_large");
  // A chunked body is counted as it arrives.
  std::string chunked = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 4; ++i) chunked += "1f4\r\n" + std::string(500, 'a') + "\r\n";
  chunked += "0\r\n\r\n";
  r = http_exchange(server->port(), chunked);
  EXPECT_EQ(r.status, 413);
  EXPECT_TRUE(engine->records().empty());
  // Under the limit is fine.
  EXPECT_EQ(post("/v1/completions", R"({"prompt": "short"})").status, 200);
}

TEST_F(ServeHttp, DefaultLimitIs8MiB) {
  start();
  std::string body = R"({"prompt": ")" + std::string((size_t{8} << 20) + 10, 'a') + R"("})";
  RawConnection c(server->port());
  c.send(http_request("POST", "/v1/completions", body));
  HttpReply r = parse_reply(c.read(20000));
  EXPECT_EQ(r.status, 413);
}

TEST_F(ServeHttp, PromptLongerThanTheContextIs400NamingBothNumbers) {
  start();
  const std::string text(100, 'x');
  const size_t n = engine->tokenizer().encode_prompt(text).size();
  ASSERT_GT(static_cast<int64_t>(n), engine->n_ctx);
  HttpReply r = post("/v1/completions", R"({"prompt": ")" + text + R"("})");
  EXPECT_EQ(r.status, 400);
  json e = error_of(r);
  const std::string msg = e["message"];
  EXPECT_NE(msg.find(std::to_string(n)), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(engine->n_ctx)), std::string::npos) << msg;
  EXPECT_EQ(e["param"], "prompt");
  r = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": ")" + text + R"("}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error_of(r)["param"], "messages");
}

TEST_F(ServeHttp, QueueFullIs503) {
  engine->queue_capacity = 1;
  engine->hold(true);
  start();
  RawConnection first(server->port());
  ASSERT_TRUE(first.send(http_request("POST", "/v1/completions", R"({"prompt": "a", "stream": true})")));
  for (int i = 0; i < 500 && engine->unfinished() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(engine->unfinished(), 1);
  HttpReply r = post("/v1/chat/completions", kChatBody);
  EXPECT_EQ(r.status, 503);
  json e = error_of(r);
  EXPECT_EQ(e["code"], "queue_full");
  EXPECT_EQ(e["type"], "server_error");
  engine->hold(false);
  EXPECT_NE(first.read(5000, "[DONE]").find("data: [DONE]"), std::string::npos);
}

TEST_F(ServeHttp, ShuttingDownIs503AndCancelsWhatRuns) {
  engine->hold(true);
  start();
  RawConnection streamed(server->port());
  ASSERT_TRUE(streamed.send(http_request("POST", "/v1/chat/completions",
                                         R"({"messages": [{"role": "user", "content": "x"}], "stream": true})")));
  RawConnection whole(server->port());
  ASSERT_TRUE(whole.send(http_request("POST", "/v1/completions", R"({"prompt": "x"})")));
  for (int i = 0; i < 500 && engine->unfinished() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(engine->unfinished(), 2);
  server->begin_shutdown();
  engine->shutdown(false);
  // The stream ends with an error event and [DONE]; the whole answer is an error.
  HttpReply s = parse_reply(streamed.read(5000));
  const auto events = sse_data(s.body);
  ASSERT_GE(events.size(), 2u) << s.body;
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[events.size() - 2])["error"]["code"], "cancelled");
  HttpReply w = parse_reply(whole.read(5000));
  EXPECT_EQ(json::parse(w.body)["error"]["code"], "cancelled") << w.body;
  HttpReply r = post("/v1/chat/completions", kChatBody);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(error_of(r)["code"], "shutting_down");
  EXPECT_EQ(get("/health").status, 503);
}

TEST_F(ServeHttp, GarbageRequestsGetAnswersNotCrashes) {
  start();
  for (const std::string& raw :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET / HTTP/1.1\r\nBad Header\r\n\r\n"),
        "GET /" + std::string(10000, 'a') + " HTTP/1.1\r\n\r\n", std::string("\x00\x01\x02\r\n\r\n", 7),
        std::string("POST /v1/completions HTTP/1.1\r\nContent-Length: -5\r\n\r\n"),
        std::string("POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n")}) {
    RawConnection c(server->port());
    c.send(raw);
    const HttpReply r = parse_reply(c.read(3000, "\r\n\r\n"));
    EXPECT_GE(r.status, 400) << raw.substr(0, 60);
    EXPECT_LT(r.status, 500) << raw.substr(0, 60);
  }
  // A length over the limit is refused before the body is read.
  RawConnection c(server->port());
  c.send("POST /v1/completions HTTP/1.1\r\nContent-Length: 100000000000\r\n\r\n");
  EXPECT_EQ(parse_reply(c.read(3000, "payload_too_large")).status, 413);
  EXPECT_EQ(get("/health").status, 200);
}

}  // namespace
}  // namespace loom::test
