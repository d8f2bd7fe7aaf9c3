// A null device: exposes itself, owns one host-memory buffer type, supports
// no ops. The table in device.cpp is what a new backend fills with real
// work; the config here is what it reports in get_props.
#pragma once

#include <cstdint>
#include <string>

#include "buffer.h"
#include "loom/plugin.h"

namespace loom::null {

struct DeviceConfig {
  std::string name;         // "null0"
  std::string description;  // human readable
  int32_t type = LOOM_DEVICE_TYPE_ACCEL;
  std::string pci_bus_id;   // "" when none
  bool has_uuid = false;
  uint8_t uuid[16] = {};
  uint32_t caps = 0;
};

// The config of device `index`: name "<prefix><index>" and a fixed fake UUID
// (up to 8 bytes of `tag`, then zeros, then the index) so de-duplication can
// be tested.
DeviceConfig make_device_config(const std::string& prefix, size_t index, const char* tag);

// Owned by the plugin context; lives until plugin shutdown. Thread-safe
// except set_threads/threads, which use an atomic.
class Device {
 public:
  explicit Device(DeviceConfig config);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  loom_device_t* raw() { return &raw_; }
  const DeviceConfig& config() const { return config_; }
  BufferType& buffer_type() { return buffer_type_; }
  static Device* from(loom_device_t* raw) { return static_cast<Device*>(raw->context); }

  // The loom.threads extension is kept (and ignored) to show how a device
  // offers an extension table.
  int32_t threads() const { return threads_; }
  void set_threads(int32_t n) { threads_ = n; }

 private:
  DeviceConfig config_;
  loom_device_t raw_;
  BufferType buffer_type_;
  int32_t threads_ = 1;
};

}  // namespace loom::null
