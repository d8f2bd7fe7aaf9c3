// A small backtracking matcher for exactly the regular-expression subset that
// BPE pre-tokenizer patterns use (HF tokenizers' Split patterns, as listed by
// llama.cpp per tokenizer.ggml.pre):
//   alternation a|b; groups (...) (?:...) (?i:...) (captures are not kept);
//   lookahead (?=...) (?!...); greedy quantifiers ? * + {n} {n,} {n,m};
//   classes [...] [^...] with ranges, \p{..} \P{..} (general categories: L, Lu,
//   N, Nd, P, S, M, ...), \s \S \d \D; escapes \r \n \t \f \v \xHH \x{H..}
//   \uHHHH \UHHHHHHHH and any escaped punctuation; . (anything but \n);
//   ^ and $ (start / end of the text being split); literal UTF-8 characters.
// Semantics are Perl's and Oniguruma's (what HF tokenizers runs): at each
// position the alternatives are tried in order and quantifiers are greedy
// and backtrack. (?i:...) folds ASCII letters only, which is all the patterns
// need (English contractions). Lazy and possessive quantifiers, backreferences
// and lookbehind are rejected when compiling.
//
// Text is matched as code points (unicode::decode_utf8: invalid bytes become
// values above U+10FFFF of category Cn). Thread-safety: immutable after
// compile(); matching may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llm/tokenizer/unicode.hpp"
#include "loom/runtime/status.hpp"

namespace loom::llm {

class UnicodeRegex {
 public:
  // INVALID_ARGUMENT "[tokenizer.regex] <pattern>: <what> at offset N" for
  // syntax outside the subset.
  static StatusOr<UnicodeRegex> compile(std::string_view pattern);

  // End of the match that starts exactly at cps[pos] within cps[0, n)
  // (lookahead does not see past n), or kNoMatch.
  static constexpr size_t kNoMatch = static_cast<size_t>(-1);
  size_t match_at(const uint32_t* cps, size_t n, size_t pos) const;

  // Cuts cps[0, n) into pieces the way HF's Split(pattern, "isolated") does:
  // every match is a piece and so is every stretch between matches. Appends
  // the end offset of each piece to *out_ends (empty matches are skipped).
  void split(const uint32_t* cps, size_t n, std::vector<size_t>* out_ends) const;

  const std::string& pattern() const { return pattern_; }

 private:
  friend class RegexParser;
  friend class RegexMatcher;

  // One class of characters: items are OR-ed, then `negated` applies.
  struct CharClass {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive
    unicode::CategoryMask categories = 0;               // \p{..}
    unicode::CategoryMask not_categories = 0;           // \P{..}: matches when cp's category is outside
    bool space = false;                                 // \s
    bool not_space = false;                             // \S
    bool negated = false;
    bool fold_ascii = false;  // inside (?i:...): ASCII letters match either case
    uint64_t ascii[2] = {0, 0};  // test() precomputed for code points < 128

    bool test_slow(uint32_t cp) const;
    bool test(uint32_t cp) const {
      return cp < 128 ? ((ascii[cp >> 6] >> (cp & 63)) & 1) != 0 : test_slow(cp);
    }
  };

  enum class Op : uint8_t { kClass, kSeq, kAlt, kRepeat, kLookahead, kStart, kEnd };
  struct Node {
    Op op = Op::kSeq;
    int cls = -1;            // kClass: index into classes_
    std::vector<int> kids;   // kSeq / kAlt: the parts; kRepeat / kLookahead: kids[0]
    size_t min = 0, max = 0; // kRepeat bounds (max kUnbounded for none)
    bool negative = false;   // kLookahead: (?!...)
    bool single = false;     // consumes exactly one character, decided by test_single()
  };
  static constexpr size_t kUnbounded = static_cast<size_t>(-1);

  bool test_single(int node, uint32_t cp) const;
  // Fills alts_ and leads_ from root_.
  void index_alternatives();

  std::string pattern_;
  std::vector<CharClass> classes_;
  std::vector<Node> nodes_;
  int root_ = -1;
  // The top-level alternatives, and for each the one-character item of a
  // leading unbounded repetition (X+, X*) or -1. If such an alternative fails
  // at p and X holds at p, it fails at p+1 too (its possible ends from p+1
  // are a subset of those from p), so split() skips it: no quadratic rescans
  // of long runs.
  std::vector<int> alts_;
  std::vector<int> leads_;
};

}  // namespace loom::llm
