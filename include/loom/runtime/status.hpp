// loom::Status and StatusOr<T>: how failures travel inside loom (C++ side).
// Messages follow the house style: "[operation] what: values on both sides".
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace loom {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kUnavailable = 3,
  kUnimplemented = 4,
  kResourceExhausted = 5,
  kIncompatible = 6,
  kInternal = 7,
  kAborted = 8,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: [op.add] ..." or "OK".
  std::string to_string() const;
  // Prefix the message with more context: "[outer] " + message.
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status incompatible(std::string m) { return {StatusCode::kIncompatible, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }

// A value or a non-OK status. Accessing value() of an error is our own bug
// (asserted).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "StatusOr from an OK status");
    if (std::get<Status>(v_).ok()) v_ = Status(StatusCode::kInternal, "StatusOr built from OK status");
  }
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace loom

#define LOOM_CONCAT_INNER_(a, b) a##b
#define LOOM_CONCAT_(a, b) LOOM_CONCAT_INNER_(a, b)

// Return the status from the enclosing function when `expr` is not OK.
#define LOOM_RETURN_IF_ERROR(expr)            \
  do {                                        \
    ::loom::Status loom_status_tmp_ = (expr); \
    if (!loom_status_tmp_.ok()) return loom_status_tmp_; \
  } while (0)

// `lhs` = value of a StatusOr expression, or return its status.
#define LOOM_ASSIGN_OR_RETURN(lhs, expr) \
  LOOM_ASSIGN_OR_RETURN_IMPL_(LOOM_CONCAT_(loom_statusor_, __LINE__), lhs, expr)
#define LOOM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
