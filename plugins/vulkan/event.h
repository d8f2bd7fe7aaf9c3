// An event: a point on the device's timeline semaphore (the value the last
// submission of a stream signalled when the event was recorded). Waiting
// on the host waits for that value; value 0 is complete. Owned by the host
// (destroy through its iface); lives no longer than its device.
#pragma once

#include <cstdint>

#include "loom/plugin.h"

namespace loom::vulkan {

class Device;

class Event {
 public:
  static loom_event_t* create(Device* device);
  static Event* from(loom_event_t* e) { return static_cast<Event*>(e->context); }
  static bool is_ours(const loom_event_t* e);

  Device* device() const { return device_; }
  uint64_t value() const { return value_; }
  void set_value(uint64_t v) { value_ = v; }
  loom_status_t* synchronize();

 private:
  explicit Event(Device* device);
  loom_event_t raw_;
  Device* device_;
  uint64_t value_ = 0;
};

}  // namespace loom::vulkan
