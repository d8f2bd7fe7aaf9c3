// The registry: finds plugin files, loads them through the C ABI, records
// the fate of every candidate, lists and selects devices.
//
// Search order (first found wins for a given file name): Options::paths
// (folders or files the application registers) -> LOOM_PLUGIN_PATH
// (colon-separated) -> the folder of the loom library itself and its loom/
// subfolder (what makes any install prefix work) -> the configured install
// folder (<libdir>/loom). Files are named libloom-<plugin>[-<variant>].so.
// LOOM_PLUGINS_DISABLE then LOOM_PLUGINS_SELECT (comma-separated globs over
// plugin names) filter candidates. Variants of one plugin are ranked by
// their score; the best that fits runs.
//
// Before a file is loaded into the process it is probed in a short-lived
// child (ProbeMode::kIsolated, the default): a plugin that crashes, exits
// or hangs there becomes a failed record and never runs here. Results are
// cached per file version (LOOM_CACHE_DIR, else ~/.cache/loom). Under
// secure execution (setuid/setgid) LOOM_PLUGIN_PATH and the probe and cache
// variables are ignored; relative search paths are never searched.
//
// A Registry is not thread-safe to mutate; its const accessors are.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/registry/buffer.hpp"
#include "loom/registry/device_spec.hpp"
#include "loom/plugin.h"
#include "loom/runtime/status.hpp"

namespace loom {
struct Tensor;
}

namespace loom::registry {

enum class Stage { kFound, kOpened, kNegotiated, kProbed, kReady };
enum class Fate {
  kReady,        // loaded, devices listed
  kUnavailable,  // probe said its hardware/driver is absent (normal)
  kFailed,       // broken: cannot be opened, wrong ABI, errors, exceptions
  kSkipped,      // filtered by env, lost to a better variant, or a duplicate file
};
const char* stage_name(Stage s);
const char* fate_name(Fate f);

// What happened to one candidate plugin file.
struct Candidate {
  std::string path;
  std::string plugin;   // from the file name
  std::string variant;  // from the file name, "" if none
  std::string origin;   // "application", "LOOM_PLUGIN_PATH", "library folder", "install folder"
  Stage stage = Stage::kFound;  // furthest stage reached
  Fate fate = Fate::kFailed;
  std::string reason;  // why it stopped (empty when ready)
  uint32_t abi_version = 0;  // the plugin's, once negotiated
  int32_t score = -1;        // variant score, once asked
  std::string plugin_version;
  size_t device_count = 0;
};

struct DeviceInfo {
  std::string name;
  std::string description;
  loom_device_type_t type = LOOM_DEVICE_TYPE_CPU;
  uint64_t memory_total = 0;
  uint64_t memory_free = 0;
  std::string pci_bus_id;  // "" when unknown
  std::string uuid;        // 32 hex digits, "" when unknown
  uint32_t caps = 0;
  std::string plugin;
};
const char* device_type_name(loom_device_type_t t);  // "cpu", "gpu", "igpu", "accel"

class PluginHandle;

// A device of a loaded plugin. Owned by the Registry.
class Device {
 public:
  Device(loom_device_t* raw, DeviceInfo info, std::shared_ptr<PluginHandle> plugin);
  const std::string& name() const { return info_.name; }
  const DeviceInfo& info() const { return info_; }
  loom_device_t* raw() const { return raw_; }
  bool supports_op(const Tensor* node) const;
  bool supports_buffer_type(const loom_buffer_type_t* buft) const;
  loom_buffer_type_t* buffer_type() const;
  // Whether kernels take plain host pointers (tensors with data and no
  // buffer): CPU-like devices whose own memory is host memory. A GPU whose
  // memory is the host's (integrated, lavapipe) reads only its buffers.
  bool reads_host_pointers() const;
  StatusOr<Buffer> alloc_buffer(size_t size) const;
  // The same in another of the device's buffer types (e.g. from
  // weight_buffer_type); nullptr means buffer_type().
  StatusOr<Buffer> alloc_buffer(size_t size, loom_buffer_type_t* buft) const;
  // Through loom.weight_layout: the buffer type the device wants `weight`
  // (read only as a whole MUL_MAT src0) in, or nullptr for the default.
  loom_buffer_type_t* weight_buffer_type(const Tensor* weight) const;
  // Memory now (asks the plugin again; info() holds the values at load).
  // {0, 0} when the device does not know.
  struct Memory {
    uint64_t total = 0;
    uint64_t free = 0;
  };
  StatusOr<Memory> memory() const;
  // Wrap host memory (e.g. an mmap'd model file) as a buffer of this device
  // without copying. UNIMPLEMENTED when the device has no
  // buffer_from_host_ptr. The memory must outlive the buffer; kernels only
  // read weights, so read-only memory is fine for weights.
  StatusOr<Buffer> buffer_from_host_ptr(void* ptr, size_t size) const;
  StatusOr<Stream> create_stream() const;
  // Whether the device makes events (device.event_create is present).
  bool has_events() const;
  // An event (device.event_create); UNIMPLEMENTED when the device has none.
  StatusOr<Event> create_event() const;
  // A typed extension table or nullptr.
  const void* extension(const char* id, uint32_t version) const;
  // Through the loom.cost extension: estimated microseconds for node on this
  // device, sources in readable memory; < 0 when the device gives none.
  double op_time_us(const Tensor* node) const;
  // Through the loom.threads extension; UNIMPLEMENTED if the device has none.
  Status set_threads(int n_threads) const;
  // Through loom.threads: the thread count now; -1 when the device has none.
  int threads() const;
  // Whether the device reads tensor bytes from files itself (loom.file_load).
  bool has_file_load() const;
  // Through loom.file_load: bytes [0, size) of `t` (placed in a buffer of
  // this device) from bytes [file_offset, file_offset + size) of the file at
  // `path`, verified by the device against `checksum64`
  // (plugins/common/checksum64.h). The host range check of set_tensor runs
  // first. UNIMPLEMENTED when the device has no such extension; the
  // device's status (NOT_FOUND, INVALID_ARGUMENT naming the path) otherwise.
  Status set_tensor_from_file(Tensor* t, const std::string& path, uint64_t file_offset, uint64_t size,
                              uint64_t checksum64) const;

 private:
  loom_device_t* raw_;
  DeviceInfo info_;
  std::shared_ptr<PluginHandle> plugin_;
  mutable const void* cost_ext_ = nullptr;  // loom_ext_cost_t, looked up once
  mutable bool cost_ext_asked_ = false;
};

// How a plugin file is tried before it is loaded into this process.
enum class ProbeMode {
  kDefault,   // LOOM_PLUGIN_PROBE (isolated|inline) when use_env, else isolated
  kIsolated,  // first in a short-lived child (loom-probe), results cached
  kInline,    // straight into this process (a crashing plugin takes it down)
};

struct Options {
  std::vector<std::string> paths;  // searched first: folders or plugin files (absolute)
  bool use_env = true;             // LOOM_PLUGIN_PATH and the filter variables
  bool search_library_dir = true;
  bool search_install_dir = true;
  ProbeMode probe = ProbeMode::kDefault;
  // Device names the caller means to use (e.g. from --device cpu). When
  // set and probing is isolated, only plugins whose probed devices include
  // one of them are loaded into this process; the others are recorded as
  // skipped ("not loaded: its devices ... are not among the requested").
  std::vector<std::string> wanted_devices;
  // Which plugin keeps a physical device that two plugins show (same PCI
  // id / UUID): plugin names, most preferred first. Empty: with use_env,
  // LOOM_DEVICE_PREFER (comma-separated), else the default rule (the cuda
  // plugin over any other; otherwise the first in search order).
  std::vector<std::string> prefer_plugins;
};

class Registry {
 public:
  // Never fails as a whole: every problem becomes a Candidate record.
  static std::unique_ptr<Registry> load(const Options& options = {});
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  const std::vector<Candidate>& candidates() const { return candidates_; }
  // Devices of ready plugins, de-duplicated by PCI id/UUID (the first
  // plugin in search order keeps a shared physical device, except that the
  // cuda plugin keeps an NVIDIA GPU that another plugin, e.g. vulkan, shows;
  // Options::prefer_plugins / LOOM_DEVICE_PREFER override that).
  const std::vector<Device*>& devices() const { return device_ptrs_; }
  // Devices hidden as duplicates: "name (same device as other)".
  const std::vector<std::string>& duplicates() const { return duplicates_; }
  // Things a user should see (loom devices prints them): refused search
  // paths, a device name a plugin could not take, a variant from outside
  // loom's folders chosen over a built-in one, a missing probe helper.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The device of that name: one of devices(), else a device hidden as
  // the same physical device as one of them (a user who names vulkan0 gets
  // it even where cuda0 shows the same GPU); nullptr when none.
  Device* device(std::string_view name) const;

  // spec: a comma list of device names (all must exist, else NOT_FOUND
  // naming the missing one and what exists), or a policy: "auto" or ""
  // (all devices: GPUs, then accelerators, then the CPU), "gpu-first"
  // (same as auto), "cpu-only" (CPU devices only).
  StatusOr<std::vector<Device*>> select(std::string_view spec) const;
  // The same for a parsed spec; when it has an origin (DeviceSpec::resolve)
  // errors start with it and point at `loom devices`:
  // "LOOM_DEVICES=cuda0: [registry.select] device 'cuda0' not found; ...".
  StatusOr<std::vector<Device*>> select(const DeviceSpec& spec) const;
  // select(LOOM_DEVICES), or "auto" when unset.
  StatusOr<std::vector<Device*>> select_from_env() const;

  // Unload plugins. Fails (ABORTED, naming plugins and counts) while
  // buffers/streams made through them are alive; those plugins are then
  // unloaded when their last object is released. Idempotent.
  Status shutdown();
  // Buffers and streams alive across all plugins.
  size_t live_objects() const;

 private:
  Registry() = default;
  StatusOr<std::vector<Device*>> select_policy(const std::string& policy) const;
  StatusOr<std::vector<Device*>> select_names(const DeviceSpec& spec) const;
  std::vector<Candidate> candidates_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<Device*> device_ptrs_;
  std::vector<Device*> hidden_ptrs_;  // same-device duplicates, reachable by name only
  std::vector<std::string> duplicates_;
  std::vector<std::string> warnings_;
  std::vector<std::shared_ptr<PluginHandle>> plugins_;
  bool shut_down_ = false;
};

// Folder holding libloom itself (for discovery), "" if unknown.
std::string library_dir();

}  // namespace loom::registry
