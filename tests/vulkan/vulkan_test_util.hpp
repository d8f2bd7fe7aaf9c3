// Helpers of the Vulkan plugin tests: a registry over the build's plugin
// folder, a small graph (matmul, softmax, rms_norm, silu) run on a device
// and read back, and the loom binary run as a child process.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "loom/registry/registry.hpp"
#include "registry/registry_test_util.hpp"

namespace loom::vktest {

// A registry of the plugins in LOOM_TEST_PLUGIN_DIR (environment filters
// ignored; LOOM_VULKAN_* variables still reach the plugin).
std::unique_ptr<registry::Registry> load_registry();
// "\n  <path>: <fate> at <stage> <reason>" per candidate.
std::string report(const registry::Registry& reg);
// The candidate record of plugin `name`, or nullptr.
const registry::Candidate* candidate(const registry::Registry& reg, const std::string& name);

// Runs a fixed small graph (seeded inputs) on `dev`: out = silu(rms_norm(
// softmax(A x B))) with A q8_0 [64, 24] and B f32 [64, 5]. *out gets the
// result; the status says why it could not run.
Status run_small_graph(registry::Device* dev, std::vector<float>* out);

// stories260K.gguf in $LOOM_MODELS_DIR, else in ../shared/models.
std::string model_path();

struct ProcResult {
  int exit_code = -1;
  std::string out;
};
// `loom <args>` with stdout only (stderr dropped unless merge_stderr); env
// holds extra NAME=value assignments.
ProcResult run_loom(const std::string& args, bool merge_stderr = false,
                    const std::string& env = "");

// An environment variable set (or, std::nullopt, unset) for a scope.
using test::ScopedEnv;

// A random product on dev: A of type t [k, m] (random weight blocks, or
// uniform [-1, 1) rounded to t), B f32 [k, n, 2] uniform [-2, 2), out = A x B
// (A broadcast over dim 2). *a gets A decoded in double (row i at i * k),
// *b B's values (column (j, i2) at (i2 * n + j) * k), *out the result
// (column (j, i2) at (i2 * n + j) * m).
Status run_random_product(registry::Device* dev, loom_type_t t, int64_t k, int64_t m, int64_t n, uint32_t seed,
                          std::vector<double>* a, std::vector<float>* b, std::vector<float>* out);

// How many of got[i] are further than tol[i] from ref[i].
int mismatches(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& tol);

// A test run once per value of LOOM_VULKAN_DISABLE (the parameter, e.g.
// "rows,int8"): the variable is set before the registry loads the plugin
// and put back after; dev_ is vulkan0 (the test skips without one).
class DisabledFeaturesTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override;
  void TearDown() override;
  bool disabled(const std::string& what) const { return std::string(GetParam()).find(what) != std::string::npos; }

  std::unique_ptr<registry::Registry> reg_;
  registry::Device* dev_ = nullptr;

 private:
  bool had_ = false;
  std::string old_;
};

}  // namespace loom::vktest
