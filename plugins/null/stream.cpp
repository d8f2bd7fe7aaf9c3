#include "stream.h"

#include <string>

#include "common/glue.h"
#include "common/op_info.h"
#include "device.h"

namespace loom::null {

struct StreamAccess {
  static Stream* from(loom_stream_t* s) { return static_cast<Stream*>(s->context); }
  static loom_stream_t* raw(Stream* s) { return &s->raw_; }
};

namespace {

using loom::common::guarded;
using loom::common::make_status;
using loom::common::op_name;

bool is_no_op(int32_t op) { return op == LOOM_OP_NONE || loom::common::is_view_op(op); }

void stream_destroy(loom_stream_t* s) { delete StreamAccess::from(s); }

loom_status_t* stream_compute(loom_stream_t* s, const loom_graph_t* g) {
  return guarded("null.compute", [&]() -> loom_status_t* {
    for (int32_t i = 0; g && i < g->n_nodes; ++i) {
      const loom_tensor_t* node = g->nodes[i];
      if (!node || is_no_op(node->op)) continue;  // views need no work
      const std::string dev = Device::from(s->device)->config().name;
      return make_status(LOOM_STATUS_UNIMPLEMENTED, "[null.compute] " + dev + ": op " + op_name(node->op) +
                                                        " of node '" + node->name +
                                                        "' is not supported (the null device runs no ops)");
    }
    return nullptr;
  });
}

loom_status_t* stream_synchronize(loom_stream_t*) { return nullptr; }

const loom_stream_iface_t kStreamIface = {
    sizeof(loom_stream_iface_t),
    stream_destroy,
    stream_compute,
    stream_synchronize,
    nullptr,  // set_tensor_async: the host uses the buffer's set_tensor
    nullptr,  // get_tensor_async
    nullptr,  // record_event: no events
    nullptr,  // wait_event
};

}  // namespace

Stream::Stream(loom_device_t* device) : raw_{sizeof(loom_stream_t), &kStreamIface, device, this} {}

loom_stream_t* Stream::create(loom_device_t* device) { return StreamAccess::raw(new Stream(device)); }

}  // namespace loom::null
