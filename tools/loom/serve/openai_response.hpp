// The JSON `loom serve` answers with, in OpenAI's shapes: a whole
// completion ("chat.completion", "text_completion"), the chunks of a
// streamed one ("chat.completion.chunk" with a delta, the first carrying the
// role; "text_completion" chunks) written as server-sent events, the usage
// counts, the model list, and the error object {"error": {message, type,
// param, code}}. Pure functions over their arguments (ids from a
// per-thread random generator). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json.hpp"
#include "llm/serve/engine.hpp"
#include "serve/openai_request.hpp"

namespace loom::cli::serve {

// What every response or chunk of one request repeats.
struct ResponseMeta {
  Endpoint endpoint = Endpoint::kCompletion;
  std::string id;        // "chatcmpl-<24 hex>" or "cmpl-<24 hex>"
  int64_t created = 0;   // Unix seconds
  std::string model;     // the engine's model id
};
ResponseMeta new_response_meta(Endpoint endpoint, std::string model);

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens whose KV was reused
};
Usage usage_of(const llm::serve::CompletionEvent& done);
Json usage_json(const Usage& u);

// "stop" or "length"; nullptr for a request that did not finish (cancelled
// or failed: those are answered with an error instead).
const char* openai_finish_reason(llm::serve::FinishReason r);

// The choice's "logprobs" of these generated tokens (each token's text is
// its piece, special tokens' shown; invalid UTF-8 replaced in the strings,
// the exact bytes in "bytes"): chat's {"content": [{token, logprob, bytes,
// top_logprobs: [{token, logprob, bytes}]}], "refusal": null}; a
// completion's {"tokens", "token_logprobs", "top_logprobs": [{piece:
// logprob}], "text_offset"}, the offsets in bytes of the generated text
// from *text_offset on (advanced past these tokens).
Json logprobs_json(Endpoint endpoint, const std::vector<llm::serve::TokenLogprob>& tokens,
                   const llm::Tokenizer& tokenizer, int64_t* text_offset);

// The whole answer of a request that was not streamed; logprobs: the
// choice's (null when not asked for).
Json completion_json(const ResponseMeta& meta, const std::string& text, const char* finish_reason,
                     const Usage& usage, Json logprobs = nullptr);
// One streamed chunk: `text` as the delta (chat: with the role when
// with_role), finish_reason null when nullptr, logprobs the chunk's tokens'.
Json chunk_json(const ResponseMeta& meta, const std::string& text, bool with_role, const char* finish_reason,
                Json logprobs = nullptr);
// The last chunk of a stream with stream_options.include_usage: no choices.
Json usage_chunk_json(const ResponseMeta& meta, const Usage& usage);

// GET /v1/models (and one model of it).
Json model_json(const std::string& model_id, int64_t created);
Json models_json(const std::string& model_id, int64_t created);

// OpenAI's error object; param and code are null when empty.
Json error_json(const std::string& message, const std::string& type, const std::string& param = "",
                const std::string& code = "");

// The text of a JSON value (bad UTF-8 replaced, never thrown on).
std::string json_body(const Json& j);
// One server-sent event: "data: <json>\n\n".
std::string sse_event(const Json& j);
// The event that ends every stream.
constexpr const char kSseDone[] = "data: [DONE]\n\n";

}  // namespace loom::cli::serve
