#include "registry/plugin_handle.hpp"

#include <utility>

#include "loom/runtime/log.hpp"
#include "registry/guard.hpp"

namespace loom::registry {

std::string abi_version_text(uint32_t version) {
  return std::to_string(LOOM_ABI_MAJOR(version)) + "." + std::to_string(LOOM_ABI_MINOR(version));
}

void unload_plugin(const std::string& name, DynamicLibrary& library, const loom_plugin_t* table,
                   void* context, bool call_shutdown) {
  if (call_shutdown && table && table->shutdown) {
    std::string err = call_plugin([&] { table->shutdown(context); });
    if (!err.empty()) LOOM_LOG_WARN("registry", "[registry.shutdown] " + name + ": shutdown " + err);
  }
  std::string err;
  if (!library.close(&err)) {
    LOOM_LOG_WARN("registry", "[registry.shutdown] " + name + ": dlclose failed: " + err);
  } else {
    LOOM_LOG_DEBUG("registry", "unloaded plugin " + name);
  }
}

PluginHandle::PluginHandle(std::string name, std::string path, DynamicLibrary library,
                           const loom_plugin_t* table, void* context)
    : name_(std::move(name)),
      path_(std::move(path)),
      library_(std::move(library)),
      table_(table),
      context_(context) {}

PluginHandle::~PluginHandle() {
  // Never unload here (this may run from a static destructor); the Registry
  // requests shutdown explicitly, after which the last release unloads.
  if (loaded_) {
    LOOM_LOG_DEBUG("registry", "plugin " + name_ + " left loaded (no shutdown was requested)");
  }
}

void PluginHandle::add_object() {
  std::lock_guard<std::mutex> lock(mu_);
  ++live_;
}

void PluginHandle::release_object() {
  std::lock_guard<std::mutex> lock(mu_);
  if (live_ > 0) --live_;
  if (live_ == 0 && shutdown_requested_ && loaded_) unload_locked();
}

size_t PluginHandle::live_objects() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

size_t PluginHandle::request_shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_requested_ = true;
  if (live_ == 0 && loaded_) unload_locked();
  return live_;
}

bool PluginHandle::loaded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loaded_;
}

void PluginHandle::unload_locked() {
  loaded_ = false;
  unload_plugin(name_, library_, table_, context_, /*call_shutdown=*/true);
  table_ = nullptr;
  context_ = nullptr;
}

}  // namespace loom::registry
