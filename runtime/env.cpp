#include "runtime/env.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "loom/log.hpp"

namespace loom {

bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  for (const char* on : {"1", "on", "true", "yes"}) {
    if (std::strcmp(v, on) == 0) return true;
  }
  for (const char* off : {"0", "off", "false", "no"}) {
    if (std::strcmp(v, off) == 0) return false;
  }
  LOOM_LOG_WARN("env", std::string(name) + "='" + v + "' is not 1 or 0; using " + (fallback ? "1" : "0"));
  return fallback;
}

int64_t env_int(const char* name, int64_t lo, int64_t hi, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  errno = 0;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (errno == 0 && end != v && *end == '\0' && n >= lo && n <= hi) return n;
  LOOM_LOG_WARN("env", std::string(name) + "='" + v + "' is not a whole number in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]; using " + std::to_string(fallback));
  return fallback;
}

}  // namespace loom
