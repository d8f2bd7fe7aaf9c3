// Helpers shared by the runtime tests.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <stdexcept>
#include <string>

#include "loom/runtime/status.hpp"

namespace loom::test {

// The value of a StatusOr, or throw (gtest reports the status as a failure).
template <typename T>
T must(StatusOr<T> r) {
  if (!r.ok()) throw std::runtime_error(r.status().to_string());
  return std::move(r).value();
}

// A failure whose message contains every needle.
inline ::testing::AssertionResult fails_with(const Status& st, std::initializer_list<const char*> needles) {
  if (st.ok()) return ::testing::AssertionFailure() << "expected an error, got OK";
  for (const char* n : needles) {
    if (st.message().find(n) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks '" << n << "': " << st.to_string();
    }
  }
  return ::testing::AssertionSuccess();
}
template <typename T>
::testing::AssertionResult fails_with(const StatusOr<T>& r, std::initializer_list<const char*> needles) {
  return fails_with(r.status(), needles);
}

}  // namespace loom::test
