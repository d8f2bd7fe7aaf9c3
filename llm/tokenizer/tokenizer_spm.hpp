// SentencePiece-style tokenizer (tokenizer.ggml.model = "llama"): spaces
// become U+2581, pairs merge best score first (leftmost on ties, llama.cpp's
// rule), pieces left outside the vocab fall back to <0xXX> byte tokens.
#pragma once

#include <array>
#include <memory>

#include "llm/tokenizer/tokenizer_model.hpp"

namespace loom::llm {

class SpmModel final : public TokenizerModel {
 public:
  // vocab and special must outlive the model. INVALID_ARGUMENT for a byte
  // token whose text is not <0xXX>.
  static StatusOr<std::unique_ptr<SpmModel>> create(const Vocab& vocab, const SpecialTokens& special,
                                                    const std::string& source);

  // at_start with add_space_prefix prepends one U+2581.
  void encode(std::string_view text, bool at_start, std::vector<TokenId>* out) const override;
  // U+2581 -> space, <0xXX> -> the byte, unknown -> U+2585 (llama.cpp's stand-in).
  void append_piece(TokenId id, std::string* out) const override;

 private:
  SpmModel(const Vocab& vocab, const SpecialTokens& special) : vocab_(vocab), special_(special) {}
  // Id a merged piece may become: in the vocab and normal or user-defined.
  TokenId mergeable(std::string_view piece) const;

  const Vocab& vocab_;
  const SpecialTokens& special_;
  std::array<TokenId, 256> byte_tokens_{};  // byte -> <0xXX> id or kNoToken
};

}  // namespace loom::llm
