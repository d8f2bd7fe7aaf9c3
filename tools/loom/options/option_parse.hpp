// A command's arguments read through the option table (option_table.hpp):
// "--flag value", "--flag=value" and the short flags, each value checked
// by its row's kind, so every command refuses a bad value with the same
// words ("FLAG 'VALUE': expected ...") and a bad-arguments exit (2).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "options/option_table.hpp"

namespace loom::cli {

class ParsedOptions {
 public:
  // Whether the option (by its name, e.g. "--threads") was given.
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  // Its value (the last one given), else `fallback`.
  std::string text(const std::string& name, const std::string& fallback = "") const;
  // Every value given, in order (repeatable options).
  std::vector<std::string> all(const std::string& name) const;
  // The value of a kInt / kNumber / kIntList option (checked when parsed),
  // else `fallback`.
  int64_t integer(const std::string& name, int64_t fallback) const;
  double number(const std::string& name, double fallback) const;
  std::vector<int64_t> integers(const std::string& name) const;
  // Every option in the order given: (name, value) pairs.
  const std::vector<std::pair<std::string, std::string>>& in_order() const { return order_; }

  void add(const OptionSpec& spec, const std::string& value);

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::pair<std::string, std::string>> order_;
};

// Parse `args` (what follows the command's name) for `command`. "" or the
// error for a bad-arguments exit: "unknown option '--X'", "unexpected
// argument 'X'" (with why: a flag of other commands, a switch given a
// value), "FLAG needs a value", "FLAG 'VALUE': expected ...".
std::string parse_options(Command command, const std::vector<std::string>& args, ParsedOptions* out);

// Whether value is good for spec: "" or the error (flag: as given).
std::string check_value(const OptionSpec& spec, const std::string& flag, const std::string& value);

}  // namespace loom::cli
