// The checks the conformance cases are written with, and where their
// failures go. A case is written once (conformance/*_cases.cpp) and runs in
// two places: test_ops (GoogleTest, one gtest test per case) and
// `loom conformance` (a table per op and types). So the cases use these
// macros, not gtest's; they read like gtest's:
//   LOOM_EXPECT_EQ(a, b) << "more";   records a failure, goes on
//   LOOM_ASSERT_TRUE(x) << "more";    records a failure, returns from the
//                                     (void) function
//   LOOM_SKIP() << "why";             ends the case as skipped
//   LOOM_TRACE(text);                 adds text to failures in this scope
// A failure goes to the case being run (CaseScope); outside any case (the
// blas tests use the harness directly) to the hook set_failure_hook
// installs (test code forwards it to gtest). Thread-confined: one case per
// thread at a time.
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/runtime/status.hpp"

namespace loom::conformance {

// One recorded failure: where, what, and the trace lines active then.
struct Failure {
  std::string file;
  int line = 0;
  std::string message;
};

// What the checks of one case report into (suite.cpp implements it).
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void fail(Failure f) = 0;
  virtual void skip(std::string why) = 0;
  // A graph is about to run: its compute nodes as table keys ("MUL_MAT",
  // "q4_0 x f32 -> f32"); `unclaimed` lists the nodes the device declined
  // (supports_op false) or the --ops filter left out ("" when it runs).
  // Failures and errors that follow belong to this run, until the next.
  virtual void begin_run(std::vector<std::pair<std::string, std::string>> keys, std::string unclaimed) = 0;
  // Largest |got - ref| / tol of one comparison of the current run.
  virtual void note_error_ratio(double ratio) = 0;
  virtual bool run_void() const = 0;
};

// The sink of the case running on this thread, nullptr outside one.
Sink* current_sink();
void set_current_sink(Sink* s);
// Where failures outside a case go (default: stderr). Set by test code.
void set_failure_hook(std::function<void(const Failure&)> hook);
// A skip outside a case (nothing to end): reported like a failure.
void report_failure(Failure f);
void report_skip(std::string why);
// Whether the last run of the current case was not claimed by the device
// (supports_op said no): checks of that run are void, not failures.
bool current_run_void();
// Forwarded to the current sink; nothing outside a case.
void note_error_ratio(double ratio);

// Lines added by LOOM_TRACE, innermost last.
std::vector<std::string>& trace_stack();
class ScopedTrace {
 public:
  explicit ScopedTrace(std::string text) { trace_stack().push_back(std::move(text)); }
  ~ScopedTrace() { trace_stack().pop_back(); }
  ScopedTrace(const ScopedTrace&) = delete;
  ScopedTrace& operator=(const ScopedTrace&) = delete;
};

// A message being built with <<; reported when the statement ends.
class Message {
 public:
  template <typename T>
  Message& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  std::string str() const { return os_.str(); }

 private:
  std::ostringstream os_;
};

class FailureBuilder {
 public:
  FailureBuilder(const char* file, int line, std::string what) : file_(file), line_(line), what_(std::move(what)) {}
  ~FailureBuilder();
  template <typename T>
  FailureBuilder& operator<<(const T& v) {
    extra_ << v;
    return *this;
  }
  FailureBuilder(const FailureBuilder&) = delete;
  FailureBuilder& operator=(const FailureBuilder&) = delete;

 private:
  const char* file_;
  int line_;
  std::string what_;
  std::ostringstream extra_;
};

// `return FailureReturn(...) = Message() << ...;` records and returns (void).
struct FailureReturn {
  FailureReturn(const char* file, int line, std::string what) : file_(file), line_(line), what_(std::move(what)) {}
  void operator=(const Message& m) const;
  const char* file_;
  int line_;
  std::string what_;
};
struct SkipReturn {
  void operator=(const Message& m) const;
};

// Printing of compared values: streamable ones as they stream, enums by
// value, others as "(unprintable)".
template <typename T, typename = void>
struct Streamable : std::false_type {};
template <typename T>
struct Streamable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};
template <typename T>
std::string show(const T& v) {
  std::ostringstream os;
  if constexpr (std::is_enum_v<T>) {
    os << static_cast<long long>(v);
  } else if constexpr (std::is_same_v<T, unsigned char> || std::is_same_v<T, signed char>) {
    os << static_cast<int>(v);
  } else if constexpr (Streamable<T>::value) {
    os << v;
  } else {
    os << "(unprintable)";
  }
  return os.str();
}
inline std::string show(std::nullptr_t) { return "nullptr"; }
template <typename T>
std::string show(const std::vector<T>& v) {
  return "vector of " + std::to_string(v.size());
}

// "" when the comparison holds, else the description.
template <typename A, typename B, typename Op>
std::string compare(const char* ea, const char* eb, const char* op_text, const A& a, const B& b, Op op) {
  if (op(a, b)) return std::string();
  return std::string("expected ") + ea + " " + op_text + " " + eb + ", got " + show(a) + " vs " + show(b);
}
inline bool cstr_eq(const char* a, const char* b) {
  return (a == nullptr || b == nullptr) ? a == b : std::strcmp(a, b) == 0;
}

}  // namespace loom::conformance

#define LOOM_CONF_CMP_(ea, eb, op_text, a, b, op) \
  ::loom::conformance::compare(ea, eb, op_text, a, b, [](const auto& x, const auto& y) { return op; })

// Comparisons are written with a lambda so that signed/unsigned pairs
// compare as the values they are (gtest's rule) only where the types agree.
// switch (0) case 0: default: keeps a following `else` of the caller's
// `if` from binding to ours (gtest's trick).
#define LOOM_CONF_EXPECT_(text)                                                 \
  switch (0)                                                                    \
  case 0:                                                                       \
  default:                                                                      \
    if (const std::string loom_conf_msg_ = (text); loom_conf_msg_.empty()) {     \
  } else                                                                        \
    ::loom::conformance::FailureBuilder(__FILE__, __LINE__, loom_conf_msg_)
#define LOOM_CONF_ASSERT_(text)                                                 \
  switch (0)                                                                    \
  case 0:                                                                       \
  default:                                                                      \
    if (const std::string loom_conf_msg_ = (text); loom_conf_msg_.empty()) {     \
  } else                                                                        \
    return ::loom::conformance::FailureReturn(__FILE__, __LINE__, loom_conf_msg_) = ::loom::conformance::Message()

#define LOOM_CONF_BOOL_(cond, want) \
  ((static_cast<bool>(cond) == want) ? std::string() : std::string("expected ") + #cond + " to be " + (want ? "true" : "false"))

#define LOOM_EXPECT_TRUE(c) LOOM_CONF_EXPECT_(LOOM_CONF_BOOL_(c, true))
#define LOOM_EXPECT_FALSE(c) LOOM_CONF_EXPECT_(LOOM_CONF_BOOL_(c, false))
#define LOOM_EXPECT_EQ(a, b) LOOM_CONF_EXPECT_(LOOM_CONF_CMP_(#a, #b, "==", a, b, x == y))
#define LOOM_EXPECT_NE(a, b) LOOM_CONF_EXPECT_(LOOM_CONF_CMP_(#a, #b, "!=", a, b, x != y))
#define LOOM_EXPECT_GE(a, b) LOOM_CONF_EXPECT_(LOOM_CONF_CMP_(#a, #b, ">=", a, b, x >= y))
#define LOOM_EXPECT_GT(a, b) LOOM_CONF_EXPECT_(LOOM_CONF_CMP_(#a, #b, ">", a, b, x > y))
#define LOOM_EXPECT_STREQ(a, b) \
  LOOM_CONF_EXPECT_(::loom::conformance::cstr_eq(a, b) ? std::string() : std::string("expected ") + #a + " == " + #b + ", got \"" + ((a) ? (a) : "(null)") + "\" vs \"" + ((b) ? (b) : "(null)") + "\"")
#define LOOM_EXPECT_NEAR(a, b, tol)                                                                        \
  LOOM_CONF_EXPECT_(std::fabs(static_cast<double>(a) - static_cast<double>(b)) <= (tol)                   \
                        ? std::string()                                                                    \
                        : std::string("expected |") + #a + " - " + #b + "| <= " + #tol + ", got " +        \
                              ::loom::conformance::show(a) + " vs " + ::loom::conformance::show(b))
#define LOOM_ASSERT_TRUE(c) LOOM_CONF_ASSERT_(LOOM_CONF_BOOL_(c, true))
#define LOOM_ASSERT_FALSE(c) LOOM_CONF_ASSERT_(LOOM_CONF_BOOL_(c, false))
#define LOOM_ASSERT_EQ(a, b) LOOM_CONF_ASSERT_(LOOM_CONF_CMP_(#a, #b, "==", a, b, x == y))
#define LOOM_ASSERT_NE(a, b) LOOM_CONF_ASSERT_(LOOM_CONF_CMP_(#a, #b, "!=", a, b, x != y))
#define LOOM_ADD_FAILURE() ::loom::conformance::FailureBuilder(__FILE__, __LINE__, "failure")
#define LOOM_SKIP() return ::loom::conformance::SkipReturn() = ::loom::conformance::Message()
#define LOOM_TRACE_CAT2_(a, b) a##b
#define LOOM_TRACE_CAT_(a, b) LOOM_TRACE_CAT2_(a, b)
#define LOOM_TRACE(text) ::loom::conformance::ScopedTrace LOOM_TRACE_CAT_(loom_trace_, __LINE__)(text)

// A status must be OK. A run the device did not claim (current_run_void)
// is no failure: ASSERT returns quietly, EXPECT does nothing.
#define LOOM_EXPECT_OK(expr)                                                                         \
  do {                                                                                               \
    ::loom::Status loom_conf_st_ = (expr);                                                           \
    if (!loom_conf_st_.ok() && !::loom::conformance::current_run_void())                           \
      ::loom::conformance::FailureBuilder(__FILE__, __LINE__, "expected OK from " #expr ", got " + \
                                                                  loom_conf_st_.to_string());        \
  } while (0)
#define LOOM_ASSERT_OK(expr)                                                                               \
  do {                                                                                                     \
    ::loom::Status loom_conf_st_ = (expr);                                                                 \
    if (loom_conf_st_.ok()) break;                                                                         \
    if (::loom::conformance::current_run_void()) return;                                                   \
    return ::loom::conformance::FailureReturn(__FILE__, __LINE__, "expected OK from " #expr ", got " +     \
                                                                      loom_conf_st_.to_string()) =         \
               ::loom::conformance::Message();                                                             \
  } while (0)
