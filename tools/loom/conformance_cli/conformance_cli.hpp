// The pieces of `loom conformance` (cmd_conformance.cpp) shared between its
// files: the arguments, the report (conformance_report.cpp), the records a
// child sends its parent (conformance_wire.cpp), the child's side
// (conformance_child.cpp) and the parent's (conformance_isolation.cpp).
//
// Isolation: by default each case family (the suite name of a case:
// "MatMulTest", "Abi") runs in its own child process, the loom binary
// itself started again with the hidden options below. A case that crashes
// the process or hangs costs that case only: the child streams a record per
// case, and when it dies, the case it was in fails with the signal, exit
// status or timeout, and the family's remaining cases go on in a fresh
// child. A device context lost to a sticky error costs its family only.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "conformance/suite.hpp"
#include "json.hpp"

namespace loom::cli {

struct ConformanceArgs {
  CommonOptions common;
  std::string plugin;    // --plugin FILE
  std::string device;    // --device NAME
  std::string ops_text;  // --ops LIST as given (passed on to children)
  std::vector<std::string> ops;
  bool isolate = true;          // --no-isolate: every case in this process
  double case_timeout_s = 600;  // --case-timeout S
  // The hidden child mode (set by the parent only): write records to
  // child_fd, run the cases of child_family from its child_from-th on.
  int child_fd = -1;
  std::string child_family;
  size_t child_from = 0;
};

// A case that did not report because its child process died, hung or never
// started it: the family, the case ("(child process)" when the child died
// after its last case, in the plugin's shutdown), and why.
struct LostCase {
  std::string family, name;
  std::string reason;     // "crashed with SIGSEGV", "gave no answer in 600 s (killed)", ...
  std::string signal;     // "SIGSEGV", or "" when no signal killed it
  int exit_status = -1;   // the exit status, or -1 when it did not exit
  bool timed_out = false;
};

// One device's results: the suite's (lost cases are failed cases there too)
// and, when isolated, what was lost with a child.
struct DeviceRun {
  conformance::SuiteResult suite;
  std::vector<LostCase> lost;
  bool isolated = false;
  double case_timeout_s = 0;
};

// The cases that run, grouped by family in registration order.
struct Family {
  std::string name;
  std::vector<const conformance::CaseInfo*> cases;
};
std::vector<Family> case_families(const conformance::SuiteOptions& opt);

// ------------------------------------------------------------ report
void print_report(const registry::Device* dev, const registry::Candidate* cand, const DeviceRun& run);
Json report_json(const registry::Device* dev, const registry::Candidate* cand, const DeviceRun& run);

// ------------------------------------------------------------ wire
// One record per line, child to parent: {"begin": "Suite.Name"} before a
// case, {"case": ..., "rows": [...]} after it (rows: that case's share of
// the table), {"error": "..."} when the child cannot start, {"done": true}
// at the end.
std::string begin_record(const conformance::CaseInfo& info);
std::string case_record(const conformance::CaseResult& c,
                        const std::map<std::pair<std::string, std::string>, conformance::Row>& rows);
std::string error_record(const std::string& message);
std::string done_record();

struct WireRecord {
  enum class Kind { kBegin, kCase, kError, kDone, kBad } kind = Kind::kBad;
  std::string text;  // kBegin: "Suite.Name"; kError: the message; kBad: why
  conformance::CaseResult result;
  std::vector<conformance::Row> rows;
};
WireRecord parse_record(const std::string& line);
// Adds a case's rows to a table (graphs, claimed, passed summed; worst max).
void merge_rows(const std::vector<conformance::Row>& rows,
                std::map<std::pair<std::string, std::string>, conformance::Row>* into);

// ------------------------------------------------------------ processes
// The devices to test and their registry, or the error (exit 1). The child
// calls it too, so it loads the plugin exactly as the parent did.
std::string pick_devices(const ConformanceArgs& a, std::unique_ptr<registry::Registry>* reg,
                         std::vector<registry::Device*>* devs);
// The record of dev's plugin file (ready), nullptr when none.
const registry::Candidate* candidate_of(const registry::Registry& reg, const registry::Device* dev);

// The child's side (a.child_fd >= 0): load, run the family's cases from
// a.child_from on, one record each; exits the process.
[[noreturn]] void conformance_child(const ConformanceArgs& a);

// The parent's side: every family of the suite on device `device` (a name
// pick_devices finds again with a.plugin), each in its own child.
DeviceRun run_isolated(const ConformanceArgs& a, const std::string& device, const conformance::SuiteOptions& opt);

}  // namespace loom::cli
