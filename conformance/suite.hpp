// The conformance suite: every case registered once (LOOM_CASE), run on one
// device by run_suite, which both test_ops (one gtest test per case,
// tests/ops/conformance_test.cpp) and `loom conformance` call.
//
// Results per case (passed, failed, skipped, not claimed) and per table row:
// (op, types) -> graphs seen, graphs the device claimed (supports_op),
// claimed graphs that passed, and the worst error as a fraction of the
// tolerance (1.0 = at the tolerance). Cases of suite "Abi" check the ABI
// itself (abi_cases.cpp) and count under the row "(abi)".
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "conformance/check.hpp"
#include "conformance/harness.hpp"
#include "loom/registry/registry.hpp"

namespace loom::conformance {

// The float types the elementwise cases run over.
inline constexpr loom_type_t kFloatTypes[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16};

struct CaseInfo {
  std::string suite;  // "MatMulTest"
  std::string name;   // "EveryAType"
  std::function<std::unique_ptr<OpTest>()> make;
  std::string file;  // the name of the source file that defines it (__FILE__ without its folder)
};
// Every case linked in: by its source file's name, then in source order
// within the file. Fixed by the sources, not by the order in which the
// linker happened to place their static initializers (a unity build or
// another linker changes that).
const std::vector<CaseInfo>& all_cases();
struct CaseRegistrar {
  CaseRegistrar(const char* file, const char* suite, const char* name,
                std::function<std::unique_ptr<OpTest>()> make);
};

#define LOOM_CASE(Fixture, Name)                                                                 \
  class Fixture##_##Name##_Case : public Fixture {                                               \
   public:                                                                                       \
    void body() override;                                                                        \
  };                                                                                             \
  const ::loom::conformance::CaseRegistrar Fixture##_##Name##_registrar(                         \
      __FILE__, #Fixture, #Name,                                                                 \
      [] { return std::unique_ptr<::loom::conformance::OpTest>(new Fixture##_##Name##_Case); }); \
  void Fixture##_##Name##_Case::body()

enum class Outcome { kPassed, kFailed, kSkipped, kNotClaimed };
const char* outcome_name(Outcome o);

struct CaseResult {
  std::string suite, name;
  Outcome outcome = Outcome::kPassed;
  std::vector<Failure> failures;
  std::string skip_reason;
  int runs = 0;          // graphs the case built
  int claimed_runs = 0;  // of those, the device claimed
  std::vector<std::string> unclaimed;  // what was not claimed, one line per run
};

struct Row {
  std::string op, types;
  int graphs = 0, claimed = 0, passed = 0;
  double worst = 0.0;  // |got - ref| / tol, max over claimed graphs
};

struct SuiteOptions {
  ActQ8 act_q8 = ActQ8::kEither;
  std::vector<std::string> only_ops;  // op names (upper case), empty: all
  const registry::Candidate* candidate = nullptr;  // dev's plugin record (ABI cases)
  // Case filter: run cases whose "Suite.Name" this accepts (null: all).
  std::function<bool(const CaseInfo&)> filter;
};

struct SuiteResult {
  std::vector<CaseResult> cases;
  std::map<std::pair<std::string, std::string>, Row> rows;
  bool ok() const;  // every case passed, skipped or not claimed; no row failed
};

// One case on dev; a thrown exception is a failure of the case.
CaseResult run_case(const CaseInfo& info, registry::Device* dev, const SuiteOptions& opt,
                    std::map<std::pair<std::string, std::string>, Row>* rows);
SuiteResult run_suite(registry::Device* dev, const SuiteOptions& opt);

}  // namespace loom::conformance
