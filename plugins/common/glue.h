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

// Run fn (returning loom_status_t*) and convert any exception into a status
// naming `op`. Use in every extern "C" entry that can fail.
template <typename Fn>
loom_status_t* guarded(const char* op, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED, std::string("[") + op + "] out of host memory");
  } catch (const std::exception& e) {
    return make_status(LOOM_STATUS_INTERNAL, std::string("[") + op + "] exception: " + e.what());
  } catch (...) {
    return make_status(LOOM_STATUS_INTERNAL, std::string("[") + op + "] unknown exception");
  }
}

}  // namespace loom::common
