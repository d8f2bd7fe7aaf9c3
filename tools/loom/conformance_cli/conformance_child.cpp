// `loom conformance`'s child side (hidden options --child-fd N
// --child-family F --child-from K, given only by the parent,
// conformance_isolation.cpp): load the plugin as the parent did, run the
// family's cases from the K-th on, and write a record before and after each
// (conformance_wire.cpp) so that what finished before a crash is kept.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "conformance_cli/conformance_cli.hpp"

namespace loom::cli {
namespace {

namespace conf = loom::conformance;

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(3);  // the parent is gone: nobody to report to
    off += static_cast<size_t>(n);
  }
}

// Ends the child without static destructors (a plugin's own may crash, and
// the verdict is already written).
[[noreturn]] void leave(int code) {
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace

void conformance_child(const ConformanceArgs& a) {
  // Dies with the parent (interrupted, killed): the child is in its own
  // process group, out of reach of the terminal's ^C.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) leave(3);
  const int fd = a.child_fd;
  std::unique_ptr<registry::Registry> reg;
  std::vector<registry::Device*> devs;
  if (std::string err = pick_devices(a, &reg, &devs); !err.empty()) {
    write_all(fd, error_record(err));
    leave(1);
  }
  if (devs.size() != 1) {
    write_all(fd, error_record("--device " + a.device + " names " + std::to_string(devs.size()) + " devices, not one"));
    leave(1);
  }
  registry::Device* dev = devs.front();
  conf::SuiteOptions opt;
  opt.only_ops = a.ops;
  opt.candidate = candidate_of(*reg, dev);
  const Family* family = nullptr;
  const std::vector<Family> families = case_families(opt);
  for (const Family& f : families) {
    if (f.name == a.child_family) family = &f;
  }
  if (family == nullptr) {
    write_all(fd, error_record("no case family '" + a.child_family + "' in this build"));
    leave(1);
  }
  for (size_t i = a.child_from; i < family->cases.size(); ++i) {
    const conf::CaseInfo& info = *family->cases[i];
    write_all(fd, begin_record(info));
    std::map<std::pair<std::string, std::string>, conf::Row> rows;
    const conf::CaseResult r = conf::run_case(info, dev, opt, &rows);
    write_all(fd, case_record(r, rows));
  }
  // Unload the plugin first: a crash in its shutdown is the family's.
  opt.candidate = nullptr;
  reg.reset();
  write_all(fd, done_record());
  leave(0);
}

}  // namespace loom::cli
