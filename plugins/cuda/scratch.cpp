#include "scratch.h"

#include "common/glue.h"

namespace loom::cuda {

DeviceScratch::~DeviceScratch() {
  if (data_) cudaFree(data_);
}

void* DeviceScratch::get(size_t bytes, loom_status_t** st) {
  if (bytes <= size_) return data_;
  const std::string where = "[cuda.compute] " + device_name_ + ": " + what_ + " of " + std::to_string(bytes) + " bytes";
  if (*capturing_) {
    *st = common::make_status(LOOM_STATUS_UNAVAILABLE, where + " would grow during CUDA graph capture");
    return nullptr;
  }
  // Queued kernels may still read the old block.
  cudaError_t e = cudaStreamSynchronize(*stream_);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *st = common::make_status(LOOM_STATUS_INTERNAL, where + ": cudaStreamSynchronize: " + cudaGetErrorName(e));
    return nullptr;
  }
  if (data_) cudaFree(data_);
  data_ = nullptr;
  size_ = 0;
  ++generation_;
  const size_t want = bytes + bytes / 4;
  if ((e = cudaMalloc(&data_, want)) != cudaSuccess) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    *st = common::make_status(LOOM_STATUS_RESOURCE_EXHAUSTED, where + " (" + std::to_string(want) +
                                                                  " allocated): out of device memory (" +
                                                                  std::to_string(free_b) + " bytes free)");
    data_ = nullptr;
    return nullptr;
  }
  size_ = want;
  return data_;
}

}  // namespace loom::cuda
