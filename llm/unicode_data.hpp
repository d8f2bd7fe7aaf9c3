// The generated Unicode tables (llm/unicode_data.cpp, written by
// tools/gen_unicode_tables.py). Read them through llm/unicode.hpp.
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

extern const char kUnicodeVersion[];
extern const CategoryRun kCategoryRuns[];
extern const size_t kCategoryRunCount;

}  // namespace loom::llm::unicode
