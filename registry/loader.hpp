// The per-candidate load pipeline: open -> negotiate (query, sizes, ABI
// version, score) -> init -> list devices. Each step updates the
// Candidate's stage/fate/reason; nothing here throws or aborts on a bad
// plugin. Internal to libloom.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/registry/registry.hpp"
#include "registry/dynamic_library.hpp"
#include "registry/plugin_handle.hpp"

namespace loom::registry {

// The 1.0 sizes of the ABI structs: the least a plugin's struct_size may be
// (published in plugin.h, so plugins check the host's tables the same way).
inline constexpr size_t kPluginSize10 = LOOM_PLUGIN_SIZE_1_0;
inline constexpr size_t kDeviceSize10 = LOOM_DEVICE_SIZE_1_0;
inline constexpr size_t kDeviceIfaceSize10 = LOOM_DEVICE_IFACE_SIZE_1_0;
inline constexpr size_t kBufferTypeSize10 = LOOM_BUFFER_TYPE_SIZE_1_0;
inline constexpr size_t kBufferTypeIfaceSize10 = LOOM_BUFFER_TYPE_IFACE_SIZE_1_0;
inline constexpr size_t kBufferSize10 = LOOM_BUFFER_SIZE_1_0;
inline constexpr size_t kBufferIfaceSize10 = LOOM_BUFFER_IFACE_SIZE_1_0;
inline constexpr size_t kStreamSize10 = LOOM_STREAM_SIZE_1_0;
inline constexpr size_t kStreamIfaceSize10 = LOOM_STREAM_IFACE_SIZE_1_0;

// An opened library whose plugin table passed negotiation and was scored.
struct NegotiatedPlugin {
  size_t candidate = 0;  // index into the candidate list
  DynamicLibrary library;
  const loom_plugin_t* table = nullptr;
};

struct ListedDevice {
  loom_device_t* raw = nullptr;
  DeviceInfo info;
};

// Open, query and check one candidate, then ask its score. On success fills
// *out (stage kNegotiated, score set) and returns true; otherwise the
// candidate records why (library closed again).
bool negotiate_candidate(Candidate& c, size_t index, NegotiatedPlugin* out);

// init the plugin and list its devices. Returns the handle of a ready
// plugin (devices in *devices); nullptr when it was unavailable or failed
// (recorded in c, library unloaded).
std::shared_ptr<PluginHandle> start_plugin(Candidate& c, NegotiatedPlugin& n,
                                           std::vector<ListedDevice>* devices);

// Close a negotiated library that will not be started.
void discard_plugin(Candidate& c, NegotiatedPlugin& n);

// A hook told the name of each step before it runs ("open", "query",
// "score", "init", "devices"): the probe child reports its progress with
// it, so a crash or hang is named by step. nullptr (the default): none.
// Set once before loading; not thread-safe.
using StepHook = void (*)(const char* step);
void set_step_hook(StepHook hook);

// "[registry.load] <file>: " for messages about a candidate.
std::string load_prefix(const Candidate& c);

}  // namespace loom::registry
