#include "common/glue.h"

#include <atomic>

namespace loom::common {

namespace {
// Set once by loom_plugin_query; read from any thread afterwards.
std::atomic<const loom_host_services_t*> g_services{nullptr};
}  // namespace

void set_host_services(const loom_host_services_t* services) {
  g_services.store(services, std::memory_order_release);
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

}  // namespace loom::common
