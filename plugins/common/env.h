// LOOM_* settings: one parser for host and plugins, so a value means the same
// everywhere, and the plugin-side readers that warn (through the host's log)
// when a value does not parse instead of ignoring it. Thread-safe (getenv).
#pragma once

#include <cstdint>
#include <string>

namespace loom::common {

// "1"/"0", "on"/"off", "true"/"false", "yes"/"no" -> *out; false otherwise.
bool parse_flag(const char* text, bool* out);
// A whole decimal number in [lo, hi] -> *out; false otherwise (text, a
// trailing unit, out of range).
bool parse_int(const char* text, int64_t lo, int64_t hi, int64_t* out);

// For plugins: unset or empty gives fallback; a value that does not parse
// logs one warning naming the variable, the value, what was expected and the
// fallback used.
bool plugin_env_flag(const char* name, bool fallback);
int64_t plugin_env_int(const char* name, int64_t lo, int64_t hi, int64_t fallback);

// The loom cache folder: LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom, else
// $HOME/.cache/loom (relative values are ignored); "" under secure
// execution (getauxval(AT_SECURE): a setuid/setgid process must not write
// where its caller points) or when none is set. The registry's probe cache
// (registry/probe_cache.cpp) follows the same rule. Not created here.
std::string loom_cache_dir();

}  // namespace loom::common
