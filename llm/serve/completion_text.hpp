// The text of one completion as its tokens arrive: decoded the way
// llm::generate decodes (the prompt and the reply together, so pieces that
// depend on what precedes them come out as `loom run` prints them), handed
// out only up to the last whole UTF-8 character and never past a point
// where a stop string could still begin, and cut before the first stop
// string found. Not thread-safe (one per request).
#pragma once

#include <string>
#include <vector>

#include "llm/tokenizer/tokenizer.hpp"
#include "loom/runtime/status.hpp"

namespace loom::llm::serve {

class CompletionText {
 public:
  // prompt: the token ids read before the reply; stop: the stop strings
  // (empty ones are ignored).
  static StatusOr<CompletionText> create(const Tokenizer* tokenizer, std::vector<TokenId> prompt,
                                         std::vector<std::string> stop);

  // Adds a generated token; returns the text that became final (possibly
  // empty). After a stop string appeared, stopped() is true and later
  // tokens add nothing.
  StatusOr<std::string> add(TokenId token);
  // The text still held back (a possible stop string's start, an
  // unfinished UTF-8 character), handed out when the reply ends otherwise.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  CompletionText(const Tokenizer* t, std::vector<TokenId> all, std::string prompt_text, std::vector<std::string> stop)
      : tok_(t), all_(std::move(all)), prompt_text_(std::move(prompt_text)), stop_(std::move(stop)) {}
  const Tokenizer* tok_;
  std::vector<TokenId> all_;  // prompt and reply tokens
  std::string prompt_text_;   // decode(prompt)
  std::vector<std::string> stop_;
  std::string text_;     // the reply's text so far (decoded)
  size_t emitted_ = 0;   // bytes of text_ handed out
  bool stopped_ = false;
};

// The length of the longest prefix of s made of whole UTF-8 characters
// (a trailing lead byte with fewer continuation bytes than it announces is
// left out; malformed bytes elsewhere count as characters of their own).
size_t whole_utf8_prefix(const std::string& s);

}  // namespace loom::llm::serve
