// test_ops: every case of the conformance suite (conformance/) as one gtest
// test "Suite.Name", run on the device under test (test_device.hpp). The
// cases are the ones `loom conformance` runs; this file only adapts them.
// On the cpu plugin (the reference) every graph must be claimed; another
// device's declined graphs make a case "not claimed" (skipped with the
// reason) when it claims none of them.
#include <gtest/gtest.h>

#include <cstdlib>

#include "conformance/suite.hpp"
#include "test_device.hpp"

namespace loom::optest {
namespace {

using conformance::CaseInfo;
using conformance::CaseResult;
using conformance::Outcome;

bool env_is_1(const char* name) {
  const char* e = std::getenv(name);
  return e != nullptr && e[0] == '1';
}

// The vulkan plugin runs every weight type (shaders/quant.glsl) in
// MUL_MAT, GET_ROWS and CPY to float: on a vulkan device these cases fail,
// not skip, when it declines one of their graphs. Other plugins may decline
// them (the scheduler places those nodes elsewhere).
bool must_claim_weight_types(const registry::Device* dev) { return dev->name().rfind("vulkan", 0) == 0; }
bool is_weight_type_case(const CaseInfo& c) {
  const std::string id = c.suite + "." + c.name;
  return id == "MatMulTest.WeightTypesOfAbi12" || id == "MatMulTest.LongRowsOfWeightTypes" ||
         id == "RowsTest.GetRowsOfWeightTypes" || id == "CopyTest.WeightTypesToFloatAndAsBlocks";
}

class CaseTest : public ::testing::Test {
 public:
  explicit CaseTest(const CaseInfo* info) : info_(info) {}

  void TestBody() override {
    registry::Device* dev = test_device();
    if (dev == nullptr && testing_reference_device() && cpu_plugin_file() != "libloom-cpu.so") {
      // A CPU variant (LOOM_TEST_CPU_PLUGIN) this machine cannot run.
      GTEST_SKIP() << cpu_plugin_file() << " did not load here" << registry_report();
    }
    if (dev == nullptr && !testing_reference_device() && serving_plugin_unavailable(test_device_name())) {
      GTEST_SKIP() << "device '" << test_device_name() << "' (LOOM_TEST_DEVICE): its plugin reports its hardware "
                   << "absent in " << LOOM_TEST_PLUGIN_DIR << registry_report();
    }
    ASSERT_NE(dev, nullptr) << "device '" << test_device_name() << "' (LOOM_TEST_DEVICE) not found in "
                            << LOOM_TEST_PLUGIN_DIR << registry_report();
    conformance::SuiteOptions opt;
    // The cpu variants' int8 path rounds B (their suites set LOOM_TEST_ACT_Q8=1)
    // unless LOOM_CPU_REFERENCE=1 sends every MUL_MAT through the exact loop.
    // A vulkan device's decode kernel for quantized A may round B (its int8
    // GEMV) and its other kernels do not: each result must match one
    // reference, as in `loom conformance` (LOOM_TEST_ACT_Q8=0 forces the
    // exact one). tests/vulkan/vulkan_int8_test.cpp checks which path ran.
    // A cuda device rounds B to 8-bit blocks in its GEMVs and its SGEMM
    // path, and A and B to F16 on its tensor-core path: the same rule.
    const char* act_q8 = std::getenv("LOOM_TEST_ACT_Q8");
    const bool gpu = dev->name().rfind("vulkan", 0) == 0 || dev->name().rfind("cuda", 0) == 0;
    opt.act_q8 = env_is_1("LOOM_TEST_ACT_Q8") && !env_is_1("LOOM_CPU_REFERENCE") ? conformance::ActQ8::kRounded
                 : act_q8 == nullptr && gpu                                       ? conformance::ActQ8::kEither
                                                                                  : conformance::ActQ8::kExact;
    for (const registry::Candidate& c : test_registry()->candidates()) {
      if (c.fate == registry::Fate::kReady && c.plugin == dev->info().plugin) opt.candidate = &c;
    }
    const CaseResult r = conformance::run_case(*info_, dev, opt, nullptr);
    for (const conformance::Failure& f : r.failures) {
      ADD_FAILURE_AT(f.file.empty() ? "(conformance)" : f.file.c_str(), f.line) << f.message;
    }
    if (testing_reference_device()) {
      for (const std::string& u : r.unclaimed) ADD_FAILURE() << "the cpu plugin must claim every graph: " << u;
    } else if (must_claim_weight_types(dev) && is_weight_type_case(*info_)) {
      for (const std::string& u : r.unclaimed) ADD_FAILURE() << dev->name() << " must run the weight types: " << u;
    }
    if (r.outcome == Outcome::kSkipped) GTEST_SKIP() << r.skip_reason;
    if (r.outcome == Outcome::kNotClaimed) {
      GTEST_SKIP() << dev->name() << " claims none of this case's graphs, e.g. " << r.unclaimed.front();
    }
  }

 private:
  const CaseInfo* info_;
};

}  // namespace
}  // namespace loom::optest

// Cases register themselves during static initialisation (in any order
// relative to this file), so they become gtest tests here, in main.
int main(int argc, char** argv) {
  for (const loom::conformance::CaseInfo& info : loom::conformance::all_cases()) {
    const loom::conformance::CaseInfo* p = &info;
    ::testing::RegisterTest(info.suite.c_str(), info.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [p]() -> ::testing::Test* { return new loom::optest::CaseTest(p); });
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
