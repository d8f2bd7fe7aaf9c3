#include "conformance/suite.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

namespace loom::conformance {
namespace {

std::vector<CaseInfo>& registry_of_cases() {
  static std::vector<CaseInfo> cases;
  return cases;
}

// Collects one case's failures, skip and runs. A failure belongs to the run
// begun last (or to the case when none began); failures of a run the
// device did not claim are void.
class CaseSink : public Sink {
 public:
  struct Run {
    std::vector<std::pair<std::string, std::string>> keys;
    bool claimed = true;
    int failures = 0;
    double worst = 0.0;
  };

  void fail(Failure f) override {
    if (run_void()) return;
    if (!runs_.empty()) ++runs_.back().failures;
    result.failures.push_back(std::move(f));
  }
  void skip(std::string why) override {
    skipped_ = true;
    result.skip_reason = std::move(why);
  }
  void begin_run(std::vector<std::pair<std::string, std::string>> keys, std::string unclaimed) override {
    Run r;
    r.keys = std::move(keys);
    r.claimed = unclaimed.empty();
    if (!r.claimed) result.unclaimed.push_back(std::move(unclaimed));
    runs_.push_back(std::move(r));
  }
  void note_error_ratio(double ratio) override {
    if (!runs_.empty() && runs_.back().claimed) runs_.back().worst = std::max(runs_.back().worst, ratio);
  }
  bool run_void() const override { return !runs_.empty() && !runs_.back().claimed; }

  bool skipped() const { return skipped_; }
  const std::vector<Run>& runs() const { return runs_; }
  CaseResult result;

 private:
  bool skipped_ = false;
  std::vector<Run> runs_;
};

void add_rows(const CaseSink& sink, std::map<std::pair<std::string, std::string>, Row>* rows) {
  for (const CaseSink::Run& r : sink.runs()) {
    // A graph counts once per distinct key (a graph of two SCALEs is one).
    std::vector<std::pair<std::string, std::string>> keys = r.keys;
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (const auto& k : keys) {
      Row& row = (*rows)[k];
      row.op = k.first;
      row.types = k.second;
      ++row.graphs;
      if (!r.claimed) continue;
      ++row.claimed;
      if (r.failures == 0) ++row.passed;
      row.worst = std::max(row.worst, r.worst);
    }
  }
}

}  // namespace

const std::vector<CaseInfo>& all_cases() {
  std::vector<CaseInfo>& cases = registry_of_cases();
  // Every case registers before main(): sorted by the first call, after
  // that left alone. Registration order within a file is source order; a
  // stable sort keeps it.
  auto by_file = [](const CaseInfo& a, const CaseInfo& b) { return a.file < b.file; };
  if (!std::is_sorted(cases.begin(), cases.end(), by_file)) std::stable_sort(cases.begin(), cases.end(), by_file);
  return cases;
}

CaseRegistrar::CaseRegistrar(const char* file, const char* suite, const char* name,
                             std::function<std::unique_ptr<OpTest>()> make) {
  const std::string path(file);
  registry_of_cases().push_back(CaseInfo{suite, name, std::move(make), path.substr(path.find_last_of('/') + 1)});
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPassed: return "passed";
    case Outcome::kFailed: return "FAILED";
    case Outcome::kSkipped: return "skipped";
    default: return "not claimed";
  }
}

CaseResult run_case(const CaseInfo& info, registry::Device* dev, const SuiteOptions& opt,
                    std::map<std::pair<std::string, std::string>, Row>* rows) {
  CaseSink sink;
  sink.result.suite = info.suite;
  sink.result.name = info.name;
  set_current_sink(&sink);
  try {
    std::unique_ptr<OpTest> c = info.make();
    c->dev_ = dev;
    c->act_q8_ = opt.act_q8;
    c->only_ops_ = opt.only_ops;
    c->candidate_ = opt.candidate;
    c->set_up();
    if (!sink.skipped() && sink.result.failures.empty()) c->body();
  } catch (const std::exception& e) {
    sink.fail(Failure{"", 0, std::string("exception: ") + e.what()});
  } catch (...) {
    sink.fail(Failure{"", 0, "unknown exception"});
  }
  set_current_sink(nullptr);
  trace_stack().clear();
  CaseResult r = std::move(sink.result);
  for (const CaseSink::Run& run : sink.runs()) {
    ++r.runs;
    if (run.claimed) ++r.claimed_runs;
  }
  if (!r.failures.empty()) {
    r.outcome = Outcome::kFailed;
  } else if (sink.skipped()) {
    r.outcome = Outcome::kSkipped;
  } else if (r.runs > 0 && r.claimed_runs == 0) {
    r.outcome = Outcome::kNotClaimed;
  }
  if (rows != nullptr) add_rows(sink, rows);
  return r;
}

SuiteResult run_suite(registry::Device* dev, const SuiteOptions& opt) {
  SuiteResult out;
  for (const CaseInfo& info : all_cases()) {
    if (opt.filter && !opt.filter(info)) continue;
    out.cases.push_back(run_case(info, dev, opt, &out.rows));
  }
  return out;
}

bool SuiteResult::ok() const {
  for (const CaseResult& c : cases) {
    if (c.outcome == Outcome::kFailed) return false;
  }
  for (const auto& kv : rows) {
    if (kv.second.passed != kv.second.claimed) return false;
  }
  return true;
}

}  // namespace loom::conformance
