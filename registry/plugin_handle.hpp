// A loaded plugin library: its dlopen handle, its plugin table, the context
// init returned, and a count of the buffers/streams alive that it made.
// Shared (std::shared_ptr) by the Registry, its Devices and every Buffer and
// Stream, so the library stays mapped while anything it made is alive.
//
// Unloading (plugin shutdown + dlclose) happens only after request_shutdown()
// AND once the live-object count is 0 — whichever comes last does it. The
// destructor never unloads. Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

#include "loom/plugin.h"
#include "registry/dynamic_library.hpp"

namespace loom::registry {

class PluginHandle {
 public:
  // Takes over an open library whose plugin `table` was initialised with
  // `context` (init returned OK).
  PluginHandle(std::string name, std::string path, DynamicLibrary library,
               const loom_plugin_t* table, void* context);
  ~PluginHandle();
  PluginHandle(const PluginHandle&) = delete;
  PluginHandle& operator=(const PluginHandle&) = delete;

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  const loom_plugin_t* table() const { return table_; }
  void* context() const { return context_; }

  // A buffer/stream made through this plugin came to life / was released.
  void add_object();
  void release_object();
  size_t live_objects() const;

  // Ask to unload: done now when nothing is alive, else when the last object
  // is released. Returns the number of live objects at the time. Idempotent.
  size_t request_shutdown();
  bool loaded() const;

 private:
  void unload_locked();  // mu_ held

  const std::string name_;
  const std::string path_;
  DynamicLibrary library_;
  const loom_plugin_t* table_;
  void* context_;
  mutable std::mutex mu_;
  size_t live_ = 0;
  bool shutdown_requested_ = false;
  bool loaded_ = true;
};

// Call the plugin's shutdown(context) (exceptions caught and logged) and
// dlclose the library. Used for plugins that never became a PluginHandle
// too (pass context nullptr when init did not succeed).
void unload_plugin(const std::string& name, DynamicLibrary& library, const loom_plugin_t* table,
                   void* context, bool call_shutdown);

}  // namespace loom::registry
