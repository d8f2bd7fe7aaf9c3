#include "options/arg_parse.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

namespace loom::cli {

bool parse_int(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

Option split_option(const std::string& arg) {
  Option o;
  const size_t eq = arg.find('=');
  o.inline_value = arg.rfind("--", 0) == 0 && eq != std::string::npos;
  o.flag = o.inline_value ? arg.substr(0, eq) : arg;
  if (o.inline_value) o.value = arg.substr(eq + 1);
  return o;
}

std::string take_value(const std::vector<std::string>& args, size_t* i, Option* o) {
  if (o->inline_value) return "";
  if (*i + 1 >= args.size()) return o->flag + " needs a value";
  o->value = args[++*i];
  return "";
}

bool parse_float(const std::string& s, double lo, double hi, double* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool read_text(const std::string& file, std::string* out) {
  if (file == "-") {
    out->assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return !std::cin.bad();
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace loom::cli
