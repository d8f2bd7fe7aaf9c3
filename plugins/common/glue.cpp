#include "common/glue.h"

#include "common/plugin_entry.h"

#include <atomic>
#include <cstring>
#include <exception>
#include <new>

namespace loom::common {

namespace {
// Set once by loom_plugin_query; read from any thread afterwards.
std::atomic<const loom_host_services_t*> g_services{nullptr};
}  // namespace

void set_host_services(const loom_host_services_t* services) {
  g_services.store(services, std::memory_order_release);
}

bool accept_host(uint32_t host_abi_version, const loom_host_services_t* services) {
  // Another major has another layout: refuse rather than guess.
  if (LOOM_ABI_MAJOR(host_abi_version) != LOOM_ABI_VERSION_MAJOR || services == nullptr) return false;
  if (services->struct_size < LOOM_HOST_SERVICES_SIZE_1_0) return false;
  set_host_services(services);
  return true;
}

const loom_host_services_t* host_services() { return g_services.load(std::memory_order_acquire); }

loom_status_t* make_status(loom_status_code_t code, const std::string& message) {
  if (code == LOOM_STATUS_OK) return nullptr;
  const loom_host_services_t* s = host_services();
  if (s == nullptr || s->status_new == nullptr) return nullptr;  // no host: cannot report
  return s->status_new(code, message.c_str());
}

void plugin_log(loom_log_level_t level, const char* category, const std::string& message) {
  const loom_host_services_t* s = host_services();
  if (s == nullptr || s->log == nullptr) return;
  if (s->log_enabled != nullptr && !s->log_enabled(level, category)) return;
  s->log(level, category, message.c_str());
}

loom_status_t* current_exception_status(const char* op) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED, std::string("[") + op + "] out of host memory");
  } catch (const std::exception& e) {
    return make_status(LOOM_STATUS_INTERNAL, std::string("[") + op + "] exception: " + e.what());
  } catch (...) {
    return make_status(LOOM_STATUS_INTERNAL, std::string("[") + op + "] unknown exception");
  }
}

void write_device_props(const loom_device_props_t& props, loom_device_props_t* out) {
  const size_t size = out->struct_size;
  // memcpy: pci_bus_id and uuid are arrays.
#define LOOM_COPY_PROP(field)                               \
  if (size >= LOOM_STRUCT_END(loom_device_props_t, field)) \
    std::memcpy(&out->field, &props.field, sizeof out->field)
  LOOM_COPY_PROP(name);
  LOOM_COPY_PROP(description);
  LOOM_COPY_PROP(type);
  LOOM_COPY_PROP(memory_total);
  LOOM_COPY_PROP(memory_free);
  LOOM_COPY_PROP(pci_bus_id);
  LOOM_COPY_PROP(uuid);
  LOOM_COPY_PROP(has_uuid);
  LOOM_COPY_PROP(caps);
#undef LOOM_COPY_PROP
}

}  // namespace loom::common
