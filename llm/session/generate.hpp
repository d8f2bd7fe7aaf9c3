// Text generation: prompt -> tokens (BOS + encode), prefill in batches,
// then one token per step until EOS, n_predict tokens or the context end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/session/llama_session.hpp"
#include "llm/session/sampling.hpp"
#include "llm/tokenizer/tokenizer.hpp"

namespace loom::llm {

struct GenerateOptions {
  int32_t n_predict = 200;  // tokens to generate at most
  SamplerOptions sampling;
};

struct GenerateResult {
  std::vector<TokenId> prompt_tokens;     // BOS included
  std::vector<TokenId> generated_tokens;  // EOS not included
  std::string text;                       // the generated continuation only
  bool stopped_at_eos = false;
  bool stopped_at_context = false;
  bool stopped_by_caller = false;  // on_text returned false
  double prompt_seconds = 0;
  double gen_seconds = 0;  // the decode steps (first token's sampling included)
  double prompt_tokens_per_s() const;
  double gen_tokens_per_s() const;
};

// on_text (may be empty) receives each new piece of text as it is decided
// and returns false to stop there (stopped_by_caller). The session is reset
// first. A prompt longer than the context is an error naming both lengths.
// `loom run` and the C API's loom_session_generate both run this.
StatusOr<GenerateResult> generate(LlamaSession& session, const Tokenizer& tokenizer, std::string_view prompt,
                                  const GenerateOptions& options,
                                  const std::function<bool(const std::string&)>& on_text = {});

}  // namespace loom::llm
