// WordPiece tokenizer (tokenizer.ggml.model = "bert"), following llama.cpp's
// rules: the text is normalised code point by code point (the first code
// point of its NFD, so accents on precomposed letters go; then lowercase),
// split into words at whitespace, and every punctuation mark, ASCII symbol
// and CJK ideograph is a word of its own; control characters, NUL and U+FFFD
// are dropped. Each word, with U+2581 prepended, is cut greedily into the
// longest vocab entries from the left (GGUF stores BERT's "##x" continuation
// pieces as "x" and word starts as "\u2581x"); a word with any position no
// entry matches becomes the unknown token as a whole.
#pragma once

#include <memory>

#include "llm/tokenizer/tokenizer_model.hpp"

namespace loom::llm {

class WpmModel final : public TokenizerModel {
 public:
  // vocab and special must outlive the model. INVALID_ARGUMENT when the vocab
  // has no unknown token (every unmatched word needs one).
  static StatusOr<std::unique_ptr<WpmModel>> create(const Vocab& vocab, const SpecialTokens& special,
                                                    const std::string& source);

  void encode(std::string_view text, bool at_start, std::vector<TokenId>* out) const override;
  // U+2581 -> space; unknown -> U+2585 (llama.cpp's stand-in).
  void append_piece(TokenId id, std::string* out) const override;

 private:
  WpmModel(const Vocab& vocab, const SpecialTokens& special, size_t max_len)
      : vocab_(vocab), special_(special), max_len_(max_len) {}
  void encode_word(const std::string& word, std::vector<TokenId>* out) const;

  const Vocab& vocab_;
  const SpecialTokens& special_;
  size_t max_len_;  // bytes of the longest token
};

// The words WPM cuts text into (exposed for tests).
std::vector<std::string> wpm_words(std::string_view text);

}  // namespace loom::llm
