// SentencePiece-style (tokenizer.ggml.model = "llama") tokenizer: the vocab
// and scores stored in a GGUF file, encoded with llama.cpp's SPM merge rule
// and byte fallback.
//
// Ownership: a Tokenizer copies everything it needs out of the GgufFile, so it
// may outlive the file. Thread-safety: immutable after construction; encode()
// and decode() may run concurrently on one Tokenizer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loom/gguf.hpp"
#include "loom/status.hpp"

namespace loom::llm {

using TokenId = int32_t;
constexpr TokenId kNoToken = -1;

// GGUF's tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct SpecialTokens {
  TokenId bos = 1;  // SentencePiece defaults, used when the file has no ids
  TokenId eos = 2;
  TokenId unk = 0;
  bool add_bos = true;           // tokenizer.ggml.add_bos_token
  bool add_space_prefix = true;  // tokenizer.ggml.add_space_prefix
};

class Tokenizer {
 public:
  // Reads tokenizer.ggml.{model,tokens,scores,token_type,bos_token_id,
  // eos_token_id,unknown_token_id,add_bos_token,add_space_prefix}. Only model
  // "llama" (SPM) is supported; others give UNIMPLEMENTED.
  static StatusOr<Tokenizer> from_gguf(const GgufFile& file);
  // An explicit vocab (tests, other containers). scores/types may be empty
  // (all 0 / all normal); otherwise they must match tokens in length.
  static StatusOr<Tokenizer> from_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                        std::vector<int32_t> types, SpecialTokens special,
                                        std::string source = "<vocab>");

  // Text (UTF-8; invalid bytes are fine, they fall back to byte tokens) to
  // ids. Spaces become U+2581, one U+2581 is prepended when add_space_prefix
  // is set, then pairs merge best score first (leftmost on ties). Pieces not
  // in the vocab become <0xXX> byte tokens (unk when the vocab has none).
  // Control/byte/unknown tokens are never produced by merging, so text like
  // "<s>" is tokenized as plain text. add_bos prepends bos.
  std::vector<TokenId> encode(std::string_view text, bool add_bos) const;

  // Ids to text: U+2581 → space, byte tokens → their raw byte, control tokens
  // → nothing, and with add_space_prefix one leading space is removed from
  // the first piece at the start or right after BOS, so decode(encode(s)) == s
  // for any s without a literal U+2581. Out-of-range ids → INVALID_ARGUMENT.
  StatusOr<std::string> decode(const std::vector<TokenId>& ids) const;
  // One token's text as it appears in decoded output (no prefix stripping),
  // for streaming.
  StatusOr<std::string> token_to_piece(TokenId id) const;

  int32_t n_vocab() const { return static_cast<int32_t>(tokens_.size()); }
  const std::string& token_text(TokenId id) const { return tokens_.at(static_cast<size_t>(id)); }
  float score(TokenId id) const { return scores_.at(static_cast<size_t>(id)); }
  TokenType type(TokenId id) const { return types_.at(static_cast<size_t>(id)); }
  const SpecialTokens& special() const { return special_; }
  // Id of a token's exact text, kNoToken when absent.
  TokenId find(std::string_view text) const;

 private:
  Tokenizer() = default;
  Status init(const std::string& source);
  // Id a merged piece may become: in the vocab and normal or user-defined.
  TokenId mergeable(std::string_view piece) const;

  std::vector<std::string> tokens_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  SpecialTokens special_;
  std::unordered_map<std::string, TokenId> index_;
  std::array<TokenId, 256> byte_tokens_{};  // byte → <0xXX> id or kNoToken
};

}  // namespace loom::llm
