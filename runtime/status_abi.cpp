#include "runtime/status_abi.hpp"

#include <new>
#include <string>

#include "loom/runtime/status.hpp"

namespace loom {
namespace {

bool code_is_error(int code) {
  return code > LOOM_STATUS_OK && code <= LOOM_STATUS_ABORTED;
}

}  // namespace

loom_status_t* abi_status_new(loom_status_code_t code, const char* message) {
  try {
    std::string text = message ? message : "";
    if (!code_is_error(static_cast<int>(code))) {
      // A plugin bug; keep it an error so it is not mistaken for success.
      text = "status_new called with code " + std::to_string(static_cast<int>(code)) +
             " (not an error code): " + text;
      code = LOOM_STATUS_INTERNAL;
    }
    return new loom_status{code, std::move(text)};
  } catch (...) {
    return nullptr;
  }
}

void abi_status_free(loom_status_t* status) { delete status; }


Status status_from_abi(loom_status_t* status) {
  if (!status) return Status();
  int code = static_cast<int>(status->code);
  std::string message = std::move(status->message);
  abi_status_free(status);
  if (code <= LOOM_STATUS_OK || code > LOOM_STATUS_ABORTED) {
    return internal_error("status with unknown code " + std::to_string(code) + ": " + message);
  }
  return Status(static_cast<StatusCode>(code), std::move(message));
}

}  // namespace loom
