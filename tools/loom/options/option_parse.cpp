#include "options/option_parse.hpp"

#include <cstdint>
#include <cstdlib>

#include "options/arg_parse.hpp"
#include "options/placement_options.hpp"

namespace loom::cli {
namespace {

// "a|b|c" -> "a, b or c".
std::string choices_text(const std::string& choices) {
  std::string out;
  size_t start = 0;
  for (;;) {
    const size_t bar = choices.find('|', start);
    const std::string word = choices.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (!out.empty()) out += bar == std::string::npos ? " or " : ", ";
    out += word;
    if (bar == std::string::npos) return out;
    start = bar + 1;
  }
}

bool is_choice(const std::string& choices, const std::string& v) {
  return ("|" + choices + "|").find("|" + v + "|") != std::string::npos && !v.empty();
}

// "1,2,4" -> {1, 2, 4}; false on any bad or empty element.
bool parse_int_list(const std::string& s, int64_t lo, int64_t hi, std::vector<int64_t>* out) {
  out->clear();
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    int64_t v = 0;
    if (!parse_int(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start), lo, hi, &v)) {
      return false;
    }
    out->push_back(v);
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

// Why args[i] is not an argument of `command`: a switch given a value, a
// flag of other commands (named), a flag of none, or a stray word.
std::string refusal(Command command, const std::string& arg, const Option& opt, const OptionSpec* spec) {
  const std::string head = "unexpected argument '" + arg + "'";
  if (spec != nullptr) return head + ": " + opt.flag + " takes no value";
  std::string takers;
  for (const CommandSpec& c : command_table()) {
    const OptionSpec* other = find_option(c.bit, opt.flag);
    if (c.bit != command && other != nullptr && !other->hidden) {
      takers += (takers.empty() ? "" : ", ") + std::string(c.name);
    }
  }
  if (!takers.empty()) {
    const CommandSpec* self = nullptr;
    for (const CommandSpec& c : command_table()) {
      if (c.bit == command) self = &c;
    }
    return head + ": an option of " + takers + ", not of " + (self ? self->name : "this command");
  }
  if (arg.size() > 1 && arg[0] == '-') return "unknown option '" + arg + "'";
  return head;
}

// A whole number above hi (digits alone, possibly past int64): its message
// names the largest value too when the expectation's text does not.
bool above_max(const std::string& v, int64_t hi) {
  const size_t first = !v.empty() && v[0] == '+' ? 1 : 0;
  if (first == v.size() || v.find_first_not_of("0123456789", first) != std::string::npos) return false;
  const std::string digits = v.substr(v.find_first_not_of('0', first) == std::string::npos
                                          ? v.size() - 1
                                          : v.find_first_not_of('0', first));
  const std::string max = std::to_string(hi);
  return digits.size() > max.size() || (digits.size() == max.size() && digits > max);
}

}  // namespace

std::string check_value(const OptionSpec& spec, const std::string& flag, const std::string& v) {
  const auto lo = static_cast<int64_t>(spec.lo), hi = static_cast<int64_t>(spec.hi);
  int64_t n = 0;
  double f = 0;
  std::vector<int64_t> list;
  bool ok = true;
  std::string expect = spec.expect ? spec.expect : "";
  switch (spec.kind) {
    case ValueKind::kSwitch:
    case ValueKind::kText:
      break;
    case ValueKind::kName:
      ok = !v.empty();
      break;
    case ValueKind::kInt:
      ok = parse_int(v, lo, hi, &n);
      if (!ok && hi >= 0 && above_max(v, hi) && expect.find(std::to_string(hi)) == std::string::npos) {
        expect += ", at most " + std::to_string(hi);
      }
      break;
    case ValueKind::kIntList:
      ok = parse_int_list(v, lo, hi, &list);
      break;
    case ValueKind::kNumber:
      ok = parse_float(v, spec.lo, spec.hi, &f) && !(spec.lo_open && f == spec.lo);
      break;
    case ValueKind::kChoice:
      ok = is_choice(spec.value, v);
      expect = choices_text(spec.value);
      break;
    case ValueKind::kSplit:
    case ValueKind::kOverride: {
      PlacementOptions ignored;
      return take_placement_flag(flag, v, &ignored);
    }
  }
  return ok ? "" : flag + " '" + v + "': expected " + expect;
}

std::string parse_options(Command command, const std::vector<std::string>& args, ParsedOptions* out) {
  for (size_t i = 0; i < args.size(); ++i) {
    Option opt = split_option(args[i]);
    const OptionSpec* spec = find_option(command, opt.flag);
    if (spec == nullptr || (spec->kind == ValueKind::kSwitch && opt.inline_value)) {
      return refusal(command, args[i], opt, spec);
    }
    if (spec->kind != ValueKind::kSwitch) {
      if (std::string e = take_value(args, &i, &opt); !e.empty()) return e;
      if (std::string e = check_value(*spec, opt.flag, opt.value); !e.empty()) return e;
    }
    out->add(*spec, opt.value);
  }
  return "";
}

void ParsedOptions::add(const OptionSpec& spec, const std::string& value) {
  std::vector<std::string>& v = values_[spec.name];
  if (!spec.repeatable) v.clear();
  v.push_back(value);
  order_.emplace_back(spec.name, value);
}

std::string ParsedOptions::text(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> ParsedOptions::all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>() : it->second;
}

int64_t ParsedOptions::integer(const std::string& name, int64_t fallback) const {
  return has(name) ? std::strtoll(text(name).c_str(), nullptr, 10) : fallback;
}

double ParsedOptions::number(const std::string& name, double fallback) const {
  return has(name) ? std::strtod(text(name).c_str(), nullptr) : fallback;
}

std::vector<int64_t> ParsedOptions::integers(const std::string& name) const {
  std::vector<int64_t> out;
  if (has(name)) parse_int_list(text(name), INT64_MIN, INT64_MAX, &out);
  return out;
}

}  // namespace loom::cli
