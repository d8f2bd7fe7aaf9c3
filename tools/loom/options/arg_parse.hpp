// Number arguments of the `loom` commands: whole strings only, in a range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cli {

// A whole decimal integer in [lo, hi] -> *out; false otherwise.
bool parse_int(const std::string& s, int64_t lo, int64_t hi, int64_t* out);
// A whole finite number in [lo, hi] -> *out; false otherwise.
bool parse_float(const std::string& s, double lo, double hi, double* out);
// One argument of a command: "--flag=value" splits at the first '=' (the
// value given inline); anything else is a flag alone.
struct Option {
  std::string flag;
  std::string value;
  bool inline_value = false;
};
Option split_option(const std::string& arg);
// The value of the valued flag o (split from args[*i]): the inline one, else
// the next argument (*i moves on to it). "" or the error for a
// bad-arguments exit ("FLAG needs a value").
std::string take_value(const std::vector<std::string>& args, size_t* i, Option* o);

// The bytes of `file` ("-": stdin) -> *out; false when it cannot be read.
bool read_text(const std::string& file, std::string* out);

}  // namespace loom::cli
