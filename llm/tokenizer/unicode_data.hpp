// The generated Unicode tables (llm/tokenizer/unicode_data.cpp and
// llm/tokenizer/unicode_case_data.cpp, written by
// tools/gen_unicode_tables.py). Read them through llm/tokenizer/unicode.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::llm::unicode {

// One run of code points sharing a general category: from `first` up to the
// next run's first (the last run ends at 0x110000). `category` is a
// unicode::Category value.
struct CategoryRun {
  uint32_t first;
  uint8_t category;
};

// Code points first..last whose canonical decomposition (NFD) starts with nfd.
struct NfdRange {
  uint32_t first;
  uint32_t last;
  uint32_t nfd;
};

// A code point whose lowercase (its first code point) differs from it.
struct LowerPair {
  uint32_t cp;
  uint32_t lower;
};

extern const char kUnicodeVersion[];
extern const CategoryRun kCategoryRuns[];
extern const size_t kCategoryRunCount;
extern const NfdRange kNfdRanges[];  // sorted by first, disjoint
extern const size_t kNfdRangeCount;
extern const LowerPair kLowerPairs[];  // sorted by cp
extern const size_t kLowerPairCount;

}  // namespace loom::llm::unicode
