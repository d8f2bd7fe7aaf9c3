// `loom conformance [--plugin FILE | --device NAME] [--ops LIST] [--json]
// [--case-timeout S] [--no-isolate]`: the conformance suite (conformance/,
// the same cases test_ops runs) on one plugin file's devices or one device,
// each case family in its own child process unless --no-isolate
// (conformance_isolation.cpp). Prints a table per device (op, types, graphs
// claimed, passed, worst error as a fraction of the tolerance), the ABI
// checks, the cases lost with a child and every failure, and a summary
// (conformance_report.cpp). Exit 0 only when every case the device claimed
// passed; an unknown device, a file that is not there or does not load is an
// error (1), never a silent skip; bad arguments 2.
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/op_info.h"
#include "conformance_cli/conformance_cli.hpp"

namespace loom::cli {
namespace {

namespace conf = loom::conformance;

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

std::string parse(const std::vector<std::string>& args, ConformanceArgs* a) {
  ParsedOptions p;
  if (std::string e = parse_command(kConformance, args, &a->common, &p); !e.empty()) return e;
  a->plugin = p.text("--plugin");
  a->device = p.text("--device");
  if (p.has("--ops")) {
    a->ops_text = p.text("--ops");
    if (std::string e = parse_ops(a->ops_text, &a->ops); !e.empty()) return e;
  }
  a->isolate = !p.has("--no-isolate");
  a->case_timeout_s = p.number("--case-timeout", a->case_timeout_s);
  // The hidden child mode (conformance_child.cpp): given by the parent only.
  a->child_family = p.text("--child-family");
  a->child_fd = static_cast<int>(p.integer("--child-fd", a->child_fd));
  a->child_from = static_cast<size_t>(p.integer("--child-from", static_cast<int64_t>(a->child_from)));
  if (a->plugin.empty() && a->device.empty()) {
    return "name what to test: --plugin FILE (a libloom-<name>.so) or --device NAME ('loom devices' lists them)";
  }
  if ((a->child_fd >= 0) != !a->child_family.empty()) return "--child-fd and --child-family go together";
  return "";
}

std::string candidate_line(const registry::Candidate& c) {
  std::string s = c.path + ": " + registry::fate_name(c.fate);
  if (!c.reason.empty()) s += ": " + c.reason;
  return s;
}

}  // namespace

const registry::Candidate* candidate_of(const registry::Registry& reg, const registry::Device* dev) {
  for (const registry::Candidate& c : reg.candidates()) {
    if (c.fate == registry::Fate::kReady && c.plugin == dev->info().plugin) return &c;
  }
  return nullptr;
}

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

int cmd_conformance(std::vector<std::string> args) {
  ConformanceArgs a;
  if (std::string err = parse(args, &a); !err.empty()) {
    std::fprintf(stderr, "conformance: %s (try 'loom conformance --help')\n", err.c_str());
    return 2;
  }
  // Small shapes still take a CPU-like device's threaded paths (children
  // inherit it).
  setenv("LOOM_CPU_PARALLEL_MIN_WORK", "0", 0);
  if (a.child_fd >= 0) conformance_child(a);
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
    DeviceRun run;
    if (a.isolate) {
      run = run_isolated(a, dev->name(), opt);
    } else {
      run.suite = conf::run_suite(dev, opt);
    }
    ok = ok && run.suite.ok();
    if (a.common.json) {
      out["devices"].push_back(report_json(dev, opt.candidate, run));
    } else {
      print_report(dev, opt.candidate, run);
    }
  }
  if (a.common.json) {
    out["ok"] = ok;
    put_json(out);
  }
  return ok ? 0 : 1;
}

}  // namespace loom::cli
