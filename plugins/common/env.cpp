#include "common/env.h"

#include <sys/auxv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/glue.h"

namespace loom::common {

bool parse_flag(const char* v, bool* out) {
  for (const char* on : {"1", "on", "true", "yes"}) {
    if (std::strcmp(v, on) == 0) return *out = true, true;
  }
  for (const char* off : {"0", "off", "false", "no"}) {
    if (std::strcmp(v, off) == 0) return *out = false, true;
  }
  return false;
}

bool parse_int(const char* v, int64_t lo, int64_t hi, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi) return false;
  *out = n;
  return true;
}

bool plugin_env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  bool out = fallback;
  if (v == nullptr || *v == '\0' || parse_flag(v, &out)) return out;
  plugin_log(LOOM_LOG_LEVEL_WARN, "env",
             std::string(name) + "='" + v + "' is not 1 or 0; using " + (fallback ? "1" : "0"));
  return fallback;
}

int64_t plugin_env_int(const char* name, int64_t lo, int64_t hi, int64_t fallback) {
  const char* v = std::getenv(name);
  int64_t out = fallback;
  if (v == nullptr || *v == '\0' || parse_int(v, lo, hi, &out)) return out;
  plugin_log(LOOM_LOG_LEVEL_WARN, "env",
             std::string(name) + "='" + v + "' is not a whole number in [" + std::to_string(lo) + ", " +
                 std::to_string(hi) + "]; using " + std::to_string(fallback));
  return fallback;
}

std::string loom_cache_dir() {
  if (getauxval(AT_SECURE) != 0) return std::string();
  auto absolute = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && v[0] == '/' ? std::string(v) : std::string();
  };
  if (std::string d = absolute("LOOM_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = absolute("XDG_CACHE_HOME"); !d.empty()) return d + "/loom";
  if (std::string d = absolute("HOME"); !d.empty()) return d + "/.cache/loom";
  return std::string();
}

}  // namespace loom::common
