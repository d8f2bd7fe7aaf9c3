// `loom conformance`'s report of one device: the table, the ABI and device
// checks, the cases lost with their child process, the failures and the
// summary as text, or the same as one JSON object (--json).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "conformance_cli/conformance_cli.hpp"

namespace loom::cli {
namespace {

namespace conf = loom::conformance;

std::string ratio_text(double r) {
  if (std::isinf(r)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", r);
  return buf;
}

struct Counts {
  int passed = 0, failed = 0, skipped = 0, not_claimed = 0;
  int rows = 0, rows_claimed = 0, rows_failed = 0;
};

Counts count(const conf::SuiteResult& r) {
  Counts c;
  for (const conf::CaseResult& k : r.cases) {
    switch (k.outcome) {
      case conf::Outcome::kPassed: ++c.passed; break;
      case conf::Outcome::kFailed: ++c.failed; break;
      case conf::Outcome::kSkipped: ++c.skipped; break;
      default: ++c.not_claimed; break;
    }
  }
  for (const auto& kv : r.rows) {
    ++c.rows;
    if (kv.second.claimed > 0) ++c.rows_claimed;
    if (kv.second.passed != kv.second.claimed) ++c.rows_failed;
  }
  return c;
}

Json isolation_json(const DeviceRun& run) {
  Json j;
  j["mode"] = run.isolated ? "process per case family" : "in process";
  if (run.isolated) j["case_timeout_s"] = run.case_timeout_s;
  j["lost"] = Json::array();
  for (const LostCase& l : run.lost) {
    Json jl;
    jl["case"] = l.family + "." + l.name;
    jl["reason"] = l.reason;
    jl["signal"] = l.signal.empty() ? Json(nullptr) : Json(l.signal);
    jl["exit_status"] = l.exit_status >= 0 ? Json(l.exit_status) : Json(nullptr);
    jl["timed_out"] = l.timed_out;
    j["lost"].push_back(std::move(jl));
  }
  return j;
}

bool is_lost(const DeviceRun& run, const conf::CaseResult& c) {
  for (const LostCase& l : run.lost) {
    if (l.family == c.suite && l.name == c.name) return true;
  }
  return false;
}

// The cases lost with their child process, one line each.
void print_lost(const DeviceRun& run) {
  if (run.lost.empty()) return;
  std::printf("\nlost with their child process (each case family runs in its own; --case-timeout %s s):\n",
              ratio_text(run.case_timeout_s).c_str());
  for (const LostCase& l : run.lost) {
    std::printf("  %-52s %s\n", (l.family + "." + l.name).c_str(), l.reason.c_str());
  }
}

}  // namespace

void print_report(const registry::Device* dev, const registry::Candidate* cand, const DeviceRun& run) {
  const conf::SuiteResult& r = run.suite;
  std::printf("loom conformance: device %s (plugin %s", dev->name().c_str(), dev->info().plugin.c_str());
  if (cand != nullptr) {
    std::printf(", %s, ABI %u.%u", cand->path.c_str(), LOOM_ABI_MAJOR(cand->abi_version),
                LOOM_ABI_MINOR(cand->abi_version));
  }
  std::printf(")\n\n");
  std::printf("| %-12s | %-28s | %-9s | %-9s | %-13s |\n", "op", "types", "claimed", "passed", "worst err/tol");
  std::printf("|--------------|------------------------------|-----------|-----------|---------------|\n");
  // Rows with a claimed graph; the rest summarised per op below the table.
  std::map<std::string, int> unclaimed;
  for (const auto& kv : r.rows) {
    const conf::Row& row = kv.second;
    if (row.claimed == 0) {
      ++unclaimed[row.op];
      continue;
    }
    const std::string claimed = std::to_string(row.claimed) + "/" + std::to_string(row.graphs);
    const std::string passed = row.claimed == 0 ? "-" : std::to_string(row.passed) + "/" + std::to_string(row.claimed);
    const std::string worst = row.claimed == 0 ? "-" : ratio_text(row.worst);
    std::printf("| %-12s | %-28s | %-9s | %-9s | %-13s |%s\n", row.op.c_str(), row.types.c_str(), claimed.c_str(),
                passed.c_str(), worst.c_str(), row.passed != row.claimed ? "  FAILED" : "");
  }
  if (!unclaimed.empty()) {
    std::string line;
    for (const auto& kv : unclaimed) line += (line.empty() ? "" : ", ") + kv.first + " (" + std::to_string(kv.second) + ")";
    std::printf("\nnot claimed (op: type combinations): %s\n", line.c_str());
  }
  std::printf("\nABI and device checks:\n");
  for (const conf::CaseResult& c : r.cases) {
    if (c.runs > 0 || is_lost(run, c)) continue;  // op cases are in the table, lost ones below
    std::printf("  %-52s %s%s\n", (c.suite + "." + c.name).c_str(), conf::outcome_name(c.outcome),
                c.outcome == conf::Outcome::kSkipped ? (": " + c.skip_reason).c_str() : "");
  }
  print_lost(run);
  bool header = false;
  for (const conf::CaseResult& c : r.cases) {
    if (c.outcome != conf::Outcome::kFailed) continue;
    if (!header) std::printf("\nfailures:\n");
    header = true;
    std::printf("  %s.%s:\n", c.suite.c_str(), c.name.c_str());
    size_t shown = 0;
    for (const conf::Failure& f : c.failures) {
      if (shown++ == 5) {
        std::printf("    ... %zu more\n", c.failures.size() - 5);
        break;
      }
      std::string where = f.file.empty() ? "" : std::filesystem::path(f.file).filename().string() + ":" + std::to_string(f.line) + ": ";
      // The first lines of each message: the count and a few elements.
      std::string msg = f.message;
      size_t cut = 0;
      for (int lines = 0; lines < 4 && cut != std::string::npos; ++lines) cut = msg.find('\n', cut + 1);
      if (cut != std::string::npos) msg = msg.substr(0, cut) + "\n      ...";
      for (size_t p = msg.find('\n'); p != std::string::npos; p = msg.find('\n', p + 1)) msg.insert(p + 1, "    ");
      std::printf("    %s%s\n", where.c_str(), msg.c_str());
    }
  }
  const Counts n = count(r);
  const std::string lost = run.lost.empty() ? "" : " (" + std::to_string(run.lost.size()) + " lost with their child process)";
  std::printf("\nsummary: %s: %d cases: %d passed, %d failed%s, %d skipped, %d not claimed; %d op/type rows: %d claimed, %d failed -> %s\n",
              dev->name().c_str(), n.passed + n.failed + n.skipped + n.not_claimed, n.passed, n.failed, lost.c_str(),
              n.skipped, n.not_claimed, n.rows, n.rows_claimed, n.rows_failed, r.ok() ? "PASS" : "FAIL");
  if (n.rows_claimed == 0) std::printf("note: %s claims none of the suite's op graphs\n", dev->name().c_str());
}

Json report_json(const registry::Device* dev, const registry::Candidate* cand, const DeviceRun& run) {
  const conf::SuiteResult& r = run.suite;
  const Counts n = count(r);
  Json j;
  j["device"] = dev->name();
  j["plugin"] = dev->info().plugin;
  if (cand != nullptr) {
    j["file"] = cand->path;
    j["abi"] = std::to_string(LOOM_ABI_MAJOR(cand->abi_version)) + "." + std::to_string(LOOM_ABI_MINOR(cand->abi_version));
  }
  j["ok"] = r.ok();
  j["rows"] = Json::array();
  for (const auto& kv : r.rows) {
    const conf::Row& row = kv.second;
    Json jr;
    jr["op"] = row.op;
    jr["types"] = row.types;
    jr["graphs"] = row.graphs;
    jr["claimed"] = row.claimed;
    jr["passed"] = row.passed;
    jr["worst_err_over_tol"] = row.claimed == 0 || std::isinf(row.worst) ? Json(nullptr) : Json(row.worst);
    j["rows"].push_back(std::move(jr));
  }
  j["cases"] = Json::array();
  for (const conf::CaseResult& c : r.cases) {
    Json jc;
    jc["case"] = c.suite + "." + c.name;
    jc["outcome"] = conf::outcome_name(c.outcome);
    jc["graphs"] = c.runs;
    jc["claimed"] = c.claimed_runs;
    if (!c.skip_reason.empty()) jc["skip_reason"] = c.skip_reason;
    jc["failures"] = Json::array();
    for (const conf::Failure& f : c.failures) jc["failures"].push_back(f.message);
    if (is_lost(run, c)) jc["lost"] = true;
    j["cases"].push_back(std::move(jc));
  }
  j["isolation"] = isolation_json(run);
  j["summary"] = {{"passed", n.passed},   {"failed", n.failed},           {"skipped", n.skipped},
                  {"not_claimed", n.not_claimed}, {"rows", n.rows}, {"rows_claimed", n.rows_claimed},
                  {"rows_failed", n.rows_failed}, {"lost", run.lost.size()}};
  return j;
}

}  // namespace loom::cli
