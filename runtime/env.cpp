#include "runtime/env.hpp"

#include <cstdlib>
#include <string>

#include "common/env.h"
#include "loom/runtime/log.hpp"

namespace loom {

bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  bool out = fallback;
  if (v == nullptr || *v == '\0' || common::parse_flag(v, &out)) return out;
  LOOM_LOG_WARN("env", std::string(name) + "='" + v + "' is not 1 or 0; using " + (fallback ? "1" : "0"));
  return fallback;
}

int64_t env_int(const char* name, int64_t lo, int64_t hi, int64_t fallback) {
  const char* v = std::getenv(name);
  int64_t out = fallback;
  if (v == nullptr || *v == '\0' || common::parse_int(v, lo, hi, &out)) return out;
  LOOM_LOG_WARN("env", std::string(name) + "='" + v + "' is not a whole number in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]; using " + std::to_string(fallback));
  return fallback;
}

}  // namespace loom
