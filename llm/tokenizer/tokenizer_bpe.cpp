// Byte-level BPE: rank-ordered pair merging over byte-level symbols.
#include "llm/tokenizer/tokenizer_bpe.hpp"

#include <queue>

#include "llm/tokenizer/byte_level.hpp"

namespace loom::llm {

namespace {

// A symbol of the piece being merged: a doubly linked list over ids.
struct Symbol {
  TokenId id;  // kNoToken: a byte without a token; kDead: merged into its left
  int prev;
  int next;
};
constexpr TokenId kDead = -2;

struct Candidate {
  int32_t rank;
  int left;
  TokenId left_id;
  TokenId right_id;
  TokenId result;
};

// Lowest rank first; on ties the leftmost pair.
struct CandidateAfter {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

StatusOr<std::unique_ptr<BpeModel>> BpeModel::create(const Vocab& vocab, const SpecialTokens& special,
                                                     const std::vector<std::string_view>& merges,
                                                     PreTokenizer pre, const std::string& source) {
  std::unique_ptr<BpeModel> m(new BpeModel(vocab, special, std::move(pre)));
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    byte_level::encode(std::string_view(reinterpret_cast<const char*>(&b), 1), &ch);
    m->byte_tokens_[static_cast<size_t>(b)] = vocab.find(ch);
  }
  m->merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view merge = merges[rank];
    // The separator is the first space after the first byte (as llama.cpp
    // reads it), so a left side may itself be a space.
    const size_t sep = merge.size() > 1 ? merge.find(' ', 1) : std::string_view::npos;
    if (sep == std::string_view::npos) {
      return invalid_argument("[tokenizer.load] " + source + ": merge " + std::to_string(rank) + " is '" +
                              std::string(merge) + "', expected 'left right'");
    }
    const std::string_view left = merge.substr(0, sep), right = merge.substr(sep + 1);
    joined.assign(left);
    joined.append(right);
    const TokenId l = vocab.find(left), r = vocab.find(right), result = vocab.find(joined);
    // A merge whose parts or result are not tokens can never apply to
    // symbols that are tokens; it is left out.
    if (l == kNoToken || r == kNoToken || result == kNoToken) continue;
    m->merges_.emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), result});  // lowest rank wins
  }
  return StatusOr<std::unique_ptr<BpeModel>>(std::move(m));
}

void BpeModel::encode(std::string_view text, bool /*at_start*/, std::vector<TokenId>* out) const {
  std::vector<std::string_view> pieces;
  pre_.split(text, &pieces);
  for (std::string_view piece : pieces) encode_piece(piece, out);
}

void BpeModel::encode_piece(std::string_view bytes, std::vector<TokenId>* out) const {
  if (pre_.ignore_merges()) {
    // Pieces that are whole normal tokens skip merging (llama 3's rule).
    std::string word;
    byte_level::encode(bytes, &word);
    const TokenId id = vocab_.find(word);
    if (id != kNoToken && vocab_.type(id) == TokenType::kNormal) {
      out->push_back(id);
      return;
    }
  }
  std::vector<Symbol> syms;
  syms.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int idx = static_cast<int>(i);
    syms.push_back({byte_tokens_[static_cast<uint8_t>(bytes[i])], idx - 1, idx + 1});
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, CandidateAfter> queue;
  auto try_add = [&](int left) {
    if (left < 0) return;
    const int right = syms[static_cast<size_t>(left)].next;
    if (right < 0) return;
    const TokenId l = syms[static_cast<size_t>(left)].id, r = syms[static_cast<size_t>(right)].id;
    if (l < 0 || r < 0) return;
    auto it = merges_.find(pair_key(l, r));
    if (it != merges_.end()) queue.push({it->second.rank, left, l, r, it->second.result});
  };
  for (size_t i = 0; i + 1 < syms.size(); ++i) try_add(static_cast<int>(i));

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = syms[static_cast<size_t>(c.left)];
    // Stale when either side has merged since: the ids no longer match.
    if (l.id != c.left_id || l.next < 0) continue;
    Symbol& r = syms[static_cast<size_t>(l.next)];
    if (r.id != c.right_id) continue;
    l.id = c.result;
    r.id = kDead;
    l.next = r.next;
    if (r.next >= 0) syms[static_cast<size_t>(r.next)].prev = c.left;
    try_add(l.prev);
    try_add(c.left);
  }

  for (int i = 0; i >= 0; i = syms[static_cast<size_t>(i)].next) {
    const TokenId id = syms[static_cast<size_t>(i)].id;
    if (id >= 0) {
      out->push_back(id);
    } else if (special_.unk != kNoToken) {
      out->push_back(special_.unk);  // a byte the vocab has no character for
    }
  }
}

void BpeModel::append_piece(TokenId id, std::string* out) const {
  switch (vocab_.type(id)) {
    case TokenType::kUserDefined:
      *out += vocab_.text(id);
      return;
    case TokenType::kUnknown:
    case TokenType::kUnused:
    case TokenType::kControl:
      return;
    default:
      byte_level::decode(vocab_.text(id), out);
  }
}

}  // namespace loom::llm
