// Unicode lookups over the generated category runs, and UTF-8 coding.
#include "llm/tokenizer/unicode.hpp"

#include <algorithm>
#include <memory>

#include "llm/tokenizer/unicode_data.hpp"

namespace loom::llm::unicode {

namespace {

constexpr uint32_t kDirectLimit = 0x10000;  // the BMP gets a direct table

Category lookup_runs(uint32_t cp) {
  const CategoryRun* end = kCategoryRuns + kCategoryRunCount;
  const CategoryRun* it =
      std::upper_bound(kCategoryRuns, end, cp, [](uint32_t v, const CategoryRun& r) { return v < r.first; });
  return it == kCategoryRuns ? Category::kCn : static_cast<Category>((it - 1)->category);
}

// One byte per BMP code point, expanded from the runs on first use.
const uint8_t* direct_table() {
  static const std::unique_ptr<uint8_t[]> table = [] {
    std::unique_ptr<uint8_t[]> t(new uint8_t[kDirectLimit]);
    for (size_t i = 0; i < kCategoryRunCount && kCategoryRuns[i].first < kDirectLimit; ++i) {
      const uint32_t next = i + 1 < kCategoryRunCount ? kCategoryRuns[i + 1].first : kDirectLimit;
      const uint32_t last = std::min(next, kDirectLimit);
      std::fill(t.get() + kCategoryRuns[i].first, t.get() + last, kCategoryRuns[i].category);
    }
    return t;
  }();
  return table.get();
}

}  // namespace

Category category(uint32_t cp) {
  if (cp < kDirectLimit) return static_cast<Category>(direct_table()[cp]);
  if (cp >= 0x110000) return Category::kCn;
  return lookup_runs(cp);
}

uint32_t nfd_first(uint32_t cp) {
  if (cp < 0xC0) return cp;  // nothing below U+00C0 decomposes
  const NfdRange* end = kNfdRanges + kNfdRangeCount;
  const NfdRange* it = std::upper_bound(kNfdRanges, end, cp, [](uint32_t v, const NfdRange& r) { return v < r.first; });
  if (it == kNfdRanges) return cp;
  --it;
  return cp <= it->last ? it->nfd : cp;
}

uint32_t to_lower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  const LowerPair* end = kLowerPairs + kLowerPairCount;
  const LowerPair* it = std::lower_bound(kLowerPairs, end, cp, [](const LowerPair& p, uint32_t v) { return p.cp < v; });
  return it != end && it->cp == cp ? it->lower : cp;
}

CategoryMask category_mask(std::string_view name) {
  static const char* const kNames[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd",
                                       "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm",
                                       "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Category::kCount));
  if (name == "L") return kLetter;
  if (name == "M") return kMark;
  if (name == "N") return kNumber;
  if (name == "P") return kPunctuation;
  if (name == "S") return kSymbol;
  if (name == "Z") return kSeparator;
  if (name == "C") return kOther;
  for (size_t i = 0; i < static_cast<size_t>(Category::kCount); ++i) {
    if (name == kNames[i]) return bit(static_cast<Category>(i));
  }
  return 0;
}

bool is_whitespace(uint32_t cp) {
  // PropList.txt White_Space (unchanged since Unicode 6.3).
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

uint32_t decode_utf8(std::string_view text, size_t pos, size_t* out_len) {
  const uint8_t* s = reinterpret_cast<const uint8_t*>(text.data()) + pos;
  const size_t avail = text.size() - pos;
  const uint8_t lead = s[0];
  *out_len = 1;
  if (lead < 0x80) return lead;
  size_t n;
  uint32_t cp, min;
  if (lead >= 0xc2 && lead < 0xe0) {
    n = 2, cp = lead & 0x1fu, min = 0x80;
  } else if (lead >= 0xe0 && lead < 0xf0) {
    n = 3, cp = lead & 0x0fu, min = 0x800;
  } else if (lead >= 0xf0 && lead < 0xf5) {
    n = 4, cp = lead & 0x07u, min = 0x10000;
  } else {
    return kInvalidBase + lead;
  }
  if (avail < n) return kInvalidBase + lead;
  for (size_t i = 1; i < n; ++i) {
    if ((s[i] & 0xc0) != 0x80) return kInvalidBase + lead;
    cp = (cp << 6) | (s[i] & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return kInvalidBase + lead;
  *out_len = n;
  return cp;
}

size_t utf8_len(std::string_view text, size_t pos) {
  size_t n;
  decode_utf8(text, pos, &n);
  return n;
}

void append_utf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

}  // namespace loom::llm::unicode
