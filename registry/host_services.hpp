// The loom_host_services_t table libloom lends to every plugin: logging into
// loom::log, status construction, aligned host memory. One static table for
// the whole process; it outlives every plugin (never destroyed).
#pragma once

#include "loom/plugin.h"

namespace loom::registry {

// The table passed to loom_plugin_query. Thread-safe; lives forever.
const loom_host_services_t* host_services();

}  // namespace loom::registry
