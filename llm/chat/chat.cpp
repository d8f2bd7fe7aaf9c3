#include "llm/chat/chat.hpp"

#include <utility>

namespace loom::llm {

StatusOr<Chat> Chat::create(LlamaSession* session, const Tokenizer* tokenizer, ChatTemplate format,
                            std::string system, const SamplerOptions& sampling) {
  if (!session || !tokenizer) return invalid_argument("[llm.chat] session and tokenizer are required");
  LOOM_ASSIGN_OR_RETURN(Sampler sampler, Sampler::create(sampling));
  session->reset();
  return Chat(session, tokenizer, format, std::move(system), std::move(sampler));
}

int64_t Chat::tokens_used() const { return session_->n_past(); }

StatusOr<ChatReply> Chat::send(const std::string& message, int32_t max_tokens,
                               const std::function<void(const std::string&)>& on_text) {
  std::vector<TokenId> in;
  if (first_) {
    in = tokenizer_->encode_prompt(format_.user_turn(system_, message, true));
  } else {
    if (pending_eog_ != kNoToken) in.push_back(pending_eog_);
    const std::vector<TokenId> rest =
        tokenizer_->encode(format_.after_reply() + format_.user_turn(system_, message, false), false);
    in.insert(in.end(), rest.begin(), rest.end());
  }
  const int64_t room = session_->n_ctx() - session_->n_past();
  if (static_cast<int64_t>(in.size()) >= room) {
    return invalid_argument("[llm.chat] the message needs " + std::to_string(in.size()) + " tokens, " +
                            std::to_string(room) + " are left of the context of " +
                            std::to_string(session_->n_ctx()) + " (start a new chat or raise --ctx)");
  }
  LOOM_RETURN_IF_ERROR(session_->eval(in, false, &logits_));
  first_ = false;
  pending_eog_ = kNoToken;

  ChatReply r;
  std::string decoded;
  const int32_t n_vocab = tokenizer_->n_vocab();
  for (int32_t i = 0; i < max_tokens; ++i) {
    const TokenId next = sampler_.sample(logits_.data(), n_vocab);
    if (tokenizer_->is_eog(next)) {
      pending_eog_ = next;
      r.ended = true;
      break;
    }
    r.tokens.push_back(next);
    // Stream the growth of the decoded reply (pieces may depend on context).
    LOOM_ASSIGN_OR_RETURN(std::string text, tokenizer_->decode(r.tokens));
    if (text.size() > decoded.size() && text.compare(0, decoded.size(), decoded) == 0) {
      if (on_text) on_text(text.substr(decoded.size()));
      decoded = std::move(text);
    }
    if (session_->n_past() + 1 >= session_->n_ctx()) {
      r.context_full = true;
      break;
    }
    LOOM_RETURN_IF_ERROR(session_->eval({next}, false, &logits_));
  }
  LOOM_ASSIGN_OR_RETURN(r.text, tokenizer_->decode(r.tokens));
  return r;
}

}  // namespace loom::llm
