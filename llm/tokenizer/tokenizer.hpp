// The tokenizer of a GGUF model: its vocab, special tokens and flags, and the
// model-specific text <-> ids rules behind one interface:
//   - "llama": SentencePiece-style (scores, U+2581 spaces, <0xXX> byte
//     fallback; llm/tokenizer/tokenizer_spm.hpp);
//   - "gpt2": byte-level BPE with merges and the pre-tokenizer named by
//     tokenizer.ggml.pre (llm/tokenizer/tokenizer_bpe.hpp, llm/tokenizer/pretokenizer.hpp);
//   - "bert": WordPiece, greedy longest match per lowercased word
//     (llm/tokenizer/tokenizer_wpm.hpp).
// Special tokens written in the text (control, user-defined, unknown types)
// are kept whole: the text is cut at them first, longest match at the
// leftmost position, and only the plain stretches between them go through
// the model.
//
// Ownership: a Tokenizer copies everything it needs out of the GgufFile, so it
// may outlive the file; copies share one immutable state. Thread-safety:
// immutable after construction; every method may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/runtime/gguf.hpp"
#include "loom/runtime/status.hpp"

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

// Special ids and flags, from tokenizer.ggml.* (kNoToken: none).
struct SpecialTokens {
  TokenId bos = 1;  // SentencePiece defaults, used when the file has no ids
  TokenId eos = 2;
  TokenId unk = 0;
  bool add_bos = true;           // add_bos_token; default: SPM yes, BPE per pre-tokenizer (llama 3 yes)
  bool add_space_prefix = true;  // add_space_prefix (SPM only)
  TokenId eot = kNoToken;        // eot_token_id, else found by text (<|eot_id|>, <|im_end|>, <|end|>, ...)
  TokenId eom = kNoToken;        // eom_token_id, else <|eom_id|>
  TokenId pad = kNoToken;        // padding_token_id
  bool add_eos = false;          // add_eos_token
  TokenId sep = kNoToken;        // seperator_token_id (GGUF's spelling): BERT's [SEP]
  bool add_sep = false;          // add_sep_token; default: WPM yes
};

class Tokenizer {
 public:
  // Reads tokenizer.ggml.{model,pre,tokens,scores,token_type,merges,
  // bos/eos/eot/eom/unknown/padding_token_id,add_bos_token,add_eos_token,
  // add_space_prefix,seperator_token_id,add_sep_token} (and general.name for
  // phi-3's whitespace rule). Only the metadata is read: vocabulary-only files
  // work. Models "llama" (SPM), "gpt2" (BPE) and "bert" (WPM; BERT's defaults
  // [CLS] 101 as BOS, [UNK] 100, [SEP] 102 added at the end) are supported;
  // any other model, or an unknown
  // tokenizer.ggml.pre, is UNIMPLEMENTED naming it and the supported ones.
  static StatusOr<Tokenizer> from_gguf(const GgufFile& file);
  // An explicit SPM vocab (tests, other containers). scores/types may be empty
  // (all 0 / all normal); otherwise they must match tokens in length.
  static StatusOr<Tokenizer> from_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                        std::vector<int32_t> types, SpecialTokens special,
                                        std::string source = "<vocab>");
  // An explicit byte-level BPE vocab: tokens in GPT-2's byte-level alphabet,
  // merges "left right" by rank, pre a tokenizer.ggml.pre name. types may be
  // empty (all normal). special.add_space_prefix is ignored.
  static StatusOr<Tokenizer> from_bpe_vocab(std::vector<std::string> tokens, std::vector<int32_t> types,
                                            const std::vector<std::string_view>& merges, std::string_view pre,
                                            SpecialTokens special, std::string source = "<vocab>");

  // Text (UTF-8; invalid bytes are kept: byte tokens in SPM, byte-level
  // characters in BPE, where llama.cpp would first turn them into U+FFFD) to
  // ids. add_bos prepends bos. With parse_special, control, user-defined and
  // unknown tokens written in the text become their ids; without, only
  // user-defined ones do and the rest is plain text.
  // SPM: spaces become U+2581 and one U+2581 is prepended (add_space_prefix)
  // at the start and after each special token; pairs merge best score first.
  // BPE: pre-tokenizer pieces, byte-level characters, merges by rank.
  std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special = true) const;
  // encode() with the file's own rule: BOS when special().add_bos, EOS when
  // special().add_eos, SEP when special().add_sep (what a prompt gets).
  std::vector<TokenId> encode_prompt(std::string_view text, bool parse_special = true) const;

  // Ids to text: control tokens print nothing, SPM U+2581 -> space and
  // <0xXX> -> the byte, BPE byte-level characters -> their bytes. With SPM's
  // add_space_prefix, one leading space is removed from the piece at the start
  // and right after BOS or a special token, so decode(encode(s)) == s for any
  // s without special-token text (and, for SPM, without a literal U+2581).
  // No "clean up tokenization spaces" pass (HF's option that drops the space
  // before punctuation): the text comes back as it was. Out-of-range ids ->
  // INVALID_ARGUMENT.
  StatusOr<std::string> decode(const std::vector<TokenId>& ids) const;
  // One token's text as it appears in decoded output (no prefix stripping),
  // for streaming. render_special: control and unknown tokens show their text.
  StatusOr<std::string> token_to_piece(TokenId id, bool render_special = false) const;

  int32_t n_vocab() const;
  const std::string& token_text(TokenId id) const;
  float score(TokenId id) const;
  TokenType type(TokenId id) const;
  const SpecialTokens& special() const;
  // End of generation: eos, eot, eom, and the tokens written <|eot_id|>,
  // <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, <|eom_id|>, <EOT>.
  bool is_eog(TokenId id) const;
  // Id of a token's exact text, kNoToken when absent.
  TokenId find(std::string_view text) const;
  // "llama" (SPM), "gpt2" (BPE) or "bert" (WPM); the BPE pre-tokenizer name,
  // "" for the others.
  const std::string& model_name() const;
  const std::string& pre_name() const;

 private:
  struct State;
  // What a tokenizer is built from (from_gguf, from_vocab, from_bpe_vocab).
  struct Parts {
    std::string model;  // "llama", "gpt2" or "bert"
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    std::vector<std::string_view> merges;  // gpt2; views outlive build()
    std::string pre;                       // gpt2
    SpecialTokens special;
    std::vector<TokenId> rstrip;  // special tokens that swallow the whitespace after them (phi-3)
    std::string source;
  };
  explicit Tokenizer(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  static StatusOr<Tokenizer> build(Parts parts);
  // Cuts text at special tokens; plain stretches go through the model.
  void encode_text(std::string_view text, bool parse_special, std::vector<TokenId>* out) const;

  std::shared_ptr<const State> state_;
};

}  // namespace loom::llm
