// The host's side of loom_status_t: the struct behind the opaque pointer the
// plugin ABI passes around, and the constructors the host services lend to
// plugins. Internal to libloom (the status conversion lives in the base
// layer; the registry lends these constructors to plugins).
#pragma once

#include <string>

#include "loom/plugin.h"

struct loom_status {
  loom_status_code_t code;
  std::string message;
};

namespace loom {

// Make a status for the ABI (never returns OK; an OK or unknown code becomes
// INTERNAL with a note). Returns NULL only when out of memory. Thread-safe.
loom_status_t* abi_status_new(loom_status_code_t code, const char* message);
void abi_status_free(loom_status_t* status);

}  // namespace loom
