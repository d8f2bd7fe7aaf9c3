#include "registry/host_services.hpp"

#include <cstdlib>
#include <string>

#include "loom/runtime/log.hpp"
#include "runtime/status_abi.hpp"

namespace loom::registry {
namespace {

constexpr const char* kDefaultCategory = "plugin";

LogLevel to_log_level(loom_log_level_t level) {
  switch (level) {
    case LOOM_LOG_LEVEL_DEBUG: return LogLevel::kDebug;
    case LOOM_LOG_LEVEL_INFO: return LogLevel::kInfo;
    case LOOM_LOG_LEVEL_WARN: return LogLevel::kWarn;
    case LOOM_LOG_LEVEL_ERROR: return LogLevel::kError;
  }
  return LogLevel::kWarn;  // an out-of-range level from a plugin still gets seen
}

const char* category_or_default(const char* category) {
  return (category && *category) ? category : kDefaultCategory;
}

void host_log(loom_log_level_t level, const char* category, const char* message) {
  try {
    loom::log(to_log_level(level), category_or_default(category), message ? message : "");
  } catch (...) {
    // Logging must never take the process down (a throwing sink, no memory).
  }
}

bool host_log_enabled(loom_log_level_t level, const char* category) {
  try {
    return loom::log_enabled(to_log_level(level), category_or_default(category));
  } catch (...) {
    return false;
  }
}

loom_status_t* host_status_new(loom_status_code_t code, const char* message) {
  return abi_status_new(code, message);
}

void host_status_free(loom_status_t* status) { abi_status_free(status); }

void* host_aligned_alloc(size_t size, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* ptr = nullptr;
  // Size 0 still gets a unique pointer so callers can treat NULL as failure.
  if (posix_memalign(&ptr, alignment, size == 0 ? 1 : size) != 0) return nullptr;
  return ptr;
}

void host_aligned_free(void* ptr) { std::free(ptr); }

const loom_host_services_t kServices = {
    sizeof(loom_host_services_t),
    LOOM_ABI_VERSION,
    host_log,
    host_log_enabled,
    host_status_new,
    host_status_free,
    host_aligned_alloc,
    host_aligned_free,
};

}  // namespace

const loom_host_services_t* host_services() { return &kServices; }

}  // namespace loom::registry
