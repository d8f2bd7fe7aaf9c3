#include "serve/chat_prompt.hpp"

namespace loom::cli::serve {
namespace {

struct Turn {
  std::string user;
  std::string reply;  // the assistant's answer to `user` ("" for the last turn)
};

Status bad(std::string* param, const std::string& name, const std::string& what) {
  *param = name;
  return invalid_argument("[serve.request] " + name + ": " + what);
}

void append(std::string* to, const std::string& text) {
  if (!to->empty()) *to += "\n\n";
  *to += text;
}

// The system text and the turns; the last turn has no reply.
Status to_turns(const std::vector<ChatMessage>& messages, std::string* system, std::vector<Turn>* turns,
                std::string* param) {
  std::string last_role;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const std::string name = "messages[" + std::to_string(i) + "].role";
    if (m.role == "system") {
      if (!turns->empty()) return bad(param, name, "a system message must come before the first user message");
      append(system, m.content);
    } else if (m.role == "user") {
      if (last_role == "user") {
        append(&turns->back().user, m.content);
      } else {
        turns->push_back(Turn{m.content, ""});
      }
    } else {  // assistant
      if (turns->empty()) return bad(param, name, "an assistant message must follow a user message");
      append(&turns->back().reply, m.content);
    }
    last_role = m.role;
  }
  if (last_role != "user") {
    return bad(param, "messages", "the last message must be the user's (the reply to it is generated)");
  }
  return Status();
}

}  // namespace

llm::ChatFormat chat_format_named(const std::string& name) {
  llm::ChatFormat f = llm::ChatFormat::kPlain;
  return llm::chat_format_from_name(name, &f) ? f : llm::ChatFormat::kPlain;
}

StatusOr<std::vector<llm::TokenId>> chat_prompt_tokens(const std::vector<ChatMessage>& messages,
                                                       const llm::ChatTemplate& format,
                                                       const llm::Tokenizer& tokenizer, std::string* param) {
  std::string ignored;
  if (param == nullptr) param = &ignored;
  std::string system;
  std::vector<Turn> turns;
  LOOM_RETURN_IF_ERROR(to_turns(messages, &system, &turns, param));
  const llm::SpecialTokens& sp = tokenizer.special();
  // The token that ended an earlier reply: the model's end of turn, else EOS.
  const llm::TokenId end_of_reply = sp.eot != llm::kNoToken ? sp.eot : sp.eos;
  std::vector<llm::TokenId> out;
  for (size_t t = 0; t < turns.size(); ++t) {
    std::vector<llm::TokenId> in;
    if (t == 0) {
      in = tokenizer.encode_prompt(format.user_turn(system, turns[t].user, true));
    } else {
      in = tokenizer.encode(format.after_reply() + format.user_turn(system, turns[t].user, false), false);
    }
    out.insert(out.end(), in.begin(), in.end());
    if (t + 1 < turns.size()) {
      const std::vector<llm::TokenId> reply = tokenizer.encode(turns[t].reply, false);
      out.insert(out.end(), reply.begin(), reply.end());
      if (end_of_reply != llm::kNoToken) out.push_back(end_of_reply);
    }
  }
  return out;
}

StatusOr<std::vector<llm::TokenId>> completion_prompt_tokens(const OpenAiRequest& request,
                                                             const llm::Tokenizer& tokenizer, std::string* param) {
  if (request.prompt_is_ids) {
    const int32_t n_vocab = tokenizer.n_vocab();
    for (size_t i = 0; i < request.prompt_ids.size(); ++i) {
      if (request.prompt_ids[i] >= n_vocab) {
        const std::string name = "prompt[" + std::to_string(i) + "]";
        if (param) *param = name;
        return invalid_argument("[serve.request] " + name + ": token id " + std::to_string(request.prompt_ids[i]) +
                                " is outside the vocabulary of " + std::to_string(n_vocab));
      }
    }
    if (!request.prompt_ids.empty()) return request.prompt_ids;
    return std::vector<llm::TokenId>{tokenizer.special().bos};
  }
  std::vector<llm::TokenId> ids = tokenizer.encode_prompt(request.prompt);
  if (ids.empty()) ids.push_back(tokenizer.special().bos);  // as llm::generate starts an empty prompt
  return ids;
}

}  // namespace loom::cli::serve
