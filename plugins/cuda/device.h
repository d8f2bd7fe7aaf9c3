// One CUDA GPU as a loom device "cuda<ordinal>": properties for the
// registry (name, memory, compute capability, PCI bus id and UUID as the
// identity), its device, pinned host and weights buffer types, streams and
// events.
// Owned by the plugin context; lives until plugin shutdown. Thread-safe:
// every entry sets the calling thread's current device first.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "buffer.h"
#include "cublas.h"
#include "loom/plugin.h"

namespace loom::cuda {

class Device {
 public:
  // Opens CUDA device `ordinal`; nullptr and *why when the plugin's
  // kernels cannot run on it (compute capability without a matching
  // binary or PTX) or the device cannot be queried.
  static std::unique_ptr<Device> create(int ordinal, const Cublas* cublas, std::string* why);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  loom_device_t* handle() { return &raw_; }
  static Device* from(loom_device_t* d) { return static_cast<Device*>(d->context); }
  static Device* from(const loom_device_t* d) { return static_cast<Device*>(d->context); }

  const std::string& name() const { return name_; }
  int ordinal() const { return ordinal_; }
  uint64_t memory_total() const { return memory_total_; }
  int sm_count() const { return sm_count_; }
  const Cublas* cublas() const { return cublas_; }
  // Prefill GEMMs with F16 inputs on tensor cores (compute capability >= 7,
  // cublasGemmEx present, LOOM_CUDA_F16_GEMM not 0).
  bool f16_gemm() const { return f16_gemm_; }
  // Prefill ATTENTION over F16 caches on tensor cores (compute capability
  // 7.0+; LOOM_CUDA_F16_ATTENTION=0 keeps the f32 kernel).
  bool f16_attention() const { return f16_attention_; }
  // Prefill MUL_MAT on the plugin's own wmma GEMM when cuBLAS is absent
  // (compute capability 7.0+; LOOM_CUDA_F16_GEMM=0 keeps the GEMVs).
  bool tc_gemm() const { return tc_gemm_; }
  // cudaSetDevice(ordinal) for the calling thread.
  void make_current() const;

  BufferType& buffer_type() { return *buffer_type_; }
  BufferType& host_buffer_type() { return *host_type_; }
  BufferType& weights_buffer_type() { return *weights_type_; }
  bool supports_buffer_type(const loom_buffer_type_t* t) const {
    return t == buffer_type_->handle() || t == weights_type_->handle();
  }
  loom_status_t* get_props(loom_device_props_t* out);

 private:
  Device() = default;

  loom_device_t raw_{};
  int ordinal_ = 0;
  std::string name_;
  std::string description_;
  std::string pci_bus_id_;
  uint8_t uuid_[16] = {};
  uint64_t memory_total_ = 0;
  int sm_count_ = 1;
  bool f16_gemm_ = false;
  bool f16_attention_ = false;
  bool tc_gemm_ = false;
  const Cublas* cublas_ = nullptr;
  std::unique_ptr<BufferType> buffer_type_;
  std::unique_ptr<BufferType> host_type_;
  std::unique_ptr<BufferType> weights_type_;
};

}  // namespace loom::cuda
