// The request parser of `loom serve` (tools/loom/serve/openai_request.hpp):
// every field read, every bad one refused with its name, no exception on
// any input; the bearer key check.
#include "serve/openai_request.hpp"

#include <gtest/gtest.h>

#include <string>

namespace loom::cli::serve {
namespace {

// The param an INVALID_ARGUMENT names for this body (and that it failed).
std::string bad_param(Endpoint ep, const std::string& body) {
  std::string param = "<unset>";
  auto r = parse_openai_request(ep, body, &param);
  EXPECT_FALSE(r.ok()) << body;
  if (!r.ok()) {
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("[serve.request]"), std::string::npos) << r.status().message();
    if (!param.empty()) {
      EXPECT_NE(r.status().message().find(param), std::string::npos) << r.status().message();
    }
  }
  return param;
}

TEST(ServeRequest, ChatFieldsAreRead) {
  std::string param;
  auto r = parse_openai_request(Endpoint::kChat, R"({
    "model": "whatever", "messages": [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": [{"type": "text", "text": "Hi"},
                                                                   {"type": "text", "text": " there"}]}],
    "max_tokens": 12, "temperature": 0.5, "top_p": 0.9, "top_k": 7, "seed": 99,
    "stop": ["\n", "END"], "n": 1, "stream": true, "stream_options": {"include_usage": true},
    "frequency_penalty": 0, "user": "someone", "ignore_eos": true})",
                                &param);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->endpoint, Endpoint::kChat);
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_EQ(r->messages[1].content, "Hi there");
  EXPECT_EQ(r->max_tokens, 12);
  EXPECT_FLOAT_EQ(r->sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r->sampling.top_p, 0.9f);
  EXPECT_EQ(r->sampling.top_k, 7);
  EXPECT_EQ(r->sampling.seed, 99u);
  EXPECT_EQ(r->stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_TRUE(r->ignore_eos);
  EXPECT_EQ(r->model, "whatever");
}

TEST(ServeRequest, DefaultsAreOpenAis) {
  auto r = parse_openai_request(Endpoint::kCompletion, R"({"prompt": "Once"})", nullptr);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->prompt, "Once");
  EXPECT_FALSE(r->prompt_is_ids);
  EXPECT_EQ(r->max_tokens, -1);
  EXPECT_FLOAT_EQ(r->sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r->sampling.top_p, 1.0f);
  EXPECT_EQ(r->sampling.top_k, 0);
  EXPECT_FALSE(r->stream);
  EXPECT_FALSE(r->include_usage);
  EXPECT_FALSE(r->ignore_eos);
  EXPECT_TRUE(r->stop.empty());
}

TEST(ServeRequest, NullMeansNotGiven) {
  auto r = parse_openai_request(Endpoint::kCompletion,
                                R"({"prompt": "x", "max_tokens": null, "stop": null, "temperature": null,
                                    "stream": null, "model": null, "seed": null, "n": null})",
                                nullptr);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->max_tokens, -1);
  EXPECT_FLOAT_EQ(r->sampling.temperature, 1.0f);
}

TEST(ServeRequest, PromptForms) {
  auto one = parse_openai_request(Endpoint::kCompletion, R"({"prompt": ["text in an array"]})", nullptr);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->prompt, "text in an array");
  auto ids = parse_openai_request(Endpoint::kCompletion, R"({"prompt": [1, 2, 300]})", nullptr);
  ASSERT_TRUE(ids.ok());
  EXPECT_TRUE(ids->prompt_is_ids);
  EXPECT_EQ(ids->prompt_ids, (std::vector<llm::TokenId>{1, 2, 300}));
  EXPECT_EQ(bad_param(Endpoint::kCompletion, R"({"prompt": ["a", "b"]})"), "prompt");
  EXPECT_EQ(bad_param(Endpoint::kCompletion, R"({"prompt": [[1, 2]]})"), "prompt");
  EXPECT_EQ(bad_param(Endpoint::kCompletion, R"({"prompt": [1, -2]})"), "prompt[1]");
  EXPECT_EQ(bad_param(Endpoint::kCompletion, R"({"prompt": 5})"), "prompt");
  EXPECT_EQ(bad_param(Endpoint::kCompletion, R"({"max_tokens": 5})"), "prompt");
}

TEST(ServeRequest, MaxCompletionTokensIsMaxTokens) {
  auto r = parse_openai_request(Endpoint::kChat, R"({"messages": [{"role": "user", "content": "x"}],
                                                      "max_completion_tokens": 3})",
                                nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_tokens, 3);
}

TEST(ServeRequest, TopPZeroKeepsTheMostLikelyToken) {
  auto r = parse_openai_request(Endpoint::kCompletion, R"({"prompt": "x", "top_p": 0, "top_k": 9})", nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->sampling.top_k, 1);
}

TEST(ServeRequest, EachBadFieldIsNamed) {
  const std::string u = R"("messages": [{"role": "user", "content": "x"}])";
  auto chat = [&](const std::string& more) { return "{" + u + ", " + more + "}"; };
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("max_tokens": -1)")), "max_tokens");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("max_tokens": 1.5)")), "max_tokens");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("max_tokens": "10")")), "max_tokens");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("max_tokens": 99999999999)")), "max_tokens");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("max_completion_tokens": true)")), "max_completion_tokens");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("temperature": "hot")")), "temperature");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("temperature": 2.5)")), "temperature");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("temperature": -0.1)")), "temperature");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("top_p": 1.01)")), "top_p");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("top_k": -1)")), "top_k");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("seed": "7")")), "seed");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("seed": 1.5)")), "seed");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("stop": 3)")), "stop");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("stop": ["a", 3])")), "stop[1]");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("stop": "")")), "stop");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("stop": ["a", "b", "c", "d", "e"])")), "stop");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("n": 2)")), "n");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("n": 0)")), "n");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("stream": "yes")")), "stream");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("stream_options": true)")), "stream_options");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("stream_options": {"include_usage": 1})")),
            "stream_options.include_usage");
  EXPECT_EQ(bad_param(Endpoint::kChat, chat(R"("model": 4)")), "model");
}

TEST(ServeRequest, BadMessagesAreNamed) {
  EXPECT_EQ(bad_param(Endpoint::kChat, R"({})"), "messages");
  EXPECT_EQ(bad_param(Endpoint::kChat, R"({"messages": []})"), "messages");
  EXPECT_EQ(bad_param(Endpoint::kChat, R"({"messages": {"role": "user"}})"), "messages");
  EXPECT_EQ(bad_param(Endpoint::kChat, R"({"messages": ["hi"]})"), "messages[0]");
  EXPECT_EQ(bad_param(Endpoint::kChat, R"({"messages": [{"content": "x"}]})"), "messages[0].role");
  EXPECT_EQ(bad_param(Endpoint::kChat, R"({"messages": [{"role": "tool", "content": "x"}]})"), "messages[0].role");
  EXPECT_EQ(bad_param(Endpoint::kChat, R"({"messages": [{"role": "user", "content": 5}]})"), "messages[0].content");
  EXPECT_EQ(bad_param(Endpoint::kChat, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"),
            "messages[0].content[0].type");
  EXPECT_EQ(bad_param(Endpoint::kChat, R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})"),
            "messages[0].content[0].text");
}

TEST(ServeRequest, MalformedBodiesNameNoField) {
  for (const char* body : {"", "{", "not json", "[1, 2]", "\"text\"", "null", "{\"a\": 1,}", "{\"a\": \"\xff\"}"}) {
    EXPECT_EQ(bad_param(Endpoint::kChat, body), "") << body;
  }
  // Deep nesting is refused or parsed, never a crash.
  std::string deep(100000, '[');
  std::string param;
  EXPECT_FALSE(parse_openai_request(Endpoint::kCompletion, deep, &param).ok());
}

TEST(ServeRequest, TokenizeAndDetokenizeBodies) {
  std::string param;
  auto t = parse_tokenize_request(R"({"content": "hello", "add_special": true})", &param);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->content, "hello");
  EXPECT_TRUE(t->add_special);
  EXPECT_FALSE(parse_tokenize_request(R"({"content": 3})", &param).ok());
  EXPECT_EQ(param, "content");
  EXPECT_FALSE(parse_tokenize_request(R"({})", &param).ok());
  EXPECT_EQ(param, "content");
  auto d = parse_detokenize_request(R"({"tokens": [1, 2, 3]})", 10, &param);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, (std::vector<llm::TokenId>{1, 2, 3}));
  EXPECT_FALSE(parse_detokenize_request(R"({"tokens": [1, 10]})", 10, &param).ok());
  EXPECT_EQ(param, "tokens[1]");
  EXPECT_FALSE(parse_detokenize_request(R"({"tokens": "1 2"})", 10, &param).ok());
  EXPECT_EQ(param, "tokens");
}

TEST(ServeAuth, BearerToken) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("bearer   abc  "), "abc");
  EXPECT_EQ(bearer_token("BEARER abc"), "abc");
  EXPECT_EQ(bearer_token("Basic abc"), "");
  EXPECT_EQ(bearer_token("Bearerabc"), "");
  EXPECT_EQ(bearer_token("Bearer"), "");
  EXPECT_EQ(bearer_token(""), "");
}

TEST(ServeAuth, KeysCompareWhole) {
  EXPECT_TRUE(constant_time_equal("secret", "secret"));
  EXPECT_FALSE(constant_time_equal("secreT", "secret"));
  EXPECT_FALSE(constant_time_equal("secret1", "secret"));
  EXPECT_FALSE(constant_time_equal("secre", "secret"));
  EXPECT_FALSE(constant_time_equal("", "secret"));
  EXPECT_TRUE(authorization_matches("Bearer secret", "secret"));
  EXPECT_FALSE(authorization_matches("Bearer secret", ""));
  EXPECT_FALSE(authorization_matches("Bearer", "secret"));
  EXPECT_FALSE(authorization_matches("secret", "secret"));
  EXPECT_FALSE(authorization_matches(std::string("Bearer secret\0x", 15), "secret"));
}

// logprobs: chat's boolean with top_logprobs (0..20, only beside logprobs
// true), a completion's integer (0..20); absent or null: none.
TEST(ServeRequest, LogprobsAreRead) {
  auto chat = [](const std::string& extra) {
    return parse_openai_request(Endpoint::kChat,
                                R"({"messages": [{"role": "user", "content": "Hi"}])" + extra + "}", nullptr);
  };
  EXPECT_EQ(chat("")->logprobs, -1);
  EXPECT_EQ(chat(R"(, "logprobs": false)")->logprobs, -1);
  EXPECT_EQ(chat(R"(, "logprobs": true)")->logprobs, 0);
  EXPECT_EQ(chat(R"(, "logprobs": true, "top_logprobs": 5)")->logprobs, 5);
  EXPECT_EQ(chat(R"(, "logprobs": null, "top_logprobs": null)")->logprobs, -1);
  auto done = parse_openai_request(Endpoint::kCompletion, R"({"prompt": "Once", "logprobs": 3})", nullptr);
  ASSERT_TRUE(done.ok()) << done.status().to_string();
  EXPECT_EQ(done->logprobs, 3);
  EXPECT_EQ(bad_param(Endpoint::kChat, R"({"messages": [{"role": "user", "content": "Hi"}], "top_logprobs": 2})"),
            "top_logprobs");
  EXPECT_EQ(bad_param(Endpoint::kChat,
                      R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": true, "top_logprobs": 21})"),
            "top_logprobs");
  EXPECT_EQ(bad_param(Endpoint::kChat, R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": 2})"),
            "logprobs");
  EXPECT_EQ(bad_param(Endpoint::kCompletion, R"({"prompt": "Once", "logprobs": true})"), "logprobs");
  EXPECT_EQ(bad_param(Endpoint::kCompletion, R"({"prompt": "Once", "logprobs": -1})"), "logprobs");
}

}  // namespace
}  // namespace loom::cli::serve
