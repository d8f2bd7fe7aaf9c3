// The memory bandwidth of a device with its own memory (a GPU), measured
// through its plugin: one device buffer copied into another by the plugin's
// copy_tensor, read back a few bytes to wait for the copy. `loom bench`
// judges decode on such a device by this, not by the host's DRAM.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "measure/bandwidth_probe.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/status.hpp"

namespace loom::cli {

// Whether the device's memory is its own (its default buffer type is not
// host memory): the host probe says nothing about it.
bool has_own_memory(const registry::Device& d);

class DeviceBandwidthProbe {
 public:
  // Two tensors of `bytes` each (0: 512 MiB, or a quarter of the free
  // memory when that is less; at least 16 MiB) in one buffer of the device.
  // UNIMPLEMENTED when the plugin cannot copy inside its own memory.
  static StatusOr<std::unique_ptr<DeviceBandwidthProbe>> create(const registry::Device& d, size_t bytes = 0);
  // Best of `passes` copies after one untimed: bytes read + bytes written
  // per second (a copy moves both), in GB/s.
  StatusOr<Bandwidth> measure(int passes);
  std::string describe() const;

 private:
  DeviceBandwidthProbe() = default;
  // The tensors' addresses are the plugin's (init_tensor): never moved.
  DeviceBandwidthProbe(const DeviceBandwidthProbe&) = delete;
  DeviceBandwidthProbe& operator=(const DeviceBandwidthProbe&) = delete;

  const registry::Device* dev_ = nullptr;
  Buffer buf_;
  loom_tensor_t src_{};
  loom_tensor_t dst_{};
  size_t bytes_ = 0;
  Status copy_once();
};

}  // namespace loom::cli
