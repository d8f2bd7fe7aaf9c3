#include "device.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "common/env.h"
#include "common/glue.h"
#include "ops/ops.h"
#include "ops/support.h"
#include "stream.h"
#include "weight_layout.h"

namespace loom::cuda {
namespace {

using common::guarded;
using common::make_status;

loom_status_t* device_get_props(loom_device_t* d, loom_device_props_t* out) {
  return guarded("cuda.get_props", [&] { return Device::from(d)->get_props(out); });
}
loom_buffer_type_t* device_buffer_type(loom_device_t* d) { return Device::from(d)->buffer_type().handle(); }
loom_buffer_type_t* device_host_buffer_type(loom_device_t* d) { return Device::from(d)->host_buffer_type().handle(); }

bool device_supports_op(loom_device_t*, const loom_tensor_t* node) { return unsupported_reason(node) == nullptr; }

bool device_supports_buffer_type(loom_device_t* d, const loom_buffer_type_t* t) {
  return Device::from(d)->supports_buffer_type(t);
}

loom_status_t* device_stream_create(loom_device_t* d, loom_stream_t** out) {
  return guarded("cuda.stream_create", [&]() -> loom_status_t* {
    if (out == nullptr) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cuda.stream_create] out_stream is null");
    return Stream::create(Device::from(d), out);
  });
}

loom_status_t* device_event_create(loom_device_t* d, loom_event_t** out) {
  return guarded("cuda.event_create", [&]() -> loom_status_t* {
    if (out == nullptr) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cuda.event_create] out_event is null");
    return Event::create(Device::from(d), out);
  });
}

// loom.weight_layout: Q8_0 / Q4_0 matrices in the split layout
// (weight_layout.h) unless LOOM_CUDA_REPACK=0.
loom_buffer_type_t* weight_buffer_type(loom_device_t* d, const loom_tensor_t* t) {
  try {
    if (!weight_layout_enabled() || weight_layout_unsupported(t) != nullptr) return nullptr;
    return Device::from(d)->weights_buffer_type().handle();
  } catch (...) {
    return nullptr;
  }
}
const loom_ext_weight_layout_t kWeightExt = {sizeof(loom_ext_weight_layout_t), weight_buffer_type};

const void* device_get_extension(loom_device_t*, const char* id, uint32_t version) {
  if (id == nullptr) return nullptr;
  if (std::strcmp(id, LOOM_EXT_WEIGHT_LAYOUT) == 0 && version == LOOM_EXT_WEIGHT_LAYOUT_VERSION) return &kWeightExt;
  return nullptr;
}

const loom_device_iface_t kDeviceIface = {
    sizeof(loom_device_iface_t),
    device_get_props,
    device_buffer_type,
    device_host_buffer_type,
    device_supports_op,
    device_supports_buffer_type,
    device_stream_create,
    device_event_create,
    device_get_extension,  // loom.weight_layout
    /*buffer_from_host_ptr=*/nullptr,
};

std::string err_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")"; }

}  // namespace

std::unique_ptr<Device> Device::create(int ordinal, const Cublas* cublas, std::string* why) {
  std::unique_ptr<Device> d(new Device());
  d->ordinal_ = ordinal;
  d->name_ = "cuda" + std::to_string(ordinal);
  d->cublas_ = cublas;
  cudaDeviceProp prop{};
  cudaError_t e = cudaGetDeviceProperties(&prop, ordinal);
  if (e != cudaSuccess) {
    *why = d->name_ + ": cudaGetDeviceProperties: " + err_text(e);
    cudaGetLastError();
    return nullptr;
  }
  d->make_current();
  std::string reason;
  if (!kernels_run_here(&reason)) {
    *why = d->name_ + " (" + prop.name + ", compute capability " + std::to_string(prop.major) + "." +
           std::to_string(prop.minor) + "): " + reason;
    return nullptr;
  }
  char bus[32] = {};
  std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.0", static_cast<unsigned>(prop.pciDomainID),
                static_cast<unsigned>(prop.pciBusID), static_cast<unsigned>(prop.pciDeviceID));
  d->pci_bus_id_ = bus;
  std::memcpy(d->uuid_, prop.uuid.bytes, 16);
  d->memory_total_ = prop.totalGlobalMem;
  d->sm_count_ = prop.multiProcessorCount;
  d->f16_gemm_ = prop.major >= 7 && cublas != nullptr && cublas->gemm_ex != nullptr &&
                 common::plugin_env_flag("LOOM_CUDA_F16_GEMM", true);
  d->f16_attention_ = prop.major >= 7 && common::plugin_env_flag("LOOM_CUDA_F16_ATTENTION", true);
  d->tc_gemm_ = prop.major >= 7 && common::plugin_env_flag("LOOM_CUDA_F16_GEMM", true);
  d->description_ = std::string(prop.name) + " (compute capability " + std::to_string(prop.major) + "." +
                    std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) + " SMs, " +
                    std::to_string(prop.totalGlobalMem >> 20) + " MiB, PCI " + d->pci_bus_id_ +
                    (d->f16_gemm_ ? ", prefill on tensor cores (F16 inputs)" : "") +
                    (!d->f16_gemm_ && d->tc_gemm_ ? ", prefill on tensor cores (F16 inputs, without cuBLAS)" : "") +
                    (d->f16_attention_ ? ", prefill attention on tensor cores" : "") + ")";
  d->raw_ = {sizeof(loom_device_t), &kDeviceIface, d.get()};
  d->buffer_type_ = std::make_unique<BufferType>(d.get(), BufferType::Kind::kDevice);
  d->host_type_ = std::make_unique<BufferType>(d.get(), BufferType::Kind::kPinned);
  d->weights_type_ = std::make_unique<BufferType>(d.get(), BufferType::Kind::kWeights);
  return d;
}

Device::~Device() {
  weights_type_.reset();
  host_type_.reset();
  buffer_type_.reset();
}

void Device::make_current() const { cudaSetDevice(ordinal_); }

loom_status_t* Device::get_props(loom_device_props_t* out) {
  if (out == nullptr) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cuda.get_props] out_props is null");
  loom_device_props_t p{};
  p.struct_size = sizeof p;
  p.name = name_.c_str();
  p.description = description_.c_str();
  p.type = LOOM_DEVICE_TYPE_GPU;
  p.memory_total = memory_total_;
  size_t free_b = 0, total_b = 0;
  make_current();
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
    // Cached pool blocks are free for loom's purposes.
    p.memory_free = free_b + buffer_type_->cached_bytes() + weights_type_->cached_bytes();
  } else {
    cudaGetLastError();
  }
  std::strncpy(p.pci_bus_id, pci_bus_id_.c_str(), sizeof p.pci_bus_id - 1);
  std::memcpy(p.uuid, uuid_, sizeof p.uuid);
  p.has_uuid = true;
  p.caps = LOOM_DEVICE_CAP_ASYNC | LOOM_DEVICE_CAP_EVENTS | LOOM_DEVICE_CAP_HOST_BUFFER;
  common::write_device_props(p, out);
  return nullptr;
}

}  // namespace loom::cuda
