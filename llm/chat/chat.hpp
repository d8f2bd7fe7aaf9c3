// A conversation with a model: each user message is rendered in the model's
// chat format (llm/chat/chat_template.hpp), only the new text is evaluated (the
// KV cache keeps the conversation), and the reply is sampled until an
// end-of-generation token, a token limit or the end of the context.
// Not thread-safe; one Chat per session.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "llm/chat/chat_template.hpp"
#include "llm/session/llama_session.hpp"
#include "llm/session/sampling.hpp"
#include "llm/tokenizer/tokenizer.hpp"

namespace loom::llm {

struct ChatReply {
  std::string text;
  std::vector<TokenId> tokens;  // without the end-of-generation token
  bool ended = false;           // the model ended its turn (an EOG token)
  bool context_full = false;    // stopped at the end of the context
};

class Chat {
 public:
  // session and tokenizer are borrowed and must outlive the Chat. The
  // session is reset: a chat starts a new sequence.
  static StatusOr<Chat> create(LlamaSession* session, const Tokenizer* tokenizer, ChatTemplate format,
                               std::string system, const SamplerOptions& sampling);

  // One turn: evaluate the rendered message, then sample at most max_tokens
  // reply tokens, streaming text through on_text. A message that does not
  // fit in the context left is INVALID_ARGUMENT and changes nothing.
  StatusOr<ChatReply> send(const std::string& message, int32_t max_tokens,
                           const std::function<void(const std::string&)>& on_text);
  int64_t tokens_used() const;
  const ChatTemplate& format() const { return format_; }

 private:
  Chat(LlamaSession* s, const Tokenizer* t, ChatTemplate f, std::string sys, Sampler sampler)
      : session_(s), tokenizer_(t), format_(f), system_(std::move(sys)), sampler_(std::move(sampler)) {}

  LlamaSession* session_;
  const Tokenizer* tokenizer_;
  ChatTemplate format_;
  std::string system_;
  Sampler sampler_;
  bool first_ = true;
  // The end-of-generation token that closed the last reply, not yet in the
  // cache: it opens the next turn's text.
  TokenId pending_eog_ = kNoToken;
  std::vector<float> logits_;
};

}  // namespace loom::llm
