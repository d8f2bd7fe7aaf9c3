// `--json` output of the loom command: nlohmann::ordered_json (keys in the
// order written), printed as one line. Integers stay integers (byte counts
// print every digit); a NaN or infinity prints as null; text that is not
// valid UTF-8 has the bad bytes replaced by U+FFFD instead of failing.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace loom::cli {

using Json = nlohmann::ordered_json;

inline std::string json_text(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// One line on stdout.
inline void put_json(const Json& j) { std::printf("%s\n", json_text(j).c_str()); }

}  // namespace loom::cli
