#include "llm/session/generate.hpp"

#include <chrono>

namespace loom::llm {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double GenerateResult::prompt_tokens_per_s() const {
  return prompt_seconds > 0 ? static_cast<double>(prompt_tokens.size()) / prompt_seconds : 0.0;
}
double GenerateResult::gen_tokens_per_s() const {
  return gen_seconds > 0 ? static_cast<double>(generated_tokens.size()) / gen_seconds : 0.0;
}

StatusOr<GenerateResult> generate(LlamaSession& session, const Tokenizer& tokenizer, std::string_view prompt,
                                  const GenerateOptions& options,
                                  const std::function<bool(const std::string&)>& on_text) {
  if (options.n_predict < 0) {
    return invalid_argument("[llm.generate] n_predict " + std::to_string(options.n_predict) + " must be >= 0");
  }
  LOOM_ASSIGN_OR_RETURN(Sampler sampler, Sampler::create(options.sampling));
  GenerateResult r;
  // BOS/EOS as the file's tokenizer asks (a Qwen prompt gets no BOS).
  r.prompt_tokens = tokenizer.encode_prompt(prompt);
  if (r.prompt_tokens.empty()) r.prompt_tokens.push_back(tokenizer.special().bos);
  const auto n_prompt = static_cast<int64_t>(r.prompt_tokens.size());
  if (n_prompt > session.n_ctx()) {
    return invalid_argument("[llm.generate] the prompt has " + std::to_string(n_prompt) +
                            " tokens, more than the context of " + std::to_string(session.n_ctx()));
  }
  const int32_t n_vocab = static_cast<int32_t>(session.model().hparams().n_vocab);
  if (tokenizer.n_vocab() != n_vocab) {
    return invalid_argument("[llm.generate] the tokenizer has " + std::to_string(tokenizer.n_vocab()) +
                            " tokens, the model's vocabulary " + std::to_string(n_vocab) + ": they must match");
  }
  session.reset();
  std::vector<float> logits;
  auto t0 = std::chrono::steady_clock::now();
  LOOM_RETURN_IF_ERROR(session.eval(r.prompt_tokens, false, &logits));
  r.prompt_seconds = seconds_since(t0);

  // Text is streamed as the difference of decoded prefixes, so pieces that
  // depend on context (the stripped leading space) come out right.
  LOOM_ASSIGN_OR_RETURN(std::string prompt_text, tokenizer.decode(r.prompt_tokens));
  std::vector<TokenId> all = r.prompt_tokens;
  t0 = std::chrono::steady_clock::now();
  for (int32_t i = 0; i < options.n_predict; ++i) {
    const TokenId next = sampler.sample(logits.data(), n_vocab);
    if (tokenizer.is_eog(next)) {  // EOS, EOT (<|eot_id|>, <|im_end|>), ...
      r.stopped_at_eos = true;
      break;
    }
    r.generated_tokens.push_back(next);
    all.push_back(next);
    LOOM_ASSIGN_OR_RETURN(std::string text, tokenizer.decode(all));
    const std::string piece = text.size() > prompt_text.size() + r.text.size()
                                  ? text.substr(prompt_text.size() + r.text.size())
                                  : std::string();
    r.text += piece;
    if (on_text && !piece.empty() && !on_text(piece)) {
      r.stopped_by_caller = true;
      break;
    }
    if (i + 1 == options.n_predict) break;
    if (session.n_past() >= session.n_ctx()) {
      r.stopped_at_context = true;
      break;
    }
    LOOM_RETURN_IF_ERROR(session.eval({next}, false, &logits));
  }
  r.gen_seconds = seconds_since(t0);
  return r;
}

}  // namespace loom::llm
