// Failures the conformance harness reports outside a case (tests that use
// the harness directly, like test_blas) become gtest failures at their line.
#include <gtest/gtest.h>

#include "conformance/check.hpp"

namespace {

const bool kHooked = [] {
  loom::conformance::set_failure_hook([](const loom::conformance::Failure& f) {
    ADD_FAILURE_AT(f.file.empty() ? "(conformance)" : f.file.c_str(), f.line) << f.message;
  });
  return true;
}();

}  // namespace
