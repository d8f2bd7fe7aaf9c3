// Helpers for the BLAS plugin tests (test_blas): a registry loaded once from
// LOOM_TEST_PLUGIN_DIR holding both the cpu and blas devices, and a fixture
// on top of the op tests' OpTest that runs the same graph on both devices.
#pragma once

#include <string>
#include <vector>

#include "loom/registry/registry.hpp"
#include <gtest/gtest.h>

#include "conformance/harness.hpp"
#include "conformance/check.hpp"

namespace loom::blastest {

namespace optest = conformance;

using optest::Layout;
using optest::Operand;
using optest::Shape;

// The test registry (never torn down); devices by name, nullptr if absent.
registry::Registry* test_registry();
registry::Device* device(const char* name);
// Why plugins did not load, for skip/failure messages.
std::string registry_report();

// dev_ is the blas device; run_on(cpu_, ...) switches device for one run.
// Skips the test when the blas device did not load.
class BlasTest : public ::testing::Test, public conformance::OpTest {
 protected:
  void SetUp() override;
  // run(outputs) on `dev` (rebuilds the executor); dev_ is restored.
  Status run_on(registry::Device* dev, const std::vector<Tensor*>& outputs);

  registry::Device* cpu_ = nullptr;
  registry::Device* blas_ = nullptr;
};

}  // namespace loom::blastest
