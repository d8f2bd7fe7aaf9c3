// `loom conformance [--plugin FILE | --device NAME] [--ops LIST] [--json]`:
// the conformance suite (conformance/, the same cases test_ops runs) on one
// plugin file's devices or one device. Prints a table per device (op, types,
// graphs claimed, passed, worst error as a fraction of the tolerance), the
// ABI checks and every failure, and a summary. Exit 0 only when every case
// the device claimed passed; an unknown device, a file that is not there or
// does not load is an error (1), never a silent skip; bad arguments 2.
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "common/op_info.h"
#include "conformance/suite.hpp"
#include "json.hpp"

namespace loom::cli {
namespace {

namespace conf = loom::conformance;

struct ConformanceArgs {
  CommonOptions common;
  std::string plugin;  // --plugin FILE
  std::string device;  // --device NAME
  std::vector<std::string> ops;
};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// "" or the error (exit 2).
std::string parse_ops(const std::string& list, std::vector<std::string>* out) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const std::string name = upper(list.substr(pos, comma - pos));
    pos = comma + 1;
    if (name.empty()) continue;
    bool known = false;
    for (int op = 1; op < LOOM_OP_COUNT; ++op) known = known || name == common::op_name(op);
    if (!known) {
      std::string names;
      for (int op = 1; op < LOOM_OP_COUNT; ++op) {
        if (!common::is_view_op(op)) names += std::string(names.empty() ? "" : ", ") + common::op_name(op);
      }
      return "--ops: unknown op '" + name + "' (ops: " + names + ")";
    }
    out->push_back(name);
  }
  if (out->empty()) return "--ops: empty list";
  return "";
}

std::string parse(std::vector<std::string>& args, ConformanceArgs* a) {
  std::string err;
  if (!take_common_options(args, &a->common, &err)) return err;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    auto next = [&](std::string* v) {
      if (i + 1 >= args.size()) return false;
      *v = args[++i];
      return true;
    };
    std::string v;
    if (s == "--plugin") {
      if (!next(&a->plugin)) return "--plugin needs a plugin file";
    } else if (s == "--device") {
      if (!next(&a->device)) return "--device needs a device name";
    } else if (s == "--ops") {
      if (!next(&v)) return "--ops needs a comma-separated op list";
      if (std::string e = parse_ops(v, &a->ops); !e.empty()) return e;
    } else {
      return "unknown argument '" + s + "'";
    }
  }
  if (a->plugin.empty() && a->device.empty()) {
    return "name what to test: --plugin FILE (a libloom-<name>.so) or --device NAME ('loom devices' lists them)";
  }
  return "";
}

std::string candidate_line(const registry::Candidate& c) {
  std::string s = c.path + ": " + registry::fate_name(c.fate);
  if (!c.reason.empty()) s += ": " + c.reason;
  return s;
}

// The record of dev's plugin file (ready), nullptr when none.
const registry::Candidate* candidate_of(const registry::Registry& reg, const registry::Device* dev) {
  for (const registry::Candidate& c : reg.candidates()) {
    if (c.fate == registry::Fate::kReady && c.plugin == dev->info().plugin) return &c;
  }
  return nullptr;
}

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

void print_text(const registry::Device* dev, const registry::Candidate* cand, const conf::SuiteResult& r) {
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
    if (c.runs > 0) continue;  // op cases are in the table
    std::printf("  %-52s %s%s\n", (c.suite + "." + c.name).c_str(), conf::outcome_name(c.outcome),
                c.outcome == conf::Outcome::kSkipped ? (": " + c.skip_reason).c_str() : "");
  }
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
  std::printf("\nsummary: %s: %d cases: %d passed, %d failed, %d skipped, %d not claimed; %d op/type rows: %d claimed, %d failed -> %s\n",
              dev->name().c_str(), n.passed + n.failed + n.skipped + n.not_claimed, n.passed, n.failed,
              n.skipped, n.not_claimed, n.rows, n.rows_claimed, n.rows_failed, r.ok() ? "PASS" : "FAIL");
  if (n.rows_claimed == 0) std::printf("note: %s claims none of the suite's op graphs\n", dev->name().c_str());
}

Json device_json(const registry::Device* dev, const registry::Candidate* cand, const conf::SuiteResult& r) {
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
    j["cases"].push_back(std::move(jc));
  }
  j["summary"] = {{"passed", n.passed},   {"failed", n.failed},           {"skipped", n.skipped},
                  {"not_claimed", n.not_claimed}, {"rows", n.rows}, {"rows_claimed", n.rows_claimed},
                  {"rows_failed", n.rows_failed}};
  return j;
}

// The devices to test and their registry, or the error (exit 1).
std::string pick_devices(const ConformanceArgs& a, std::unique_ptr<registry::Registry>* reg,
                         std::vector<registry::Device*>* devs) {
  if (!a.plugin.empty()) {
    std::error_code ec;
    const std::string path = std::filesystem::absolute(a.plugin, ec).lexically_normal().string();
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return "--plugin " + a.plugin + ": no such file";
    if (!S_ISREG(st.st_mode)) return "--plugin " + a.plugin + ": not a regular file";
    // Only that file: no search path, no filters from the environment.
    registry::Options o;
    o.paths = {path};
    o.use_env = false;
    o.search_library_dir = false;
    o.search_install_dir = false;
    *reg = registry::Registry::load(o);
    const registry::Candidate* c = nullptr;
    for (const registry::Candidate& k : (*reg)->candidates()) c = &k;
    if (c == nullptr) return "--plugin " + a.plugin + ": not recorded by the registry";
    if (c->fate != registry::Fate::kReady) return "--plugin " + a.plugin + " did not load: " + candidate_line(*c);
    for (registry::Device* d : (*reg)->devices()) {
      if (a.device.empty() || d->name() == a.device) devs->push_back(d);
    }
    if (devs->empty()) {
      std::string names;
      for (registry::Device* d : (*reg)->devices()) names += " " + d->name();
      return a.device.empty() ? "--plugin " + a.plugin + " lists no device"
                              : "--device " + a.device + ": not a device of " + a.plugin + " (it has:" + names + ")";
    }
    return "";
  }
  *reg = load_registry(a.common, a.device);
  registry::Device* d = (*reg)->device(a.device);
  if (d == nullptr) {
    // Every device there is (the first load skipped plugins not serving the name).
    *reg = load_registry(a.common);
    std::string names;
    for (registry::Device* k : (*reg)->devices()) names += " " + k->name();
    std::string why = "--device " + a.device + ": no such device (devices:" + (names.empty() ? " none" : names) + ")";
    for (const registry::Candidate& c : (*reg)->candidates()) {
      if (c.fate != registry::Fate::kReady) why += "\n  " + candidate_line(c);
    }
    return why;
  }
  devs->push_back(d);
  return "";
}

}  // namespace

int cmd_conformance(std::vector<std::string> args) {
  ConformanceArgs a;
  if (std::string err = parse(args, &a); !err.empty()) {
    std::fprintf(stderr, "conformance: %s\n", err.c_str());
    return 2;
  }
  // Small shapes still take a CPU-like device's threaded paths.
  setenv("LOOM_CPU_PARALLEL_MIN_WORK", "0", 0);
  std::unique_ptr<registry::Registry> reg;
  std::vector<registry::Device*> devs;
  if (std::string err = pick_devices(a, &reg, &devs); !err.empty()) {
    std::fprintf(stderr, "conformance: %s\n", err.c_str());
    return 1;
  }
  bool ok = true;
  Json out;
  out["devices"] = Json::array();
  for (registry::Device* dev : devs) {
    conf::SuiteOptions opt;
    opt.only_ops = a.ops;
    opt.candidate = candidate_of(*reg, dev);
    const conf::SuiteResult r = conf::run_suite(dev, opt);
    ok = ok && r.ok();
    if (a.common.json) {
      out["devices"].push_back(device_json(dev, opt.candidate, r));
    } else {
      print_text(dev, opt.candidate, r);
    }
  }
  if (a.common.json) {
    out["ok"] = ok;
    put_json(out);
  }
  return ok ? 0 : 1;
}

}  // namespace loom::cli
