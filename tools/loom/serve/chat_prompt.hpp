// The prompt tokens of a request as the model reads them. A chat's messages
// are rendered the way `loom chat` (llm/chat/chat.hpp) feeds a conversation
// turn by turn: the first user turn (with the system text) through the
// tokenizer's prompt rule (BOS where the file wants one), each earlier
// assistant reply as its tokens plus the model's end-of-turn token, then
// the format's text between turns; the last message is the user's and the
// text ends where the assistant's reply begins. A completion's prompt is
// encoded as `loom run` encodes -p TEXT (an empty one is BOS alone).
// Special-token text in the messages becomes the special tokens, as in
// `loom chat`. Thread-safe (no state).
#pragma once

#include <string>
#include <vector>

#include "llm/chat/chat_template.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "loom/runtime/status.hpp"
#include "serve/openai_request.hpp"

namespace loom::cli::serve {

// The format called `name` (llm::chat_format_name); unknown names are plain.
llm::ChatFormat chat_format_named(const std::string& name);

// The conversation's tokens. Consecutive messages of one role are joined
// with a blank line; system messages are allowed only before the first
// user message (a later one is an error naming it in *param, like a
// conversation that does not end with a user message).
StatusOr<std::vector<llm::TokenId>> chat_prompt_tokens(const std::vector<ChatMessage>& messages,
                                                       const llm::ChatTemplate& format,
                                                       const llm::Tokenizer& tokenizer, std::string* param);

// A completion request's tokens: its ids (each checked against the
// vocabulary) or its text encoded with the file's prompt rule.
StatusOr<std::vector<llm::TokenId>> completion_prompt_tokens(const OpenAiRequest& request,
                                                             const llm::Tokenizer& tokenizer, std::string* param);

}  // namespace loom::cli::serve
