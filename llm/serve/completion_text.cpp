#include "llm/serve/completion_text.hpp"

#include <algorithm>

namespace loom::llm::serve {

size_t whole_utf8_prefix(const std::string& s) {
  // Look back at most 3 bytes for the lead byte of the last character.
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    size_t want = 1;
    if ((c & 0xE0) == 0xC0) {
      want = 2;
    } else if ((c & 0xF0) == 0xE0) {
      want = 3;
    } else if ((c & 0xF8) == 0xF0) {
      want = 4;
    }
    return back < want ? n - back : n;
  }
  return n;  // only continuation bytes at the end: malformed, hand them out
}

StatusOr<CompletionText> CompletionText::create(const Tokenizer* tokenizer, std::vector<TokenId> prompt,
                                                std::vector<std::string> stop) {
  LOOM_ASSIGN_OR_RETURN(std::string prompt_text, tokenizer->decode(prompt));
  stop.erase(std::remove(stop.begin(), stop.end(), std::string()), stop.end());
  return CompletionText(tokenizer, std::move(prompt), std::move(prompt_text), std::move(stop));
}

StatusOr<std::string> CompletionText::add(TokenId token) {
  if (stopped_) return std::string();
  all_.push_back(token);
  LOOM_ASSIGN_OR_RETURN(std::string text, tok_->decode(all_));
  // The reply's text: what follows the prompt's (as llm::generate streams it).
  text_ = text.size() > prompt_text_.size() ? text.substr(prompt_text_.size()) : std::string();
  if (emitted_ > text_.size()) emitted_ = text_.size();
  // The first stop string: it starts in the text not handed out yet (the
  // text handed out never ends with a stop string's beginning).
  size_t cut = std::string::npos;
  for (const std::string& s : stop_) cut = std::min(cut, text_.find(s, emitted_));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = text_.substr(emitted_, cut - emitted_);
    emitted_ = cut;
    return out;
  }
  // Hold back the longest end of the text that begins a stop string.
  size_t hold = 0;
  for (const std::string& s : stop_) {
    for (size_t k = std::min(s.size() - 1, text_.size()); k > hold; --k) {
      if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  size_t end = whole_utf8_prefix(text_.substr(0, text_.size() - hold));
  if (end <= emitted_) return std::string();
  std::string out = text_.substr(emitted_, end - emitted_);
  emitted_ = end;
  return out;
}

std::string CompletionText::flush() {
  if (stopped_ || emitted_ >= text_.size()) return std::string();
  std::string out = text_.substr(emitted_);
  emitted_ = text_.size();
  return out;
}

}  // namespace loom::llm::serve
