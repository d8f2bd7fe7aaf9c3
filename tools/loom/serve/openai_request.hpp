// The request bodies and headers `loom serve` reads, parsed by pure
// functions: POST /v1/chat/completions (messages) and /v1/completions
// (prompt) with their sampling fields, POST /tokenize and /detokenize, and
// the Authorization header's bearer key. A bad field is INVALID_ARGUMENT
// naming it (the HTTP layer answers 400 with the field as the error's
// param); unknown fields are ignored and JSON null reads as "not given", as
// OpenAI's own server does. Nothing throws: the JSON is parsed without
// exceptions and every access is checked. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llm/session/sampling.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "loom/runtime/status.hpp"

namespace loom::cli::serve {

enum class Endpoint { kChat, kCompletion };

// One message of a chat conversation.
struct ChatMessage {
  std::string role;     // "system", "user" or "assistant" ("developer" reads as "system")
  std::string content;  // a string, or the text parts of a content array joined
};

struct OpenAiRequest {
  Endpoint endpoint = Endpoint::kCompletion;
  std::vector<ChatMessage> messages;     // kChat: at least one
  std::string prompt;                    // kCompletion: the text (prompt_is_ids false)
  std::vector<llm::TokenId> prompt_ids;  // kCompletion: the prompt given as token ids
  bool prompt_is_ids = false;
  int64_t max_tokens = -1;  // max_tokens or max_completion_tokens; -1: not given
  // OpenAI's defaults: temperature 1, top_p 1, every token; a random seed
  // unless `seed` is given. top_p 0 keeps only the most likely token.
  llm::SamplerOptions sampling;
  std::vector<std::string> stop;  // at most 4, none empty
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool ignore_eos = false;     // loom's (and llama-server's) extension: run to max_tokens
  // -1: no log-probabilities. Else each generated token's, with this many
  // alternatives: chat's logprobs true + top_logprobs (0..20, only with
  // logprobs true), a completion's logprobs N (0..20; OpenAI's own allows 5).
  int32_t logprobs = -1;
  std::string model;           // as given (the server serves one model and ignores it)
};

// The most stop strings a request may give (OpenAI's limit).
constexpr size_t kMaxStop = 4;

// Parses a request body for `endpoint`. On error *param names the field
// ("max_tokens", "messages[2].role", "stop[1]"; "" for the body as a whole).
StatusOr<OpenAiRequest> parse_openai_request(Endpoint endpoint, std::string_view body, std::string* param);

// POST /tokenize: {"content": TEXT, "add_special": BOOL (default false:
// no BOS)}.
struct TokenizeRequest {
  std::string content;
  bool add_special = false;
};
StatusOr<TokenizeRequest> parse_tokenize_request(std::string_view body, std::string* param);

// POST /detokenize: {"tokens": [ID, ...]} with every id in [0, n_vocab).
StatusOr<std::vector<llm::TokenId>> parse_detokenize_request(std::string_view body, int32_t n_vocab,
                                                             std::string* param);

// The key of an Authorization header "Bearer KEY" (the scheme in any case,
// spaces around the key dropped); "" for any other value.
std::string bearer_token(std::string_view authorization);
// Whether a == b, in a time that depends only on expected.size(): the
// server's key is `expected`, so a client learns nothing from the timing.
bool constant_time_equal(std::string_view given, std::string_view expected);
// Whether the Authorization header carries `key` (compared in constant time).
bool authorization_matches(std::string_view authorization, std::string_view key);

}  // namespace loom::cli::serve
