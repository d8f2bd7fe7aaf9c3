// SPM: best-score-first pair merging over UTF-8 characters, byte fallback.
#include "llm/tokenizer/tokenizer_spm.hpp"

#include <queue>

#include "llm/tokenizer/unicode.hpp"

namespace loom::llm {

namespace {

using unicode::kSpaceMark;

// A piece of the text being merged: a doubly linked list over `text`.
struct Piece {
  int prev;
  int next;
  size_t start;
  size_t len;  // 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t len;  // bytes of the merged piece, to spot stale entries
};

// Highest score first; on ties the leftmost pair (llama.cpp's order).
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

StatusOr<std::unique_ptr<SpmModel>> SpmModel::create(const Vocab& vocab, const SpecialTokens& special,
                                                     const std::string& source) {
  std::unique_ptr<SpmModel> m(new SpmModel(vocab, special));
  m->byte_tokens_.fill(kNoToken);
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    if (vocab.types[i] != TokenType::kByte) continue;
    const std::string& s = vocab.tokens[i];
    const int hi = s.size() == 6 ? unicode::hex_digit(static_cast<uint8_t>(s[3])) : -1;
    const int lo = s.size() == 6 ? unicode::hex_digit(static_cast<uint8_t>(s[4])) : -1;
    if (s.compare(0, 3, "<0x") != 0 || hi < 0 || lo < 0 || s[5] != '>') {
      return invalid_argument("[tokenizer.load] " + source + ": byte token " + std::to_string(i) + " is '" + s +
                              "', expected <0xXX>");
    }
    m->byte_tokens_[static_cast<size_t>(hi * 16 + lo)] = static_cast<TokenId>(i);
  }
  return StatusOr<std::unique_ptr<SpmModel>>(std::move(m));
}

TokenId SpmModel::mergeable(std::string_view piece) const {
  const TokenId id = vocab_.find(piece);
  if (id == kNoToken) return kNoToken;
  const TokenType t = vocab_.type(id);
  return t == TokenType::kNormal || t == TokenType::kUserDefined ? id : kNoToken;
}

void SpmModel::encode(std::string_view raw, bool at_start, std::vector<TokenId>* out) const {
  std::string text;
  text.reserve(raw.size() + raw.size() / 2 + kSpaceMark.size());
  if (at_start && special_.add_space_prefix) text += kSpaceMark;
  for (char c : raw) {
    if (c == ' ') {
      text += kSpaceMark;
    } else {
      text += c;
    }
  }
  if (text.empty()) return;

  std::vector<Piece> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = unicode::utf8_len(text, pos);
    const int idx = static_cast<int>(symbols.size());
    symbols.push_back({idx - 1, idx + 1, pos, len});
    pos += len;
  }
  symbols.back().next = -1;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Piece& l = symbols[static_cast<size_t>(left)];
    const Piece& r = symbols[static_cast<size_t>(right)];
    const std::string_view piece(text.data() + l.start, l.len + r.len);
    const TokenId id = mergeable(piece);
    if (id == kNoToken) return;
    queue.push({left, right, vocab_.scores[static_cast<size_t>(id)], piece.size()});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int>(i - 1), static_cast<int>(i));

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Piece& l = symbols[static_cast<size_t>(b.left)];
    Piece& r = symbols[static_cast<size_t>(b.right)];
    // Entries go stale when either side merged elsewhere first.
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const Piece& s = symbols[static_cast<size_t>(i)];
    const std::string_view piece(text.data() + s.start, s.len);
    const TokenId id = mergeable(piece);
    if (id != kNoToken) {
      out->push_back(id);
      continue;
    }
    for (char c : piece) {
      const TokenId byte_id = byte_tokens_[static_cast<uint8_t>(c)];
      if (byte_id != kNoToken) {
        out->push_back(byte_id);
      } else if (special_.unk != kNoToken) {
        out->push_back(special_.unk);
        break;  // one unk per piece, not per byte
      }
    }
  }
}

void SpmModel::append_piece(TokenId id, std::string* out) const {
  switch (vocab_.type(id)) {
    case TokenType::kByte:
      for (int b = 0; b < 256; ++b) {
        if (byte_tokens_[static_cast<size_t>(b)] == id) {
          out->push_back(static_cast<char>(b));
          return;
        }
      }
      return;
    case TokenType::kUnknown:
      *out += "\xe2\x96\x85";  // U+2585, llama.cpp's stand-in for unknown text
      return;
    default: {
      const std::string& s = vocab_.text(id);
      for (size_t i = 0; i < s.size();) {
        if (s.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
          *out += ' ';
          i += kSpaceMark.size();
        } else {
          *out += s[i++];
        }
      }
    }
  }
}

}  // namespace loom::llm
