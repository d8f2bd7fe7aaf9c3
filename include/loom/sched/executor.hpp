// Single-device execution: allocate a graph's intermediate tensors in one
// compute buffer of a device and run the graph on the device's stream. The
// multi-device scheduler (loom/scheduler.hpp) generalises this. Not
// thread-safe.
//
// Lifetime: the tensors an executor places point into its compute buffer
// until the executor is destroyed (or the buffer grows); they carry a token
// of it (Tensor::placed_by), so another executor or scheduler given the
// same graph later forgets those placements and places the graph anew
// (forget_gone_placements). Tensor values in the dead buffer are lost.
#pragma once

#include <vector>

#include "loom/runtime/allocator.hpp"
#include "loom/registry/buffer.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/registry/registry.hpp"

namespace loom {

class Executor {
 public:
  // device must outlive the executor.
  static StatusOr<std::unique_ptr<Executor>> create(registry::Device* device);

  // Plan and place every tensor of the graph that has no memory yet in the
  // compute buffer (grown when too small). Leafs that already have data must
  // live in buffers the device supports.
  Status allocate(Graph& graph);
  // allocate() if needed, check every node is supported, run, wait.
  Status compute(Graph& graph);
  registry::Device* device() const { return device_; }
  size_t compute_buffer_size() const { return buffer_.size(); }

 private:
  explicit Executor(registry::Device* device) : device_(device) {}
  registry::Device* device_;
  Buffer buffer_;
  // Lives as long as buffer_: the placements' token (Tensor::placed_by).
  std::shared_ptr<const int> placement_ = std::make_shared<const int>(0);
  Stream stream_;
  uint64_t allocated_fingerprint_ = 0;
  uint64_t checked_fingerprint_ = 0;  // every node of this structure is supported
  bool checked_ = false;
  bool allocated_ = false;
};

// Place tensors (typically weights) in a new buffer of the device, packed at
// the buffer type's alignment. Tensors must have no data yet. `buft`: one of
// the device's buffer types (nullptr: its default).
StatusOr<Buffer> allocate_tensors(registry::Device& device, const std::vector<Tensor*>& tensors,
                                  loom_buffer_type_t* buft = nullptr);

// Host <-> tensor copies through the tensor's buffer. offset/size in bytes
// within the tensor's dense data; the tensor must be contiguous.
Status tensor_set(Tensor* t, const void* data, size_t size, size_t offset = 0);
Status tensor_get(const Tensor* t, void* data, size_t size, size_t offset = 0);

}  // namespace loom
