// Device scratch memory of a stream (ops.h's Scratch): one cudaMalloc'd
// block, grown on demand. Growing waits for the stream's queued work (it
// may still read the old block), frees it and allocates 1.25x the request;
// a growth during CUDA graph capture is refused (UNAVAILABLE: the capture
// fails and that graph runs eagerly). generation() changes with every
// growth, so whoever kept data in the block knows it is gone.
// Thread-safety: one stream's; not shared.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "ops/ops.h"

namespace loom::cuda {

class DeviceScratch final : public Scratch {
 public:
  // `what` names the block in messages ("scratch"); `capturing` is the
  // stream's capture flag.
  DeviceScratch(std::string device_name, std::string what, const cudaStream_t* stream, const bool* capturing)
      : device_name_(std::move(device_name)), what_(std::move(what)), stream_(stream), capturing_(capturing) {}
  ~DeviceScratch() override;
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  void* get(size_t bytes, loom_status_t** st) override;
  uint64_t generation() const override { return generation_; }

 private:
  std::string device_name_, what_;
  const cudaStream_t* stream_;
  const bool* capturing_;
  void* data_ = nullptr;
  size_t size_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace loom::cuda
