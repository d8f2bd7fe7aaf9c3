// libFuzzer entry for `loom serve`'s request parser
// (tools/loom/serve/openai_request.hpp, chat_prompt.hpp). The first input
// byte picks a mode, the rest is its data:
//   0, 1  a /v1/chat/completions or /v1/completions body: a request or an
//         INVALID_ARGUMENT (never an exception), and a parsed request's
//         prompt rendered with a chat format (the byte after the mode picks
//         it) and tokenized, its answer JSON written;
//   2, 3  a /tokenize or /detokenize body;
//   4     an Authorization header value and a key (split at the first
//         newline): the bearer check agrees with a plain comparison.
// scripts/fuzz.sh builds and runs it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "llm/chat/chat_template.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "serve/chat_prompt.hpp"
#include "serve/openai_request.hpp"
#include "serve/openai_response.hpp"

namespace {

using namespace loom::cli::serve;
using loom::llm::Tokenizer;

// <unk> <s> </s>, 256 byte tokens, the space piece and chatml's markers.
const Tokenizer& vocab() {
  static const Tokenizer t = [] {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    for (int b = 0; b < 256; ++b) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      tokens.push_back(buf);
      types.push_back(6);
    }
    for (const char* s : {"\xe2\x96\x81", "<|im_start|>", "<|im_end|>"}) {
      tokens.push_back(s);
      types.push_back(s[0] == '<' ? 3 : 1);
    }
    loom::llm::SpecialTokens sp;
    sp.eot = static_cast<loom::llm::TokenId>(tokens.size() - 1);
    return Tokenizer::from_vocab(tokens, {}, types, sp, "fuzz").value();
  }();
  return t;
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void fuzz_request(Endpoint ep, uint8_t format, std::string_view body) {
  std::string param;
  auto r = parse_openai_request(ep, body, &param);
  if (!r.ok()) {
    check(r.status().code() == loom::StatusCode::kInvalidArgument);
    return;
  }
  check(r->stop.size() <= kMaxStop);
  check(r->max_tokens >= -1);
  const loom::llm::ChatTemplate f(static_cast<loom::llm::ChatFormat>(format % 8));
  auto ids = ep == Endpoint::kChat ? chat_prompt_tokens(r->messages, f, vocab(), &param)
                                   : completion_prompt_tokens(*r, vocab(), &param);
  if (ids.ok()) {
    for (auto id : *ids) check(id >= 0 && id < vocab().n_vocab());
    std::string text = r->messages.empty() ? r->prompt : r->messages.back().content;
    const ResponseMeta meta = new_response_meta(ep, r->model);
    json_body(completion_json(meta, text, "stop", Usage{}));
    sse_event(chunk_json(meta, text, true, nullptr));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0] % 5;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string param;
  switch (mode) {
    case 0: fuzz_request(Endpoint::kChat, data[1], rest.substr(1)); break;
    case 1: fuzz_request(Endpoint::kCompletion, data[1], rest.substr(1)); break;
    case 2: static_cast<void>(parse_tokenize_request(rest, &param)); break;
    case 3: {
      auto ids = parse_detokenize_request(rest, vocab().n_vocab(), &param);
      if (ids.ok()) check(vocab().decode(*ids).ok());
      break;
    }
    case 4: {
      const size_t nl = rest.find('\n');
      const std::string_view header = rest.substr(0, nl);
      const std::string_view key = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      const bool match = authorization_matches(header, key);
      check(match == (!key.empty() && bearer_token(header) == key));
      check(constant_time_equal(key, key));
      break;
    }
  }
  return 0;
}
