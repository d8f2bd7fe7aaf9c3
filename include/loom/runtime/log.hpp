// Logging: one facility with levels and categories, filtered by LOOM_LOG,
// e.g. LOOM_LOG="registry:debug,*:warn" (first matching rule wins; the
// default is "*:warn"). Thread-safe. Messages go to stderr unless a sink is
// set (tests capture them).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace loom {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

const char* log_level_name(LogLevel level);

// Whether a message of this level and category passes the current filter.
bool log_enabled(LogLevel level, std::string_view category);
void log(LogLevel level, std::string_view category, std::string_view message);

// Replace the filter (same syntax as LOOM_LOG). Returns false and leaves the
// filter unchanged when the spec does not parse.
bool set_log_filter(std::string_view spec);

// Redirect output; an empty function restores stderr. Returns the previous sink.
using LogSink = std::function<void(LogLevel, std::string_view category, std::string_view message)>;
LogSink set_log_sink(LogSink sink);

}  // namespace loom

#define LOOM_LOG_DEBUG(cat, msg) \
  do { if (::loom::log_enabled(::loom::LogLevel::kDebug, cat)) ::loom::log(::loom::LogLevel::kDebug, cat, msg); } while (0)
#define LOOM_LOG_INFO(cat, msg) \
  do { if (::loom::log_enabled(::loom::LogLevel::kInfo, cat)) ::loom::log(::loom::LogLevel::kInfo, cat, msg); } while (0)
#define LOOM_LOG_WARN(cat, msg) \
  do { if (::loom::log_enabled(::loom::LogLevel::kWarn, cat)) ::loom::log(::loom::LogLevel::kWarn, cat, msg); } while (0)
#define LOOM_LOG_ERROR(cat, msg) \
  do { if (::loom::log_enabled(::loom::LogLevel::kError, cat)) ::loom::log(::loom::LogLevel::kError, cat, msg); } while (0)
