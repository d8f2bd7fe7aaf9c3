// Unicode facts the tokenizers need: UTF-8 decoding that keeps invalid bytes,
// general categories, NFD base letters and lowercase (from the generated
// tables) and White_Space.
//
// Thread-safety: every function is pure; the lookup table behind category()
// is built once on first use (thread-safe static initialisation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loom::llm::unicode {

// U+2581 LOWER ONE EIGHTH BLOCK: SentencePiece's (and WPM's) mark for a space.
inline constexpr std::string_view kSpaceMark = "\xe2\x96\x81";

// Unicode general categories. kCn (unassigned) is 0; the order is the
// generated table's (tools/gen_unicode_tables.py).
enum class Category : uint8_t {
  kCn, kLu, kLl, kLt, kLm, kLo, kMn, kMc, kMe, kNd, kNl, kNo,
  kPc, kPd, kPs, kPe, kPi, kPf, kPo, kSm, kSc, kSk, kSo,
  kZs, kZl, kZp, kCc, kCf, kCs, kCo,
  kCount
};

// A bit per Category, so classes like \p{L} are masks.
using CategoryMask = uint32_t;
constexpr CategoryMask bit(Category c) { return CategoryMask{1} << static_cast<unsigned>(c); }
constexpr CategoryMask kLetter = bit(Category::kLu) | bit(Category::kLl) | bit(Category::kLt) |
                                 bit(Category::kLm) | bit(Category::kLo);
constexpr CategoryMask kMark = bit(Category::kMn) | bit(Category::kMc) | bit(Category::kMe);
constexpr CategoryMask kNumber = bit(Category::kNd) | bit(Category::kNl) | bit(Category::kNo);
constexpr CategoryMask kPunctuation = bit(Category::kPc) | bit(Category::kPd) | bit(Category::kPs) |
                                      bit(Category::kPe) | bit(Category::kPi) | bit(Category::kPf) |
                                      bit(Category::kPo);
constexpr CategoryMask kSymbol = bit(Category::kSm) | bit(Category::kSc) | bit(Category::kSk) | bit(Category::kSo);
constexpr CategoryMask kSeparator = bit(Category::kZs) | bit(Category::kZl) | bit(Category::kZp);
constexpr CategoryMask kOther = bit(Category::kCc) | bit(Category::kCf) | bit(Category::kCs) |
                                bit(Category::kCo) | bit(Category::kCn);

// Bytes that are not part of valid UTF-8 decode to kInvalidBase + byte: above
// every code point, category Cn, not whitespace.
constexpr uint32_t kInvalidBase = 0x110000;

// The general category of cp (kCn for unassigned and invalid values).
Category category(uint32_t cp);
// The category mask for a name ("L", "Lu", "N", "P", ...); 0 when unknown.
CategoryMask category_mask(std::string_view name);
// Unicode's White_Space property (what \s means in the tokenizer patterns).
bool is_whitespace(uint32_t cp);
// The first code point of cp's canonical decomposition (NFD): the base
// letter of a precomposed character ("é" -> "e", a Hangul syllable -> its
// leading jamo); cp itself when it does not decompose.
uint32_t nfd_first(uint32_t cp);
// The first code point of cp's lowercase; cp itself when it has none.
uint32_t to_lower(uint32_t cp);

// Bytes of the UTF-8 character at text[pos] (pos < size): its length when
// well-formed (shortest form, no surrogates, <= U+10FFFF), else 1, so one
// invalid byte never swallows the next character.
size_t utf8_len(std::string_view text, size_t pos);
// The code point at text[pos] and its length; an invalid byte gives
// kInvalidBase + byte and length 1.
uint32_t decode_utf8(std::string_view text, size_t pos, size_t* out_len);
// Appends cp (<= U+10FFFF) as UTF-8.
void append_utf8(std::string* out, uint32_t cp);

// The value of an ASCII hex digit, -1 for anything else.
inline int hex_digit(uint32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

}  // namespace loom::llm::unicode
