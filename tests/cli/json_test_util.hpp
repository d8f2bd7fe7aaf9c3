// Reading `loom ... --json` output in tests: nlohmann::json.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace loom::test {

// The JSON document in text; a parse error fails the calling test (naming
// the error and the text) and returns null.
inline nlohmann::json parse_json(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON:\n" << text;
  return j.is_discarded() ? nlohmann::json() : j;
}

}  // namespace loom::test
