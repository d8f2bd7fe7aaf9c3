#include "conformance/check.hpp"

#include <cstdio>

namespace loom::conformance {
namespace {

thread_local Sink* tl_sink = nullptr;

std::function<void(const Failure&)>& hook() {
  static std::function<void(const Failure&)> h;
  return h;
}

std::string with_trace(std::string message) {
  for (auto it = trace_stack().rbegin(); it != trace_stack().rend(); ++it) message += "\n  in: " + *it;
  return message;
}

}  // namespace

Sink* current_sink() { return tl_sink; }
void set_current_sink(Sink* s) { tl_sink = s; }
void set_failure_hook(std::function<void(const Failure&)> h) { hook() = std::move(h); }

std::vector<std::string>& trace_stack() {
  thread_local std::vector<std::string> stack;
  return stack;
}

void report_failure(Failure f) {
  f.message = with_trace(std::move(f.message));
  if (tl_sink != nullptr) {
    tl_sink->fail(std::move(f));
  } else if (hook()) {
    hook()(f);
  } else {
    std::fprintf(stderr, "%s:%d: failure: %s\n", f.file.c_str(), f.line, f.message.c_str());
  }
}

void report_skip(std::string why) {
  if (tl_sink != nullptr) {
    tl_sink->skip(std::move(why));
  } else {
    report_failure(Failure{"", 0, "skipped outside a case: " + why});
  }
}

bool current_run_void() { return tl_sink != nullptr && tl_sink->run_void(); }

void note_error_ratio(double ratio) {
  if (tl_sink != nullptr) tl_sink->note_error_ratio(ratio);
}

FailureBuilder::~FailureBuilder() {
  std::string extra = extra_.str();
  report_failure(Failure{file_, line_, extra.empty() ? what_ : what_ + ": " + extra});
}

void FailureReturn::operator=(const Message& m) const {
  std::string extra = m.str();
  report_failure(Failure{file_, line_, extra.empty() ? what_ : what_ + ": " + extra});
}

void SkipReturn::operator=(const Message& m) const { report_skip(m.str()); }

}  // namespace loom::conformance
