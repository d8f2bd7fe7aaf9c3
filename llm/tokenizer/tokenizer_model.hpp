// Inside llm::Tokenizer: the token table every tokenizer shares (Vocab) and
// the interface of the model-specific part (SPM, byte-level BPE) that turns
// plain text into ids and ids back into bytes. Special tokens, BOS/EOS and
// decode's rules live in Tokenizer itself (llm/tokenizer/tokenizer.cpp), once.
//
// Ownership: Tokenizer holds one immutable Vocab and one TokenizerModel behind
// a shared pointer; a model refers to that Vocab, which outlives it.
// Thread-safety: immutable after construction; all methods are const and may
// run concurrently.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llm/tokenizer/tokenizer.hpp"

namespace loom::llm {

struct Vocab {
  Vocab() = default;
  Vocab(const Vocab&) = delete;  // index views the token strings
  Vocab& operator=(const Vocab&) = delete;

  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<TokenType> types;
  std::unordered_map<std::string_view, TokenId> index;  // views `tokens`; first id wins on duplicates

  // Builds index from tokens (call once, after tokens is final).
  void build_index();
  TokenId find(std::string_view text) const {
    auto it = index.find(text);
    return it == index.end() ? kNoToken : it->second;
  }
  TokenType type(TokenId id) const { return types[static_cast<size_t>(id)]; }
  const std::string& text(TokenId id) const { return tokens[static_cast<size_t>(id)]; }
};

class TokenizerModel {
 public:
  virtual ~TokenizerModel() = default;

  // Appends the ids of one stretch of plain text (special tokens are already
  // cut out). at_start: the stretch begins the text or follows a special
  // token (where SPM puts its space prefix).
  virtual void encode(std::string_view text, bool at_start, std::vector<TokenId>* out) const = 0;
  // Appends the bytes a non-control token stands for in decoded text.
  virtual void append_piece(TokenId id, std::string* out) const = 0;
};

}  // namespace loom::llm
