// A loom stream on a CUDA device: one cudaStream_t (non-blocking), its
// cuBLAS handle, scratch memory and the error word its kernels write.
// compute() enqueues a graph's kernels and returns (LOOM_DEVICE_CAP_ASYNC);
// synchronize() waits and reports CUDA errors and the kernels' input
// errors (row index, visible count) as statuses. Events are cudaEvents.
// CUDA graphs (on by default, LOOM_CUDA_GRAPHS=0 turns them off): a
// decode-sized graph (every MUL_MAT with at most kGemvMaxCols columns)
// computed twice in a row with the same key (the host's fingerprint plus
// every node's addresses and params) is captured as a CUDA graph on its
// second run and replayed while the key stays; a new key drops it (debug
// log). The first run of a key is eager and sizes the scratch, so a
// capture never allocates.
// One thread at a time per stream (plugin.h).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "loom/plugin.h"
#include "ops/act_cache.h"
#include "ops/ops.h"
#include "scratch.h"

namespace loom::cuda {

class Device;

class Stream final {
 public:
  static loom_status_t* create(Device* device, loom_stream_t** out);
  ~Stream();
  static Stream* from(loom_stream_t* s) { return static_cast<Stream*>(s->context); }
  static bool is_ours(const loom_stream_t* s);
  cudaStream_t stream() const { return stream_; }

  loom_status_t* compute(const loom_graph_t* graph);
  loom_status_t* synchronize();
  loom_status_t* set_async(loom_tensor_t* t, const void* data, size_t offset, size_t size);
  loom_status_t* get_async(const loom_tensor_t* t, void* data, size_t offset, size_t size);
  loom_status_t* record(loom_event_t* e);
  loom_status_t* wait(loom_event_t* e);

 private:
  explicit Stream(Device* device);
  loom_status_t* init();
  // UNIMPLEMENTED for the first node the kernels do not run (support.h),
  // INVALID_ARGUMENT for one without memory; nothing is launched.
  loom_status_t* check_graph(const loom_graph_t* graph);
  // Enqueue every node of graph with ctx.
  loom_status_t* launch_all(const LaunchContext& ctx, const loom_graph_t* graph);
  // The graph path: replay, capture, or false to run eagerly.
  bool run_as_cuda_graph(const LaunchContext& ctx, const loom_graph_t* graph, loom_status_t** st);
  void drop_cuda_graph();

  loom_stream_t raw_{};
  Device* device_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  KernelFault* error_ = nullptr;       // device word (ops/fault.h)
  KernelFault* error_host_ = nullptr;  // pinned mirror
  int32_t* counters_ = nullptr;        // ops.h kCounterSlots, zero between kernels
  bool capturing_ = false;  // the scratches must not grow while capturing
  DeviceScratch scratch_;      // per node
  DeviceScratch act_scratch_;  // B's 8-bit blocks, kept across nodes (act_cache_)
  ActCache act_cache_;
  bool graphs_ = false;     // LOOM_CUDA_GRAPHS
  bool fuse_ = true;        // LOOM_CUDA_FUSE
  uint64_t graph_key_ = 0;
  bool graph_failed_ = false;  // capture of graph_key_ failed: stay eager
  std::vector<char> ran_early_;  // launch_all: nodes launched beside an earlier one
  cudaGraphExec_t graph_exec_ = nullptr;
};

class Event {
 public:
  static loom_status_t* create(Device* device, loom_event_t** out);
  ~Event();
  static Event* from(loom_event_t* e) { return static_cast<Event*>(e->context); }
  static bool is_ours(const loom_event_t* e);
  cudaEvent_t event() const { return event_; }
  loom_status_t* synchronize();

 private:
  explicit Event(Device* device);
  loom_event_t raw_{};
  Device* device_;
  cudaEvent_t event_ = nullptr;
};

}  // namespace loom::cuda
