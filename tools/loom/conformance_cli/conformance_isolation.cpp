// `loom conformance`'s parent side: each case family in a child process
// (this binary again, conformance_child.cpp), its records merged into the
// device's results as they arrive, its output passed on to our stderr. A
// child that dies or hangs loses the case it was in (failed, with the
// signal, exit status or timeout); the family's cases after it run in a
// fresh child, so one bad kernel costs one case.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>

#include "conformance_cli/child_process.hpp"
#include "conformance_cli/conformance_cli.hpp"

namespace loom::cli {
namespace {

namespace conf = loom::conformance;
using Clock = ChildProcess::Clock;

constexpr size_t kOutputKeep = 4096;  // tail of a child's output kept for its last words

// What one child did: the cases it reported (merged into the DeviceRun as
// they came), the case it was in when it stopped, and how it ended.
struct Attempt {
  size_t reported = 0;     // cases reported, from the attempt's first on
  bool in_case = false;    // a case began and did not report
  bool done = false;       // the child said it finished
  std::string error;       // its {"error"} record, or why it could not start
  std::string bad_record;  // a line that was not a record
  int status = 0;
  bool timed_out = false;
  bool started = false;
  std::string output_tail;
};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::vector<std::string> child_argv(const ConformanceArgs& a, const std::string& device, const Family& f,
                                    size_t from) {
  std::vector<std::string> v = {"loom", "conformance"};
  if (!a.plugin.empty()) v.insert(v.end(), {"--plugin", a.plugin});
  v.insert(v.end(), {"--device", device});
  if (!a.ops_text.empty()) v.insert(v.end(), {"--ops", a.ops_text});
  for (const std::string& p : a.common.plugin_paths) v.insert(v.end(), {"--plugin-path", p});
  v.insert(v.end(), {"--child-fd", "3", "--child-family", f.name, "--child-from", std::to_string(from)});
  return v;
}

// Handles one complete line from the child.
void take_record(const std::string& line, Attempt* at, DeviceRun* out) {
  WireRecord r = parse_record(line);
  switch (r.kind) {
    case WireRecord::Kind::kBegin:
      at->in_case = true;
      break;
    case WireRecord::Kind::kCase:
      merge_rows(r.rows, &out->suite.rows);
      out->suite.cases.push_back(std::move(r.result));
      ++at->reported;
      at->in_case = false;
      break;
    case WireRecord::Kind::kError:
      at->error = r.text;
      break;
    case WireRecord::Kind::kDone:
      at->done = true;
      break;
    default:
      if (at->bad_record.empty()) at->bad_record = r.text + ": " + line.substr(0, 200);
      break;
  }
}

// Passes the child's output on to our stderr and keeps its tail.
void pass_output(std::string* chunk, Attempt* at) {
  if (chunk->empty()) return;
  std::fwrite(chunk->data(), 1, chunk->size(), stderr);
  std::fflush(stderr);
  at->output_tail += *chunk;
  if (at->output_tail.size() > 2 * kOutputKeep) at->output_tail.erase(0, at->output_tail.size() - kOutputKeep);
  chunk->clear();
}

// One child for family f on `device`, from its from-th case on, until it
// ends or a case (or the start) takes longer than the timeout.
Attempt run_child(const ConformanceArgs& a, const std::string& device, const Family& f, size_t from,
                  DeviceRun* out) {
  Attempt at;
  ChildProcess child;
  const std::string err = child.start("/proc/self/exe", child_argv(a, device, f, from));
  if (!err.empty()) {
    at.error = err;
    return at;
  }
  at.started = true;
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.case_timeout_s));
  auto deadline = Clock::now() + limit;
  std::string results, output;
  while (!child.exited()) {
    child.pump(deadline, &results, &output);
    pass_output(&output, &at);
    for (size_t nl = results.find('\n'); nl != std::string::npos; nl = results.find('\n')) {
      const bool was_in_case = at.in_case;
      const size_t reported = at.reported;
      take_record(results.substr(0, nl), &at, out);
      results.erase(0, nl + 1);
      // Each case, and the start before the first, gets the whole timeout.
      if (at.in_case != was_in_case || at.reported != reported) deadline = Clock::now() + limit;
    }
    if (!child.exited() && Clock::now() >= deadline) {
      child.kill();
      at.timed_out = true;
    }
  }
  at.status = child.status();
  return at;
}

// How the child ended, for the messages: "crashed with SIGSEGV", ...
std::string end_text(const Attempt& at, double timeout_s) {
  if (at.timed_out) return "gave no answer in " + seconds_text(timeout_s) + " s (killed)";
  if (WIFSIGNALED(at.status)) return "crashed with " + signal_name(WTERMSIG(at.status));
  if (WIFEXITED(at.status) && WEXITSTATUS(at.status) != 0) return "exited with status " + std::to_string(WEXITSTATUS(at.status));
  return "exited with status 0 without finishing";
}

// Last non-empty line of the child's output.
std::string last_line(const std::string& s) {
  const size_t end = s.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "";
  size_t begin = s.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return s.substr(begin, std::min<size_t>(end - begin + 1, 300));
}

LostCase lost_case(const Family& f, const Attempt& at, double timeout_s) {
  LostCase l;
  l.family = f.name;
  l.timed_out = at.timed_out;
  if (!at.started) {
    l.reason = "could not be started (" + at.error + ")";
    return l;
  }
  l.reason = end_text(at, timeout_s);
  if (!at.timed_out && WIFSIGNALED(at.status)) l.signal = signal_name(WTERMSIG(at.status));
  if (!at.timed_out && WIFEXITED(at.status)) l.exit_status = WEXITSTATUS(at.status);
  return l;
}

// Case `name` of f failed with the loss; also recorded in out->lost.
void lose(LostCase l, const std::string& name, const std::string& message, const Attempt& at, DeviceRun* out) {
  conf::CaseResult c;
  c.suite = l.family;
  c.name = l.name = name;
  c.outcome = conf::Outcome::kFailed;
  std::string m = "[conformance.child] " + message;
  if (!at.bad_record.empty()) m += "; it wrote a line that is not a record (" + at.bad_record + ")";
  const std::string words = last_line(at.output_tail);
  if (!words.empty()) m += "; its last words: " + words;
  c.failures.push_back(conf::Failure{"", 0, m});
  out->suite.cases.push_back(std::move(c));
  out->lost.push_back(std::move(l));
}

// The family's cases, each child running them in order from the first the
// previous child did not finish: a case that kills its child is lost, the
// ones after it go on in a new child.
void run_family(const ConformanceArgs& a, const std::string& device, const Family& f, DeviceRun* out) {
  size_t from = 0;
  while (from < f.cases.size()) {
    const Attempt at = run_child(a, device, f, from, out);
    from += at.reported;
    if (at.done) return;
    LostCase l = lost_case(f, at, a.case_timeout_s);
    if (at.in_case && from < f.cases.size()) {
      lose(l, f.cases[from]->name,
           "its child process " + l.reason + " in this case" +
               (from + 1 < f.cases.size() ? " (the family's later cases ran in a new one)" : ""),
           at, out);
      ++from;
      continue;
    }
    if (at.reported > 0 && from < f.cases.size()) continue;  // it stopped between cases: go on
    const std::string why = at.error.empty() ? "" : ": " + at.error;
    if (from < f.cases.size()) {
      // Not one case started: another child would fare no better.
      if (at.started) l.reason += " before its first case" + why;
      const std::string msg = "not run: the child process for " + f.name + " " + l.reason;
      for (; from < f.cases.size(); ++from) lose(l, f.cases[from]->name, msg, at, out);
      return;
    }
    l.reason += " after its last case (unloading the plugin)" + why;
    lose(l, "(child process)", "the child process for " + f.name + " " + l.reason, at, out);
    return;
  }
}

}  // namespace

std::vector<Family> case_families(const conf::SuiteOptions& opt) {
  std::vector<Family> out;
  for (const conf::CaseInfo& info : conf::all_cases()) {
    if (opt.filter && !opt.filter(info)) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const Family& f) { return f.name == info.suite; });
    if (it == out.end()) it = out.insert(out.end(), Family{info.suite, {}});
    it->cases.push_back(&info);
  }
  return out;
}

DeviceRun run_isolated(const ConformanceArgs& a, const std::string& device, const conf::SuiteOptions& opt) {
  DeviceRun out;
  out.isolated = true;
  out.case_timeout_s = a.case_timeout_s;
  for (const Family& f : case_families(opt)) run_family(a, device, f, &out);
  return out;
}

}  // namespace loom::cli
