#include "event.h"

#include "common/glue.h"
#include "device.h"

namespace loom::vulkan {

namespace {

void event_destroy(loom_event_t* e) { delete Event::from(e); }
loom_status_t* event_synchronize(loom_event_t* e) {
  return common::guarded("vulkan.event_synchronize", [&] { return Event::from(e)->synchronize(); });
}

const loom_event_iface_t kEventIface = {sizeof(loom_event_iface_t), event_destroy,
                                        event_synchronize};

}  // namespace

Event::Event(Device* device)
    : raw_{sizeof(loom_event_t), &kEventIface, device->handle(), this}, device_(device) {}

loom_event_t* Event::create(Device* device) { return &(new Event(device))->raw_; }

bool Event::is_ours(const loom_event_t* e) { return e != nullptr && e->iface == &kEventIface; }

loom_status_t* Event::synchronize() { return device_->wait_value(value_, "event_synchronize"); }

}  // namespace loom::vulkan
