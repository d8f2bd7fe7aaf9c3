#include "serve/openai_response.hpp"

#include <chrono>
#include <random>

namespace loom::cli::serve {
namespace {

std::string random_hex(size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(n, '0');
  uint64_t bits = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 16 == 0) bits = rng();
    s[i] = kHex[bits & 15];
    bits >>= 4;
  }
  return s;
}

Json null_or(const char* s) { return s ? Json(s) : Json(nullptr); }

Json head(const ResponseMeta& meta, const char* object) {
  Json j;
  j["id"] = meta.id;
  j["object"] = object;
  j["created"] = meta.created;
  j["model"] = meta.model;
  return j;
}

}  // namespace

ResponseMeta new_response_meta(Endpoint endpoint, std::string model) {
  ResponseMeta m;
  m.endpoint = endpoint;
  m.id = (endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") + random_hex(24);
  m.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                  .count();
  m.model = std::move(model);
  return m;
}

Usage usage_of(const llm::serve::CompletionEvent& done) {
  return Usage{done.prompt_tokens, done.completion_tokens, done.cached_tokens};
}

Json usage_json(const Usage& u) {
  Json j;
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  j["prompt_tokens_details"] = Json{{"cached_tokens", u.cached_tokens}};
  return j;
}

const char* openai_finish_reason(llm::serve::FinishReason r) {
  switch (r) {
    case llm::serve::FinishReason::kStop: return "stop";
    case llm::serve::FinishReason::kLength: return "length";
    default: return nullptr;
  }
}

Json logprobs_json(Endpoint endpoint, const std::vector<llm::serve::TokenLogprob>& tokens,
                   const llm::Tokenizer& tokenizer, int64_t* text_offset) {
  auto piece = [&](llm::TokenId id) {
    StatusOr<std::string> p = tokenizer.token_to_piece(id, /*render_special=*/true);
    return p.ok() ? std::move(p).value() : std::string();
  };
  auto bytes = [](const std::string& p) {
    Json b = Json::array();
    for (unsigned char c : p) b.push_back(static_cast<int>(c));
    return b;
  };
  if (endpoint == Endpoint::kChat) {
    Json content = Json::array();
    for (const llm::serve::TokenLogprob& t : tokens) {
      const std::string p = piece(t.token);
      Json top = Json::array();
      for (const auto& [id, lp] : t.top) {
        const std::string q = piece(id);
        top.push_back(Json{{"token", q}, {"logprob", lp}, {"bytes", bytes(q)}});
      }
      content.push_back(Json{{"token", p}, {"logprob", t.logprob}, {"bytes", bytes(p)}, {"top_logprobs", top}});
    }
    return Json{{"content", content}, {"refusal", nullptr}};
  }
  Json pieces = Json::array(), lps = Json::array(), tops = Json::array(), offsets = Json::array();
  for (const llm::serve::TokenLogprob& t : tokens) {
    const std::string p = piece(t.token);
    pieces.push_back(p);
    lps.push_back(t.logprob);
    Json top = Json::object();
    for (const auto& [id, lp] : t.top) {
      const std::string q = piece(id);
      if (!top.contains(q)) top[q] = lp;  // (two ids of one text: the likelier's)
    }
    tops.push_back(top);
    offsets.push_back(*text_offset);
    *text_offset += static_cast<int64_t>(p.size());
  }
  return Json{{"tokens", pieces}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

Json completion_json(const ResponseMeta& meta, const std::string& text, const char* finish_reason,
                     const Usage& usage, Json logprobs) {
  const bool chat = meta.endpoint == Endpoint::kChat;
  Json j = head(meta, chat ? "chat.completion" : "text_completion");
  Json choice;
  choice["index"] = 0;
  if (chat) {
    choice["message"] = Json{{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = null_or(finish_reason);
  j["choices"] = Json::array({choice});
  j["usage"] = usage_json(usage);
  return j;
}

Json chunk_json(const ResponseMeta& meta, const std::string& text, bool with_role, const char* finish_reason,
                Json logprobs) {
  const bool chat = meta.endpoint == Endpoint::kChat;
  Json j = head(meta, chat ? "chat.completion.chunk" : "text_completion");
  Json choice;
  choice["index"] = 0;
  if (chat) {
    Json delta = Json::object();
    if (with_role) delta["role"] = "assistant";
    if (with_role || !text.empty() || finish_reason == nullptr) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = null_or(finish_reason);
  j["choices"] = Json::array({choice});
  return j;
}

Json usage_chunk_json(const ResponseMeta& meta, const Usage& usage) {
  Json j = head(meta, meta.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = Json::array();
  j["usage"] = usage_json(usage);
  return j;
}

Json model_json(const std::string& model_id, int64_t created) {
  Json m;
  m["id"] = model_id;
  m["object"] = "model";
  m["created"] = created;
  m["owned_by"] = "loom";
  return m;
}

Json models_json(const std::string& model_id, int64_t created) {
  Json j;
  j["object"] = "list";
  j["data"] = Json::array({model_json(model_id, created)});
  return j;
}

Json error_json(const std::string& message, const std::string& type, const std::string& param,
                const std::string& code) {
  Json e;
  e["message"] = message;
  e["type"] = type;
  e["param"] = param.empty() ? Json(nullptr) : Json(param);
  e["code"] = code.empty() ? Json(nullptr) : Json(code);
  return Json{{"error", e}};
}

std::string json_body(const Json& j) { return json_text(j); }

std::string sse_event(const Json& j) { return "data: " + json_text(j) + "\n\n"; }

}  // namespace loom::cli::serve
