#include "stream.h"

#include <string>

#include "common/glue.h"
#include "common/op_info.h"
#include "device.h"
#include "ops.h"

namespace example {
namespace {

using loom::common::guarded;
using loom::common::make_status;

void stream_destroy(loom_stream_t* s) { delete s; }

loom_status_t* stream_compute(loom_stream_t* s, const loom_graph_t* g) {
  return guarded("example.compute", [&]() -> loom_status_t* {
    const loom_buffer_type_t* mine = Device::from(s->device)->buffer_type().handle();
    for (int32_t i = 0; g != nullptr && i < g->n_nodes; ++i) {
      const loom_tensor_t* node = g->nodes[i];
      if (node == nullptr || node->op == LOOM_OP_NONE || loom::common::is_view_op(node->op)) continue;
      if (!supports(node)) {
        return make_status(LOOM_STATUS_UNIMPLEMENTED,
                           "[example.compute] node " + loom::common::describe_node(node) + " is not supported");
      }
      // Every operand must live in this device's memory (the host promised it).
      if (loom_status_t* st = loom::common::check_node_memory("example.compute", node, 2)) return st;
      for (const loom_tensor_t* t : {node, static_cast<const loom_tensor_t*>(node->src[0]),
                                     static_cast<const loom_tensor_t*>(node->src[1])}) {
        if (t != nullptr && !BufferType::owns(mine, t)) {
          return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[example.compute] node " +
                                                               loom::common::describe_node(node) + ": tensor '" +
                                                               t->name + "' is not in example memory");
        }
      }
      compute(node);
    }
    return nullptr;
  });
}

loom_status_t* stream_synchronize(loom_stream_t*) { return nullptr; }

const loom_stream_iface_t kStreamIface = {
    sizeof(loom_stream_iface_t), stream_destroy, stream_compute, stream_synchronize,
    nullptr,  // set_tensor_async: the host uses the buffer's set_tensor
    nullptr,  // get_tensor_async
    nullptr,  // record_event: no events
    nullptr,  // wait_event
};

}  // namespace

loom_stream_t* create_stream(loom_device_t* device) {
  return new loom_stream_t{sizeof(loom_stream_t), &kStreamIface, device, nullptr};
}

}  // namespace example
