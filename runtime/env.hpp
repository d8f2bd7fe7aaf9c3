// LOOM_* settings read from the environment by the host (runtime, llm,
// tools). A value that does not parse is never silently ignored: it logs one
// warning naming the variable, the value, what was expected and the value
// used instead (category "env"). Thread-safe (getenv only).
#pragma once

#include <cstdint>

namespace loom {

// Unset or empty: fallback. "1"/"0" (also "on"/"off", "true"/"false",
// "yes"/"no"): the flag. Anything else: a warning, then fallback.
bool env_flag(const char* name, bool fallback);

// Unset or empty: fallback. A whole decimal number in [lo, hi]: that number.
// Anything else (text, a trailing unit, out of range): a warning, then fallback.
int64_t env_int(const char* name, int64_t lo, int64_t hi, int64_t fallback);

}  // namespace loom
