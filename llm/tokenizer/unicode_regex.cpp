// The pattern parser (recursive descent over code points) and the
// backtracking matcher (continuation passing; runs of one-character items are
// counted in a loop, so recursion depth follows the pattern, not the text).
#include "llm/tokenizer/unicode_regex.hpp"

#include <algorithm>

namespace loom::llm {

namespace {

bool is_ascii_letter(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A non-owning, non-allocating callable: the rest of the match after a node.
struct Cont {
  bool (*call)(const void* self, size_t pos);
  const void* self;
  bool operator()(size_t pos) const { return call(self, pos); }
};

template <class F>
Cont cont(const F& f) {
  return {[](const void* self, size_t pos) { return (*static_cast<const F*>(self))(pos); }, &f};
}

}  // namespace

bool UnicodeRegex::CharClass::test_slow(uint32_t cp) const {
  auto contains = [this](uint32_t c) {
    for (const auto& r : ranges) {
      if (c >= r.first && c <= r.second) return true;
    }
    const unicode::CategoryMask cat = unicode::bit(unicode::category(c));
    if ((categories & cat) != 0) return true;
    if (not_categories != 0 && (not_categories & cat) == 0) return true;
    if (space && unicode::is_whitespace(c)) return true;
    return not_space && !unicode::is_whitespace(c);
  };
  bool in = contains(cp);
  if (!in && fold_ascii && is_ascii_letter(cp)) in = contains(cp ^ 0x20u);
  return in != negated;
}

// ------------------------------------------------------------------ parser

class RegexParser {
 public:
  RegexParser(UnicodeRegex* re, std::string_view pattern) : re_(re), pattern_(pattern) {}

  Status run() {
    for (size_t pos = 0; pos < pattern_.size();) {
      size_t len;
      const uint32_t cp = unicode::decode_utf8(pattern_, pos, &len);
      if (cp >= unicode::kInvalidBase) return error("invalid UTF-8", pos);
      p_.push_back(cp);
      offsets_.push_back(pos);
      pos += len;
    }
    offsets_.push_back(pattern_.size());
    LOOM_ASSIGN_OR_RETURN(int root, alternation());
    if (i_ < p_.size()) return error("unbalanced ')'");
    re_->root_ = root;
    return Status::Ok();
  }

 private:
  using Node = UnicodeRegex::Node;
  using Op = UnicodeRegex::Op;
  using CharClass = UnicodeRegex::CharClass;

  Status error(const std::string& what) const { return error(what, offsets_[std::min(i_, p_.size())]); }
  Status error(const std::string& what, size_t byte_offset) const {
    return invalid_argument("[tokenizer.regex] " + std::string(pattern_) + ": " + what + " at offset " +
                            std::to_string(byte_offset));
  }
  bool at_end() const { return i_ >= p_.size(); }
  uint32_t peek(size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : 0; }

  int add(Node n) {
    // Kids are always added before their parent, so a parent's "single"
    // flag can be decided from its kids right here.
    n.single = decide_single(n);
    re_->nodes_.push_back(std::move(n));
    return static_cast<int>(re_->nodes_.size() - 1);
  }
  bool decide_single(const Node& n) const {
    const auto& nodes = re_->nodes_;
    switch (n.op) {
      case Op::kClass:
        return true;
      case Op::kAlt:
        return std::all_of(n.kids.begin(), n.kids.end(), [&](int k) { return nodes[k].single; });
      case Op::kRepeat:
        return n.min == 1 && n.max == 1 && nodes[n.kids[0]].single;
      case Op::kSeq: {
        // Zero-width checks of the same character, then the one character.
        if (n.kids.empty() || !nodes[n.kids.back()].single) return false;
        for (size_t i = 0; i + 1 < n.kids.size(); ++i) {
          const Node& k = nodes[n.kids[i]];
          if (k.op != Op::kLookahead || !nodes[k.kids[0]].single) return false;
        }
        return true;
      }
      default:
        return false;
    }
  }
  int add_class(CharClass c) {
    for (uint32_t cp = 0; cp < 128; ++cp) {
      if (c.test_slow(cp)) c.ascii[cp >> 6] |= uint64_t{1} << (cp & 63);
    }
    re_->classes_.push_back(std::move(c));
    Node n;
    n.op = Op::kClass;
    n.cls = static_cast<int>(re_->classes_.size() - 1);
    return add(std::move(n));
  }

  StatusOr<int> alternation() {
    Node alt;
    alt.op = Op::kAlt;
    for (;;) {
      LOOM_ASSIGN_OR_RETURN(int s, sequence());
      alt.kids.push_back(s);
      if (at_end() || peek() != '|') break;
      ++i_;
    }
    if (alt.kids.size() == 1) return alt.kids[0];
    return add(std::move(alt));
  }

  StatusOr<int> sequence() {
    Node seq;
    seq.op = Op::kSeq;
    while (!at_end() && peek() != '|' && peek() != ')') {
      LOOM_ASSIGN_OR_RETURN(int q, quantified());
      seq.kids.push_back(q);
    }
    if (seq.kids.size() == 1) return seq.kids[0];
    return add(std::move(seq));
  }

  // {n}, {n,}, {n,m} at i_ (on '{'); false (i_ unchanged) when it is not one.
  bool braces(size_t* min, size_t* max) {
    size_t j = i_ + 1, a = 0, b = 0;
    auto number = [&](size_t* v) {
      const size_t start = j;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9' && j - start < 6) *v = *v * 10 + (p_[j++] - '0');
      return j > start;
    };
    if (!number(&a)) return false;
    b = a;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      b = UnicodeRegex::kUnbounded;
      size_t m = 0;
      if (number(&m)) b = m;
    }
    if (j >= p_.size() || p_[j] != '}' || b < a) return false;
    i_ = j + 1;
    *min = a;
    *max = b;
    return true;
  }

  StatusOr<int> quantified() {
    LOOM_ASSIGN_OR_RETURN(int atom_node, atom());
    if (at_end()) return atom_node;
    size_t min = 0, max = 0;
    const uint32_t c = peek();
    if (c == '*') {
      ++i_, min = 0, max = UnicodeRegex::kUnbounded;
    } else if (c == '+') {
      ++i_, min = 1, max = UnicodeRegex::kUnbounded;
    } else if (c == '?') {
      ++i_, min = 0, max = 1;
    } else if (c != '{' || !braces(&min, &max)) {
      return atom_node;
    }
    if (!at_end() && (peek() == '?' || peek() == '+')) {
      return error("lazy and possessive quantifiers are not supported");
    }
    if (!at_end() && (peek() == '*' || peek() == '{')) return error("nested quantifier");
    if (!re_->nodes_[atom_node].single && max == UnicodeRegex::kUnbounded) {
      return error("unbounded repetition of a multi-character group is not supported");
    }
    Node rep;
    rep.op = Op::kRepeat;
    rep.kids = {atom_node};
    rep.min = min;
    rep.max = max;
    return add(std::move(rep));
  }

  StatusOr<int> atom() {
    const uint32_t c = peek();
    if (c == '(') return group();
    if (c == '[') return char_class();
    if (c == '*' || c == '+' || c == '?') return error("quantifier without a target");
    ++i_;
    if (c == '^' || c == '$') {
      Node n;
      n.op = c == '^' ? Op::kStart : Op::kEnd;
      return add(std::move(n));
    }
    CharClass cls;
    cls.fold_ascii = fold_;
    if (c == '.') {
      cls.negated = true;
      cls.ranges.push_back({'\n', '\n'});
    } else if (c == '\\') {
      uint32_t ch = 0;
      bool is_char = false;
      LOOM_RETURN_IF_ERROR(escape(&cls, &ch, &is_char));
      if (is_char) cls.ranges.push_back({ch, ch});
    } else {
      cls.ranges.push_back({c, c});
    }
    return add_class(std::move(cls));
  }

  StatusOr<int> group() {
    const size_t open = i_++;
    const bool outer_fold = fold_;
    Node look;
    look.op = Op::kLookahead;
    bool is_look = false;
    if (peek() == '?') {
      const uint32_t k = peek(1);
      if (k == ':') {
        i_ += 2;
      } else if (k == '=' || k == '!') {
        i_ += 2;
        is_look = true;
        look.negative = k == '!';
      } else if (k == 'i' && peek(2) == ':') {
        i_ += 3;
        fold_ = true;
      } else {
        return error("unsupported group syntax '(?" + std::string(1, static_cast<char>(k < 128 ? k : '?')) + "'");
      }
    }
    LOOM_ASSIGN_OR_RETURN(int inner, alternation());
    fold_ = outer_fold;
    if (at_end() || peek() != ')') return error("unclosed '('", offsets_[open]);
    ++i_;
    if (!is_look) return inner;
    look.kids = {inner};
    return add(std::move(look));
  }

  StatusOr<int> char_class() {
    const size_t open = i_++;
    CharClass cls;
    cls.fold_ascii = fold_;
    if (peek() == '^') {
      cls.negated = true;
      ++i_;
    }
    bool first = true;
    for (;;) {
      if (at_end()) return error("unclosed '['", offsets_[open]);
      uint32_t c = peek();
      if (c == ']' && !first) break;
      first = false;
      ++i_;
      bool is_char = true;
      if (c == '\\') LOOM_RETURN_IF_ERROR(escape(&cls, &c, &is_char));
      if (!is_char) continue;
      uint32_t hi = c;
      if (peek() == '-' && i_ + 1 < p_.size() && peek(1) != ']') {
        ++i_;
        hi = peek();
        ++i_;
        bool hi_char = true;
        if (hi == '\\') LOOM_RETURN_IF_ERROR(escape(&cls, &hi, &hi_char));
        if (!hi_char) return error("a class item cannot end a range");
        if (hi < c) return error("range out of order");
      }
      cls.ranges.push_back({c, hi});
    }
    ++i_;  // ']'
    return add_class(std::move(cls));
  }

  // After a backslash: a single character (*is_char, *out) or class items
  // added to *cls.
  Status escape(CharClass* cls, uint32_t* out, bool* is_char) {
    if (at_end()) return error("trailing backslash");
    const uint32_t c = p_[i_++];
    *is_char = true;
    switch (c) {
      case 'r': *out = '\r'; return Status::Ok();
      case 'n': *out = '\n'; return Status::Ok();
      case 't': *out = '\t'; return Status::Ok();
      case 'f': *out = '\f'; return Status::Ok();
      case 'v': *out = '\v'; return Status::Ok();
      case 'x': case 'u': case 'U': return hex_escape(c, out);
      default: break;
    }
    *is_char = false;
    switch (c) {
      case 's': cls->space = true; return Status::Ok();
      case 'S': cls->not_space = true; return Status::Ok();
      case 'd': cls->categories |= unicode::bit(unicode::Category::kNd); return Status::Ok();
      case 'D': return add_not(cls, unicode::bit(unicode::Category::kNd));
      case 'p': case 'P': return property(cls, c == 'P');
      default: break;
    }
    if (c < 128 && !is_ascii_letter(c) && !(c >= '0' && c <= '9')) {
      *is_char = true;  // escaped punctuation stands for itself
      *out = c;
      return Status::Ok();
    }
    return error("unsupported escape '\\" + std::string(1, static_cast<char>(c < 128 ? c : '?')) + "'");
  }

  Status hex_escape(uint32_t kind, uint32_t* out) {
    size_t digits = kind == 'x' ? 2 : kind == 'u' ? 4 : 8;
    const bool braced = kind == 'x' && peek() == '{';
    if (braced) {
      ++i_;
      digits = 8;
    }
    uint32_t v = 0;
    size_t n = 0;
    while (n < digits && !at_end() && unicode::hex_digit(peek()) >= 0) {
      v = v * 16 + static_cast<uint32_t>(unicode::hex_digit(p_[i_++]));
      ++n;
    }
    if (braced) {
      if (at_end() || peek() != '}') return error("unclosed \\x{");
      ++i_;
    }
    if (n == 0 || (!braced && n != digits) || v > 0x10ffff) return error("bad hex escape");
    *out = v;
    return Status::Ok();
  }

  Status property(CharClass* cls, bool negated) {
    std::string name;
    auto take = [&] {
      const uint32_t c = p_[i_++];
      name += c < 128 ? static_cast<char>(c) : '?';
    };
    if (peek() == '{') {
      ++i_;
      while (!at_end() && peek() != '}') take();
      if (at_end()) return error("unclosed \\p{");
      ++i_;
    } else if (!at_end()) {
      take();
    }
    const unicode::CategoryMask mask = unicode::category_mask(name);
    if (mask == 0) return error("unknown property \\p{" + name + "} (general categories only)");
    if (negated) return add_not(cls, mask);
    cls->categories |= mask;
    return Status::Ok();
  }

  // One negated item per class (\P{..} or \D): two would need an AND.
  Status add_not(CharClass* cls, unicode::CategoryMask mask) {
    if (cls->not_categories != 0) return error("two negated properties in one class");
    cls->not_categories = mask;
    return Status::Ok();
  }

  UnicodeRegex* re_;
  std::string_view pattern_;
  std::vector<uint32_t> p_;
  std::vector<size_t> offsets_;  // byte offset of each code point (+ the end)
  size_t i_ = 0;
  bool fold_ = false;
};

StatusOr<UnicodeRegex> UnicodeRegex::compile(std::string_view pattern) {
  UnicodeRegex re;
  re.pattern_ = std::string(pattern);
  RegexParser parser(&re, pattern);
  LOOM_RETURN_IF_ERROR(parser.run());
  re.index_alternatives();
  return StatusOr<UnicodeRegex>(std::move(re));
}

void UnicodeRegex::index_alternatives() {
  const Node& root = nodes_[static_cast<size_t>(root_)];
  alts_ = root.op == Op::kAlt ? root.kids : std::vector<int>{root_};
  for (int a : alts_) {
    const Node* n = &nodes_[static_cast<size_t>(a)];
    if (n->op == Op::kSeq && !n->kids.empty()) n = &nodes_[static_cast<size_t>(n->kids[0])];
    const bool lead = n->op == Op::kRepeat && n->max == kUnbounded && nodes_[static_cast<size_t>(n->kids[0])].single;
    leads_.push_back(lead ? n->kids[0] : -1);
  }
}

bool UnicodeRegex::test_single(int node, uint32_t cp) const {
  const Node& n = nodes_[static_cast<size_t>(node)];
  switch (n.op) {
    case Op::kClass:
      return classes_[static_cast<size_t>(n.cls)].test(cp);
    case Op::kAlt:
      for (int k : n.kids) {
        if (test_single(k, cp)) return true;
      }
      return false;
    case Op::kRepeat:
      return test_single(n.kids[0], cp);
    case Op::kSeq:
      for (size_t i = 0; i + 1 < n.kids.size(); ++i) {
        const Node& look = nodes_[static_cast<size_t>(n.kids[i])];
        if (test_single(look.kids[0], cp) == look.negative) return false;
      }
      return test_single(n.kids.back(), cp);
    default:
      return false;
  }
}

// ----------------------------------------------------------------- matcher

class RegexMatcher {
 public:
  RegexMatcher(const UnicodeRegex& re, const uint32_t* s, size_t n) : re_(re), s_(s), n_(n) {}

  // End of node's match starting at pos, or kNoMatch.
  size_t match_from(int node, size_t pos) const {
    size_t end = UnicodeRegex::kNoMatch;
    auto done = [&](size_t p) {
      end = p;
      return true;
    };
    match(node, pos, cont(done));
    return end;
  }

  bool match(int node, size_t pos, Cont k) const {
    const UnicodeRegex::Node& nd = re_.nodes_[static_cast<size_t>(node)];
    switch (nd.op) {
      case Op::kClass:
        return pos < n_ && re_.classes_[static_cast<size_t>(nd.cls)].test(s_[pos]) && k(pos + 1);
      case Op::kSeq:
        return seq(nd, 0, pos, k);
      case Op::kAlt:
        for (int kid : nd.kids) {
          if (match(kid, pos, k)) return true;
        }
        return false;
      case Op::kRepeat:
        return re_.nodes_[static_cast<size_t>(nd.kids[0])].single ? repeat_single(nd, pos, k) : repeat(nd, 0, pos, k);
      case Op::kLookahead: {
        auto accept = [](size_t) { return true; };
        const bool found = match(nd.kids[0], pos, cont(accept));
        return found != nd.negative && k(pos);
      }
      case Op::kStart:
        return pos == 0 && k(pos);
      case Op::kEnd:
        return pos == n_ && k(pos);
    }
    return false;
  }

 private:
  using Op = UnicodeRegex::Op;

  bool seq(const UnicodeRegex::Node& nd, size_t i, size_t pos, Cont k) const {
    // One-character parts need no backtracking point: step over them.
    while (i < nd.kids.size() && re_.nodes_[static_cast<size_t>(nd.kids[i])].single) {
      if (pos >= n_ || !re_.test_single(nd.kids[i], s_[pos])) return false;
      ++pos, ++i;
    }
    if (i == nd.kids.size()) return k(pos);
    auto rest = [&](size_t p) { return seq(nd, i + 1, p, k); };
    return match(nd.kids[i], pos, cont(rest));
  }

  bool repeat_single(const UnicodeRegex::Node& nd, size_t pos, Cont k) const {
    const size_t limit = std::min(nd.max, n_ - pos);
    size_t count = 0;
    while (count < limit && re_.test_single(nd.kids[0], s_[pos + count])) ++count;
    if (count < nd.min) return false;
    for (size_t c = count + 1; c-- > nd.min;) {  // greedy: longest first
      if (k(pos + c)) return true;
    }
    return false;
  }

  // Bounded repetition of a multi-character part (compile() refuses unbounded).
  bool repeat(const UnicodeRegex::Node& nd, size_t count, size_t pos, Cont k) const {
    if (count < nd.max) {
      auto again = [&](size_t p) { return p != pos && repeat(nd, count + 1, p, k); };
      if (match(nd.kids[0], pos, cont(again))) return true;
    }
    return count >= nd.min && k(pos);
  }

  const UnicodeRegex& re_;
  const uint32_t* s_;
  size_t n_;
};

size_t UnicodeRegex::match_at(const uint32_t* cps, size_t n, size_t pos) const {
  return RegexMatcher(*this, cps, n).match_from(root_, pos);
}

void UnicodeRegex::split(const uint32_t* cps, size_t n, std::vector<size_t>* out_ends) const {
  const RegexMatcher m(*this, cps, n);
  std::vector<char> known_fail(alts_.size(), 0), failed(alts_.size(), 0);
  size_t gap = 0;
  for (size_t pos = 0; pos < n;) {
    // The first alternative that matches here, in order (as the alternation would).
    size_t end = kNoMatch;
    std::fill(failed.begin(), failed.end(), 0);
    for (size_t i = 0; i < alts_.size() && end == kNoMatch; ++i) {
      end = known_fail[i] ? kNoMatch : m.match_from(alts_[i], pos);
      failed[i] = end == kNoMatch;
    }
    if (end == kNoMatch || end == pos) {
      for (size_t i = 0; i < alts_.size(); ++i) {
        known_fail[i] = failed[i] && leads_[i] >= 0 && test_single(leads_[i], cps[pos]);
      }
      ++pos;
      continue;
    }
    std::fill(known_fail.begin(), known_fail.end(), 0);
    if (pos > gap) out_ends->push_back(pos);
    out_ends->push_back(end);
    gap = pos = end;
  }
  if (n > gap) out_ends->push_back(n);
}

}  // namespace loom::llm
