// Device and buffer tables of the simulated plugin.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "common/glue.h"
#include "common/tensor_layout.h"
#include "common/type_traits.h"
#include "kernels.h"
#include "sim.h"
#include "sim_trace.h"

namespace loom::sim {
namespace {

using loom::common::guarded;
using loom::common::make_status;

constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugePageMin = size_t{1} << 20;

struct SimBuffer {
  loom_buffer_t raw;
  void* data;  // real host address; base() hands out fake_ptr(data)
};

SimBuffer* sim_buffer(loom_buffer_t* b) { return static_cast<SimBuffer*>(b->context); }

// [t->data + offset, + size) must lie inside the buffer (fake addresses).
loom_status_t* check_range(const char* op, loom_buffer_t* b, const loom_tensor_t* t, size_t offset,
                           size_t size) {
  if (!t || !t->data)
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       std::string("[") + op + "] tensor has no data");
  uintptr_t base = reinterpret_cast<uintptr_t>(b->iface->base(b));
  uintptr_t start = reinterpret_cast<uintptr_t>(t->data);
  if (t->buffer != b || start < base || offset > b->size || size > b->size - offset ||
      start - base > b->size - offset - size) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       std::string("[") + op + "] tensor '" + t->name + "': range at offset " +
                           std::to_string(offset) + " size " + std::to_string(size) +
                           " is outside the buffer of " + std::to_string(b->size) + " bytes");
  }
  return nullptr;
}

void buffer_free(loom_buffer_t* b) {
  SimBuffer* sb = sim_buffer(b);
  Device::from_buft(b->buffer_type)->used -= b->size;
  loom::common::host_services()->aligned_free(sb->data);
  delete sb;
}

void* buffer_base(loom_buffer_t* b) {
  void* real = sim_buffer(b)->data;
  return Device::from_buft(b->buffer_type)->config().host ? real : fake_ptr(real);
}

loom_status_t* buffer_set_tensor(loom_buffer_t* b, loom_tensor_t* t, const void* data,
                                 size_t offset, size_t size) {
  return guarded("sim.set_tensor", [&]() -> loom_status_t* {
    if (loom_status_t* st = check_range("sim.set_tensor", b, t, offset, size)) return st;
    if (size) std::memcpy(data_ptr(t) + offset, data, size);
    return nullptr;
  });
}

loom_status_t* buffer_get_tensor(loom_buffer_t* b, const loom_tensor_t* t, void* data,
                                 size_t offset, size_t size) {
  return guarded("sim.get_tensor", [&]() -> loom_status_t* {
    if (loom_status_t* st = check_range("sim.get_tensor", b, t, offset, size)) return st;
    if (size) std::memcpy(data, data_ptr(t) + offset, size);
    return nullptr;
  });
}

loom_status_t* buffer_clear(loom_buffer_t* b, uint8_t value) {
  return guarded("sim.clear", [&]() -> loom_status_t* {
    if (b->size) std::memset(sim_buffer(b)->data, value, b->size);
    return nullptr;
  });
}

const loom_buffer_iface_t kBufferIface = {
    sizeof(loom_buffer_iface_t),
    buffer_free,
    buffer_base,
    buffer_set_tensor,
    buffer_get_tensor,
    buffer_clear,
    nullptr,  // init_tensor: nothing per tensor
    nullptr,  // copy_tensor: every crossing is staged by the host (what tests count on)
};

// LOOM_SIM_COPY=1: dense copies from another sim buffer (the scheduler's
// direct path between two devices of one plugin); anything else is staged.
loom_status_t* buffer_copy_tensor(loom_buffer_t* b, const loom_tensor_t* src, loom_tensor_t* dst);

const loom_buffer_iface_t kCopyBufferIface = {
    sizeof(loom_buffer_iface_t), buffer_free, buffer_base, buffer_set_tensor, buffer_get_tensor, buffer_clear,
    nullptr, buffer_copy_tensor,
};

loom_status_t* buffer_copy_tensor(loom_buffer_t* b, const loom_tensor_t* src, loom_tensor_t* dst) {
  return guarded("sim.copy_tensor", [&]() -> loom_status_t* {
    bool same = src && src->buffer && src->buffer->iface == &kCopyBufferIface && src->type == dst->type &&
                loom::common::type_is_valid(src->type) && loom::common::tensor_is_dense(src) &&
                loom::common::tensor_is_dense(dst);
    for (int d = 0; same && d < LOOM_MAX_DIMS; ++d) same = src->ne[d] == dst->ne[d];
    if (!same) return make_status(LOOM_STATUS_UNIMPLEMENTED, "[sim.copy_tensor] only dense copies between sim buffers");
    const size_t n = loom::common::tensor_span(src);
    if (loom_status_t* st = check_range("sim.copy_tensor", src->buffer, src, 0, n)) return st;
    if (loom_status_t* st = check_range("sim.copy_tensor", b, dst, 0, n)) return st;
    if (n) std::memcpy(data_ptr(dst), data_ptr(src), n);
    return nullptr;
  });
}

const char* type_name(loom_buffer_type_t* t) { return Device::from_buft(t)->config().name.c_str(); }

loom_status_t* type_alloc(loom_buffer_type_t* t, size_t size, loom_buffer_t** out_buffer) {
  return guarded("sim.alloc", [&]() -> loom_status_t* {
    Device* dev = Device::from_buft(t);
    const size_t cap = dev->config().memory;
    if (cap != 0 && size > cap - dev->used) {
      return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED,
                         "[sim.alloc] " + dev->config().name + " out of device memory: " + std::to_string(size) +
                             " bytes requested, " + std::to_string(cap - dev->used) + " of " +
                             std::to_string(cap) + " free");
    }
    const loom_host_services_t* host = loom::common::host_services();
    // Large buffers on whole 2 MiB pages with transparent huge pages asked
    // for (as the cpu plugin's are, and a GPU's memory is mapped): the
    // sparse kernels read scattered rows, each a TLB miss on 4 KiB pages.
    const bool huge = size >= kHugePageMin;
    const size_t bytes = huge ? (size + kHugePage - 1) / kHugePage * kHugePage : (size ? size : 1);
    void* data = host->aligned_alloc(bytes, huge ? kHugePage : kAlignment);
#ifdef MADV_HUGEPAGE
    if (data && huge) (void)::madvise(data, bytes, MADV_HUGEPAGE);  // advice only
#endif
    if (!data) {
      return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED,
                         "[sim.alloc] out of host memory for " + std::to_string(size) + " bytes");
    }
    SimBuffer* sb = new (std::nothrow) SimBuffer{};
    if (!sb) {
      host->aligned_free(data);
      return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED, "[sim.alloc] out of host memory");
    }
    sb->data = data;
    sb->raw = loom_buffer_t{sizeof(loom_buffer_t), dev->config().copy ? &kCopyBufferIface : &kBufferIface, t, size, sb};
    dev->used += size;
    *out_buffer = &sb->raw;
    return nullptr;
  });
}

size_t type_alignment(loom_buffer_type_t*) { return kAlignment; }
bool type_is_host(loom_buffer_type_t* t) { return Device::from_buft(t)->config().host; }

const loom_buffer_type_iface_t kBufferTypeIface = {
    sizeof(loom_buffer_type_iface_t),
    type_name,
    type_alloc,
    type_alignment,
    nullptr,
    nullptr,
    type_is_host,
};

loom_status_t* device_get_props(loom_device_t* d, loom_device_props_t* out) {
  return guarded("sim.get_props", [&]() -> loom_status_t* {
    Device* dev = Device::from(d);
    auto fits = [&](size_t end) { return out->struct_size >= end; };
    if (fits(LOOM_STRUCT_END(loom_device_props_t, name))) out->name = dev->config().name.c_str();
    if (fits(LOOM_STRUCT_END(loom_device_props_t, description)))
      out->description = dev->config().description.c_str();
    if (fits(LOOM_STRUCT_END(loom_device_props_t, type))) out->type = LOOM_DEVICE_TYPE_GPU;
    if (fits(LOOM_STRUCT_END(loom_device_props_t, memory_free))) {
      out->memory_total = dev->config().memory;
      // Unlimited (no LOOM_SIM_MEMORY_i): no size, not 0 minus what is used.
      const size_t cap = dev->config().memory;
      out->memory_free = cap > dev->used ? cap - dev->used : 0;
    }
    if (fits(LOOM_STRUCT_END(loom_device_props_t, pci_bus_id)))
      std::memset(out->pci_bus_id, 0, sizeof out->pci_bus_id);
    if (fits(LOOM_STRUCT_END(loom_device_props_t, has_uuid))) {
      std::memset(out->uuid, 0, sizeof out->uuid);
      std::memcpy(out->uuid, "loomsim!", 8);
      out->uuid[15] = static_cast<uint8_t>(dev->index() & 0xFF);
      out->has_uuid = true;
    }
    if (fits(LOOM_STRUCT_END(loom_device_props_t, caps))) {
      out->caps = dev->config().emulated ? LOOM_DEVICE_CAP_EMULATED : 0u;
      if (dev->config().async) out->caps |= LOOM_DEVICE_CAP_ASYNC | LOOM_DEVICE_CAP_EVENTS;
    }
    return nullptr;
  });
}

loom_buffer_type_t* device_buffer_type(loom_device_t* d) { return Device::from(d)->buffer_type(); }

bool device_supports_op(loom_device_t* d, const loom_tensor_t* node) {
  return node != nullptr && node_supported(*Device::from(d), node);
}

bool device_supports_buffer_type(loom_device_t* d, const loom_buffer_type_t* t) {
  Device* dev = Device::from(d);
  if (t == dev->buffer_type()) return true;
  // A host device reads any host memory (the CPU's buffers included).
  return dev->config().host && t && t->iface->is_host(const_cast<loom_buffer_type_t*>(t));
}

// loom.cost from LOOM_SIM_FLOPS_<i>: flops (2*K per MUL_MAT result element,
// 1 per element otherwise) over that many per microsecond; from
// LOOM_SIM_GBPS_<i>: the node's bytes (node_bytes, a sparse product's
// active share taken as 15% of its rows, as the cpu plugin plans it) over
// that bandwidth; with both, the larger.
double cost_op_time_us(loom_device_t* d, const loom_tensor_t* node) {
  const Device* dev = Device::from(d);
  if (!node || !node_supported(*dev, node)) return -1.0;
  double us = 0;
  if (dev->config().flops_per_us > 0) {
    double n = 1;
    for (int k = 0; k < 4; ++k) n *= static_cast<double>(node->ne[k]);
    if (node->op == LOOM_OP_MUL_MAT && node->src[0]) n *= 2.0 * static_cast<double>(node->src[0]->ne[0]);
    us = n / dev->config().flops_per_us;
  }
  if (dev->config().gbps > 0) {
    us = std::max(us, static_cast<double>(node_bytes(node, 0.15)) / (dev->config().gbps * 1e3));
  }
  return us;
}

const loom_ext_cost_t kCostExt = {sizeof(loom_ext_cost_t), cost_op_time_us};

const void* device_get_extension(loom_device_t* d, const char* id, uint32_t version) {
  if (id && std::strcmp(id, LOOM_EXT_COST) == 0 && version == LOOM_EXT_COST_VERSION &&
      (Device::from(d)->config().flops_per_us > 0 || Device::from(d)->config().gbps > 0)) {
    return &kCostExt;
  }
  if (id && std::strcmp(id, LOOM_SIM_EXT_TRACE) == 0 && version >= 1 && version <= LOOM_SIM_EXT_TRACE_VERSION) {
    return trace_extension();
  }
  return nullptr;
}

const loom_device_iface_t kDeviceIface = {
    sizeof(loom_device_iface_t),
    device_get_props,
    device_buffer_type,
    nullptr,  // host_buffer_type
    device_supports_op,
    device_supports_buffer_type,
    stream_create,
    nullptr,  // event_create: no events; the host synchronises streams
    device_get_extension,
    nullptr,  // buffer_from_host_ptr
};

// LOOM_SIM_ASYNC=1: the same with events.
const loom_device_iface_t kAsyncDeviceIface = {
    sizeof(loom_device_iface_t),
    device_get_props,
    device_buffer_type,
    nullptr,  // host_buffer_type
    device_supports_op,
    device_supports_buffer_type,
    stream_create,
    event_create,
    device_get_extension,
    nullptr,  // buffer_from_host_ptr
};

}  // namespace

Device::Device(DeviceConfig config, size_t index)
    : config_(std::move(config)),
      index_(index),
      raw_{sizeof(loom_device_t), config_.async ? &kAsyncDeviceIface : &kDeviceIface, this},
      buft_{sizeof(loom_buffer_type_t), &kBufferTypeIface, &raw_, this} {}

}  // namespace loom::sim
