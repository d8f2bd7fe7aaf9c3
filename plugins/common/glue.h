// ABI glue for plugins: keep the host services, make statuses, log through
// the host, and turn C++ exceptions into statuses at the boundary.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "loom/plugin.h"

namespace loom::common {

// Remember the services given to loom_plugin_query (one per plugin library).
void set_host_services(const loom_host_services_t* services);
const loom_host_services_t* host_services();

// A status for the host; NULL services (no host yet) gives NULL only for OK,
// so callers must have set services before returning errors.
loom_status_t* make_status(loom_status_code_t code, const std::string& message);

void plugin_log(loom_log_level_t level, const char* category, const std::string& message);

// Copy the fields of `props` that end within out->struct_size into *out (a
// host built against an older ABI knows a shorter struct). The strings in
// `props` are borrowed: they must live as long as the device.
void write_device_props(const loom_device_props_t& props, loom_device_props_t* out);

// The status for the exception being handled, naming `op`: call only inside
// a catch block.
loom_status_t* current_exception_status(const char* op) noexcept;

// Run fn (returning loom_status_t*) and convert any exception into a status
// naming `op`. Use in every extern "C" entry that can fail.
template <typename Fn>
loom_status_t* guarded(const char* op, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (...) {
    return current_exception_status(op);
  }
}

// guarded() naming the op "<category>.<op>" (e.g. "cpu" and "compute"), for
// code shared by plugins; the name is built only when something throws.
template <typename Fn>
loom_status_t* guarded(const char* category, const char* op, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (...) {
    return current_exception_status((std::string(category) + "." + op).c_str());
  }
}

}  // namespace loom::common
