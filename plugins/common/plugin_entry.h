// A plugin's one exported entry, written once for every plugin:
//
//   LOOM_PLUGIN_DEFINE(&kPlugin)
//
// at file scope (outside any namespace) in the plugin's plugin.cpp defines
// `loom_plugin_query` (plugin.h): it refuses a host of another ABI major
// and a services table smaller than ABI 1.0's (NULL: the host records "no
// plugin table"), keeps the services for make_status / plugin_log
// (glue.h), then returns the table. The table expression is evaluated only
// once the host is accepted. LOOM_PLUGIN_DEFINE_NAMED(symbol, table) is the
// same under another symbol name (for tests of a missing entry).
#pragma once

#include <cstdint>

#include "loom/plugin.h"

namespace loom::common {

// Whether this plugin serves the host: the same ABI major, and services
// with every 1.0 entry (struct_size >= LOOM_HOST_SERVICES_SIZE_1_0). On
// success the services are kept (set_host_services).
bool accept_host(uint32_t host_abi_version, const loom_host_services_t* services);

}  // namespace loom::common

#define LOOM_PLUGIN_DEFINE_NAMED(symbol, table)                                                          \
  extern "C" LOOM_PLUGIN_EXPORT const loom_plugin_t* symbol(uint32_t host_abi_version,                  \
                                                            const loom_host_services_t* services) {     \
    return ::loom::common::accept_host(host_abi_version, services) ? (table) : nullptr;                  \
  }

#define LOOM_PLUGIN_DEFINE(table) LOOM_PLUGIN_DEFINE_NAMED(loom_plugin_query, table)
