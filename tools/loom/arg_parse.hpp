// Number arguments of the `loom` commands: whole strings only, in a range.
#pragma once

#include <cstdint>
#include <string>

namespace loom::cli {

// A whole decimal integer in [lo, hi] -> *out; false otherwise.
bool parse_int(const std::string& s, int64_t lo, int64_t hi, int64_t* out);
// A whole finite number in [lo, hi] -> *out; false otherwise.
bool parse_float(const std::string& s, double lo, double hi, double* out);
// The bytes of `file` ("-": stdin) -> *out; false when it cannot be read.
bool read_text(const std::string& file, std::string* out);

}  // namespace loom::cli
