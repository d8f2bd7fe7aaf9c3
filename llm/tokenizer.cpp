// SPM tokenizer: vocab loading, best-score-first pair merging, byte fallback.
#include "llm/tokenizer.hpp"

#include <algorithm>
#include <climits>
#include <queue>

namespace loom::llm {

namespace {

constexpr std::string_view kSpaceMark = "\xe2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

// Bytes of the UTF-8 character at text[pos]. Invalid bytes (stray
// continuations, truncated sequences) count as one, so each becomes its own
// byte-fallback symbol and never swallows the next character (llama.cpp trusts
// the lead byte; both agree on valid UTF-8).
size_t utf8_char_len(std::string_view text, size_t pos) {
  const uint8_t lead = static_cast<uint8_t>(text[pos]);
  const size_t n = lead < 0xc0 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : lead < 0xf8 ? 4 : 1;
  if (pos + n > text.size()) return 1;
  for (size_t i = 1; i < n; ++i) {
    if ((static_cast<uint8_t>(text[pos + i]) & 0xc0) != 0x80) return 1;
  }
  return n;
}

// A piece of the text being merged: a doubly linked list over `text`.
struct Symbol {
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

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

StatusOr<TokenId> special_id(const GgufFile& f, const char* key, TokenId fallback) {
  if (!f.has(key)) return fallback;
  LOOM_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
  // Writers store "none" as uint32 0xffffffff or int32 -1.
  if (v == 0xffffffffll || v == -1) return kNoToken;
  if (v < 0 || v > INT32_MAX) {
    return invalid_argument("[tokenizer.load] " + f.name() + ": key '" + key + "' = " + std::to_string(v) +
                            " is not a token id");
  }
  return static_cast<TokenId>(v);
}

StatusOr<bool> optional_bool(const GgufFile& f, const char* key, bool fallback) {
  if (!f.has(key)) return fallback;
  return f.get_bool(key);
}

}  // namespace

StatusOr<Tokenizer> Tokenizer::from_gguf(const GgufFile& f) {
  const std::string ctx = "[tokenizer.load] " + f.name() + ": ";
  LOOM_ASSIGN_OR_RETURN(std::string_view model, f.get_str("tokenizer.ggml.model"));
  if (model != "llama") {
    return unimplemented(ctx + "tokenizer model '" + std::string(model) + "' is not supported (loom reads 'llama')");
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<std::string_view> views, f.get_arr_str("tokenizer.ggml.tokens"));
  std::vector<std::string> tokens(views.begin(), views.end());
  std::vector<float> scores;
  if (f.has("tokenizer.ggml.scores")) {
    LOOM_ASSIGN_OR_RETURN(scores, f.get_arr_f32("tokenizer.ggml.scores"));
  }
  std::vector<int32_t> types;
  if (f.has("tokenizer.ggml.token_type")) {
    LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> t, f.get_arr_int("tokenizer.ggml.token_type"));
    types.reserve(t.size());
    for (int64_t v : t) types.push_back(v < INT32_MIN || v > INT32_MAX ? 0 : static_cast<int32_t>(v));
  }
  SpecialTokens sp;
  LOOM_ASSIGN_OR_RETURN(sp.bos, special_id(f, "tokenizer.ggml.bos_token_id", sp.bos));
  LOOM_ASSIGN_OR_RETURN(sp.eos, special_id(f, "tokenizer.ggml.eos_token_id", sp.eos));
  LOOM_ASSIGN_OR_RETURN(sp.unk, special_id(f, "tokenizer.ggml.unknown_token_id", sp.unk));
  LOOM_ASSIGN_OR_RETURN(sp.add_bos, optional_bool(f, "tokenizer.ggml.add_bos_token", sp.add_bos));
  LOOM_ASSIGN_OR_RETURN(sp.add_space_prefix, optional_bool(f, "tokenizer.ggml.add_space_prefix", sp.add_space_prefix));
  return from_vocab(std::move(tokens), std::move(scores), std::move(types), sp, f.name());
}

StatusOr<Tokenizer> Tokenizer::from_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                          std::vector<int32_t> types, SpecialTokens special, std::string source) {
  const std::string ctx = "[tokenizer.load] " + source + ": ";
  const size_t n = tokens.size();
  if (n == 0) return invalid_argument(ctx + "empty vocab");
  if (n > static_cast<size_t>(INT32_MAX)) return invalid_argument(ctx + "vocab of " + std::to_string(n) + " tokens");
  if (scores.empty()) scores.assign(n, 0.0f);
  if (types.empty()) types.assign(n, static_cast<int32_t>(TokenType::kNormal));
  if (scores.size() != n || types.size() != n) {
    return invalid_argument(ctx + "vocab sizes differ: " + std::to_string(n) + " tokens, " +
                            std::to_string(scores.size()) + " scores, " + std::to_string(types.size()) + " types");
  }
  for (TokenId id : {special.bos, special.eos, special.unk}) {
    if (id != kNoToken && (id < 0 || static_cast<size_t>(id) >= n)) {
      return invalid_argument(ctx + "special token id " + std::to_string(id) + " outside the vocab [0, " +
                              std::to_string(n) + ")");
    }
  }
  Tokenizer t;
  t.tokens_ = std::move(tokens);
  t.scores_ = std::move(scores);
  t.types_.reserve(n);
  for (int32_t v : types) t.types_.push_back(static_cast<TokenType>(v));
  t.special_ = special;
  LOOM_RETURN_IF_ERROR(t.init(source));
  return StatusOr<Tokenizer>(std::move(t));
}

Status Tokenizer::init(const std::string& source) {
  byte_tokens_.fill(kNoToken);
  index_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const TokenId id = static_cast<TokenId>(i);
    index_.emplace(tokens_[i], id);  // first occurrence wins on duplicate texts
    if (types_[i] == TokenType::kByte) {
      const std::string& s = tokens_[i];
      const int hi = s.size() == 6 ? hex_digit(s[3]) : -1;
      const int lo = s.size() == 6 ? hex_digit(s[4]) : -1;
      if (s.compare(0, 3, "<0x") != 0 || hi < 0 || lo < 0 || s[5] != '>') {
        return invalid_argument("[tokenizer.load] " + source + ": byte token " + std::to_string(i) + " is '" + s +
                                "', expected <0xXX>");
      }
      byte_tokens_[static_cast<size_t>(hi * 16 + lo)] = id;
    }
  }
  return Status::Ok();
}

TokenId Tokenizer::find(std::string_view text) const {
  auto it = index_.find(std::string(text));
  return it == index_.end() ? kNoToken : it->second;
}

TokenId Tokenizer::mergeable(std::string_view piece) const {
  const TokenId id = find(piece);
  if (id == kNoToken) return kNoToken;
  const TokenType t = types_[static_cast<size_t>(id)];
  return t == TokenType::kNormal || t == TokenType::kUserDefined ? id : kNoToken;
}

std::vector<TokenId> Tokenizer::encode(std::string_view raw, bool add_bos) const {
  std::vector<TokenId> out;
  if (add_bos && special_.bos != kNoToken) out.push_back(special_.bos);
  if (raw.empty()) return out;

  std::string text;
  text.reserve(raw.size() + raw.size() / 2 + kSpaceMark.size());
  if (special_.add_space_prefix) text += kSpaceMark;
  for (char c : raw) {
    if (c == ' ') {
      text += kSpaceMark;
    } else {
      text += c;
    }
  }

  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_char_len(text, pos);
    const int idx = static_cast<int>(symbols.size());
    symbols.push_back({idx - 1, idx + 1, pos, len});
    pos += len;
  }
  symbols.back().next = -1;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    const std::string_view piece(text.data() + l.start, l.len + r.len);
    const TokenId id = mergeable(piece);
    if (id == kNoToken) return;
    queue.push({left, right, scores_[static_cast<size_t>(id)], piece.size()});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int>(i - 1), static_cast<int>(i));

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[static_cast<size_t>(b.left)];
    Symbol& r = symbols[static_cast<size_t>(b.right)];
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
    const Symbol& s = symbols[static_cast<size_t>(i)];
    const std::string_view piece(text.data() + s.start, s.len);
    const TokenId id = mergeable(piece);
    if (id != kNoToken) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const TokenId byte_id = byte_tokens_[static_cast<uint8_t>(c)];
      if (byte_id != kNoToken) {
        out.push_back(byte_id);
      } else if (special_.unk != kNoToken) {
        out.push_back(special_.unk);
        break;  // one unk per piece, not per byte
      }
    }
  }
  return out;
}

StatusOr<std::string> Tokenizer::token_to_piece(TokenId id) const {
  if (id < 0 || id >= n_vocab()) {
    return invalid_argument("[tokenizer.decode] token id " + std::to_string(id) + " outside the vocab [0, " +
                            std::to_string(n_vocab()) + ")");
  }
  const std::string& s = tokens_[static_cast<size_t>(id)];
  switch (types_[static_cast<size_t>(id)]) {
    case TokenType::kControl:
      return std::string();
    case TokenType::kByte: {
      for (int b = 0; b < 256; ++b) {
        if (byte_tokens_[static_cast<size_t>(b)] == id) return std::string(1, static_cast<char>(b));
      }
      return std::string();
    }
    case TokenType::kUnknown:
      return std::string("\xe2\x96\x85");  // U+2585, llama.cpp's stand-in for unknown text
    default: {
      std::string out;
      out.reserve(s.size());
      for (size_t i = 0; i < s.size();) {
        if (s.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
          out += ' ';
          i += kSpaceMark.size();
        } else {
          out += s[i++];
        }
      }
      return out;
    }
  }
}

StatusOr<std::string> Tokenizer::decode(const std::vector<TokenId>& ids) const {
  std::string out;
  bool at_start = true;  // at the text start or right after BOS: strip the prefix space
  for (TokenId id : ids) {
    LOOM_ASSIGN_OR_RETURN(std::string piece, token_to_piece(id));
    if (id == special_.bos) {
      at_start = true;
      continue;
    }
    if (piece.empty()) continue;
    if (at_start && special_.add_space_prefix && piece[0] == ' ') piece.erase(0, 1);
    at_start = false;
    out += piece;
  }
  return out;
}

}  // namespace loom::llm
