#include "llm/tokenizer/tokenizer_wpm.hpp"

#include <algorithm>

#include "llm/tokenizer/unicode.hpp"

namespace loom::llm {

namespace {

using unicode::kSpaceMark;

// CJK ideographs, each a word of its own (the ranges BERT's tokenizer uses,
// with its 0x2B920 start where the block begins at 0x2B820).
bool is_cjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

constexpr unicode::CategoryMask kControl = unicode::bit(unicode::Category::kCc) | unicode::bit(unicode::Category::kCf) |
                                           unicode::bit(unicode::Category::kCo) | unicode::bit(unicode::Category::kCs);

}  // namespace

std::vector<std::string> wpm_words(std::string_view text) {
  std::vector<std::string> words(1);
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 0;
    uint32_t cp = unicode::decode_utf8(text, pos, &len);
    pos += len;
    if (cp >= unicode::kInvalidBase) continue;  // an invalid byte: llama.cpp's U+FFFD, dropped
    cp = unicode::nfd_first(cp);
    if (unicode::is_whitespace(cp)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    const unicode::CategoryMask m = unicode::bit(unicode::category(cp));
    if (cp == 0 || cp == 0xFFFD || (m & kControl) != 0) continue;
    std::string s;
    unicode::append_utf8(&s, unicode::to_lower(cp));
    if ((m & unicode::kPunctuation) != 0 || (cp < 0x7F && (m & unicode::kSymbol) != 0) || is_cjk(cp)) {
      if (!words.back().empty()) words.emplace_back();
      words.back() = std::move(s);
      words.emplace_back();
    } else {
      words.back() += s;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

StatusOr<std::unique_ptr<WpmModel>> WpmModel::create(const Vocab& vocab, const SpecialTokens& special,
                                                     const std::string& source) {
  if (special.unk == kNoToken) {
    return invalid_argument("[tokenizer.load] " + source +
                            ": a 'bert' (WordPiece) tokenizer needs an unknown token (tokenizer.ggml.unknown_token_id)");
  }
  size_t max_len = 0;
  for (const std::string& t : vocab.tokens) max_len = std::max(max_len, t.size());
  return std::unique_ptr<WpmModel>(new WpmModel(vocab, special, max_len));
}

void WpmModel::encode_word(const std::string& word, std::vector<TokenId>* out) const {
  const std::string w = std::string(kSpaceMark) + word;
  const size_t n = w.size();
  const size_t mark = out->size();
  for (size_t i = 0; i < n;) {
    TokenId hit = kNoToken;
    size_t j = std::min(n, i + max_len_);
    for (; j > i; --j) {
      hit = vocab_.find(std::string_view(w).substr(i, j - i));
      if (hit != kNoToken) break;
    }
    if (hit == kNoToken) {
      out->resize(mark);  // the whole word is unknown
      break;
    }
    out->push_back(hit);
    i = j;
  }
  if (out->size() == mark) out->push_back(special_.unk);
}

void WpmModel::encode(std::string_view text, bool /*at_start*/, std::vector<TokenId>* out) const {
  for (const std::string& word : wpm_words(text)) encode_word(word, out);
}

void WpmModel::append_piece(TokenId id, std::string* out) const {
  if (vocab_.type(id) == TokenType::kUnknown) {
    *out += "\xe2\x96\x85";
    return;
  }
  const std::string& s = vocab_.text(id);
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      out->push_back(' ');
      i += 3;
    } else {
      out->push_back(s[i++]);
    }
  }
}

}  // namespace loom::llm
