#include "loom/runtime/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <fnmatch.h>
#include <mutex>
#include <string>
#include <vector>

namespace loom {
namespace {

struct Rule {
  std::string pattern;  // glob over categories
  LogLevel level;
};

struct LogState {
  std::mutex mu;
  std::vector<Rule> rules;
  LogSink sink;
};

bool parse_level(std::string_view s, LogLevel* out) {
  static const struct { const char* name; LogLevel level; } kLevels[] = {
      {"debug", LogLevel::kDebug}, {"info", LogLevel::kInfo}, {"warn", LogLevel::kWarn},
      {"warning", LogLevel::kWarn}, {"error", LogLevel::kError}, {"off", LogLevel::kOff},
      {"none", LogLevel::kOff}};
  for (const auto& l : kLevels) {
    if (s == l.name) {
      *out = l.level;
      return true;
    }
  }
  return false;
}

// "registry:debug,*:warn" or just "debug" (= "*:debug").
bool parse_filter(std::string_view spec, std::vector<Rule>* out) {
  std::vector<Rule> rules;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view item = spec.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    size_t colon = item.rfind(':');
    Rule r;
    std::string_view lvl = item;
    r.pattern = "*";
    if (colon != std::string_view::npos) {
      r.pattern = std::string(item.substr(0, colon));
      lvl = item.substr(colon + 1);
    }
    if (!parse_level(lvl, &r.level)) return false;
    rules.push_back(std::move(r));
  }
  rules.push_back({"*", LogLevel::kWarn});  // default when no rule matches
  *out = std::move(rules);
  return true;
}

LogState& state() {
  // Leaked on purpose: logging must work during static destruction.
  static LogState* s = [] {
    auto* st = new LogState();
    const char* env = std::getenv("LOOM_LOG");
    if (!env || !parse_filter(env, &st->rules)) {
      if (env) std::fprintf(stderr, "loom: ignoring malformed LOOM_LOG='%s'\n", env);
      parse_filter("", &st->rules);
    }
    return st;
  }();
  return *s;
}

LogLevel threshold_locked(LogState& st, std::string_view category) {
  std::string cat(category);
  for (const auto& r : st.rules) {
    if (fnmatch(r.pattern.c_str(), cat.c_str(), 0) == 0) return r.level;
  }
  return LogLevel::kWarn;
}

}  // namespace

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
    case LogLevel::kOff: return "off";
  }
  return "?";
}

bool log_enabled(LogLevel level, std::string_view category) {
  if (level == LogLevel::kOff) return false;
  LogState& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  return level >= threshold_locked(st, category);
}

void log(LogLevel level, std::string_view category, std::string_view message) {
  LogState& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (level == LogLevel::kOff || level < threshold_locked(st, category)) return;
  if (st.sink) {
    st.sink(level, category, message);
    return;
  }
  std::fprintf(stderr, "loom %s [%.*s] %.*s\n", log_level_name(level), static_cast<int>(category.size()),
               category.data(), static_cast<int>(message.size()), message.data());
}

bool set_log_filter(std::string_view spec) {
  std::vector<Rule> rules;
  if (!parse_filter(spec, &rules)) return false;
  LogState& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.rules = std::move(rules);
  return true;
}

LogSink set_log_sink(LogSink sink) {
  LogState& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  LogSink old = std::move(st.sink);
  st.sink = std::move(sink);
  return old;
}

}  // namespace loom
