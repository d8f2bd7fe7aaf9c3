// Streams of the simulated devices: synchronous, in order. compute runs the
// reference kernels node by node; LOOM_SIM_FAIL_AT=<node name> (read at each
// compute) makes the node of that name fail with a status naming it.
#include <cstdlib>
#include <string>

#include "common/glue.h"
#include "kernels.h"
#include "sim.h"

namespace loom::sim {
namespace {

using loom::common::guarded;
using loom::common::make_status;

struct Stream {
  loom_stream_t raw;
};

bool is_no_op(int32_t op) { return op == LOOM_OP_NONE || common::is_view_op(op); }

// Every tensor the node touches must live in this device's buffers.
bool in_device_memory(Device& dev, const loom_tensor_t* t) {
  return t->buffer && dev.raw()->iface->supports_buffer_type(dev.raw(), t->buffer->buffer_type);
}

void stream_destroy(loom_stream_t* s) { delete static_cast<Stream*>(s->context); }

loom_status_t* stream_compute(loom_stream_t* s, const loom_graph_t* g) {
  return guarded("sim.compute", [&]() -> loom_status_t* {
    Device& dev = *Device::from(s->device);
    const std::string& name = dev.config().name;
    if (!g)
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[sim.compute] " + name + ": graph is null");
    const char* fail_at = std::getenv("LOOM_SIM_FAIL_AT");
    for (int32_t i = 0; i < g->n_nodes; ++i) {
      const loom_tensor_t* node = g->nodes[i];
      if (!node)
        return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                           "[sim.compute] " + name + ": node " + std::to_string(i) + " is null");
      if (is_no_op(node->op)) continue;
      if (fail_at && *fail_at && std::string(node->name) == fail_at) {
        return make_status(
            LOOM_STATUS_INTERNAL,
            "[sim.compute] " + name + ": injected failure at node '" + node->name + "'");
      }
      if (!node_supported(dev, node)) {
        return make_status(LOOM_STATUS_UNIMPLEMENTED, "[sim.compute] " + name + ": op " +
                                                          op_name(node->op) + " of node '" +
                                                          node->name + "' is not supported here");
      }
      for (int k = -1; k < LOOM_MAX_SRC; ++k) {
        const loom_tensor_t* t = k < 0 ? node : node->src[k];
        if (t && !in_device_memory(dev, t)) {
          return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                             "[sim.compute] " + name + ": tensor '" + t->name + "' of node '" +
                                 node->name + "' is not in this device's memory");
        }
      }
      std::string err = run_kernel(node);
      if (!err.empty())
        return make_status(LOOM_STATUS_INTERNAL, "[sim.compute] " + name + ": " + err);
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
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

}  // namespace

loom_status_t* stream_create(loom_device_t* device, loom_stream_t** out_stream) {
  return guarded("sim.stream_create", [&]() -> loom_status_t* {
    auto* s = new Stream{};
    s->raw = loom_stream_t{sizeof(loom_stream_t), &kStreamIface, device, s};
    *out_stream = &s->raw;
    return nullptr;
  });
}

bool node_supported(const Device& dev, const loom_tensor_t* node) {
  if (node->op < 0 || node->op >= LOOM_OP_COUNT) return false;
  if (is_no_op(node->op)) return true;
  return dev.config().ops[static_cast<size_t>(node->op)] && kernel_exists(node);
}

}  // namespace loom::sim
