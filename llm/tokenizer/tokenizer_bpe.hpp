// Byte-level BPE tokenizer (tokenizer.ggml.model = "gpt2", as llama 3, Qwen
// and GPT-2 use): the text is cut into pieces by the pre-tokenizer named in
// tokenizer.ggml.pre, each piece's bytes become GPT-2's byte-level characters,
// and adjacent symbols merge by the rank of their pair in
// tokenizer.ggml.merges (lowest rank first, leftmost on ties).
#pragma once

#include <array>
#include <memory>
#include <unordered_map>

#include "llm/tokenizer/pretokenizer.hpp"
#include "llm/tokenizer/tokenizer_model.hpp"

namespace loom::llm {

class BpeModel final : public TokenizerModel {
 public:
  // merges: "left right" strings, rank = position. vocab and special must
  // outlive the model. INVALID_ARGUMENT for a merge without a space.
  static StatusOr<std::unique_ptr<BpeModel>> create(const Vocab& vocab, const SpecialTokens& special,
                                                    const std::vector<std::string_view>& merges,
                                                    PreTokenizer pre, const std::string& source);

  void encode(std::string_view text, bool at_start, std::vector<TokenId>* out) const override;
  // Normal tokens: byte-level characters back to bytes; user-defined tokens:
  // their text as it is; unknown/unused: nothing.
  void append_piece(TokenId id, std::string* out) const override;

  const PreTokenizer& pre() const { return pre_; }

 private:
  struct Merge {
    int32_t rank;
    TokenId result;
  };
  BpeModel(const Vocab& vocab, const SpecialTokens& special, PreTokenizer pre)
      : vocab_(vocab), special_(special), pre_(std::move(pre)) {}
  static uint64_t pair_key(TokenId left, TokenId right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  // Appends the ids of one pre-tokenized piece (raw bytes).
  void encode_piece(std::string_view bytes, std::vector<TokenId>* out) const;

  const Vocab& vocab_;
  const SpecialTokens& special_;
  PreTokenizer pre_;
  std::array<TokenId, 256> byte_tokens_{};          // byte -> id of its byte-level character
  std::unordered_map<uint64_t, Merge> merges_;      // (left id, right id) -> rank and merged id
};

}  // namespace loom::llm
