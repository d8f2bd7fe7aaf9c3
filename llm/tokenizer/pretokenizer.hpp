// BPE pre-tokenizers: the regular expressions that cut text into pieces
// before merging, chosen by the GGUF key tokenizer.ggml.pre. The patterns are
// the ones HF tokenizers (tokenizer.json) and llama.cpp use for each name;
// several are applied in turn, each cutting the pieces of the previous one.
//
// Thread-safety: immutable after from_name(); split() may run concurrently.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "llm/tokenizer/unicode_regex.hpp"
#include "loom/runtime/status.hpp"

namespace loom::llm {

class PreTokenizer {
 public:
  // The pre-tokenizer for a tokenizer.ggml.pre value. UNIMPLEMENTED naming
  // the value and listing supported_names() when loom does not know it.
  static StatusOr<PreTokenizer> from_name(std::string_view name);
  // Every accepted name, in table order.
  static std::vector<std::string> supported_names();

  // Appends the pieces of text (views into it, in order, covering all of it;
  // invalid UTF-8 bytes stay in the pieces as they are).
  void split(std::string_view text, std::vector<std::string_view>* out) const;

  const std::string& name() const { return name_; }
  // A piece that is a whole token skips merging (llama 3, tekken).
  bool ignore_merges() const { return ignore_merges_; }
  // The add_bos default when the file has no tokenizer.ggml.add_bos_token.
  bool add_bos() const { return add_bos_; }
  // The tokenizer has no BOS token, whatever tokenizer.ggml.bos_token_id says.
  bool no_bos() const { return no_bos_; }

 private:
  std::string name_;
  std::vector<UnicodeRegex> regexes_;
  bool ignore_merges_ = false;
  bool add_bos_ = false;
  bool no_bos_ = false;
};

}  // namespace loom::llm
