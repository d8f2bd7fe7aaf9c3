// The kernels' host side: what a launch needs (the stream, its cuBLAS
// handle, scratch memory and error word), which nodes the kernels run
// (supports), and one launcher per op family (one .cu each). Launchers only
// enqueue work on ctx.stream; errors the kernels find (a row index out of
// range) are written to ctx.error and reported by the stream's
// synchronize. Thread-safety: a launch context belongs to one stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "cublas.h"
#include "loom/plugin.h"

namespace loom::cuda {

// Device scratch of the stream, grown on demand (the stream waits for its
// queued work before freeing a smaller one).
class Scratch {
 public:
  virtual ~Scratch() = default;
  // At least `bytes` of device memory valid until the next get on this
  // stream; nullptr (and a status in *st) when out of memory.
  virtual void* get(size_t bytes, loom_status_t** st) = 0;
};

// Codes kernels write into the error word (first error wins).
enum KernelError : int32_t {
  kErrNone = 0,
  kErrRowIndex = 1,   // GET_ROWS / SET_ROWS index outside the rows
  kErrVisible = 2,    // ATTENTION visible[t] outside [0, n_kv]
};

struct LaunchContext {
  cudaStream_t stream = nullptr;
  const Cublas* cublas = nullptr;  // nullptr or !ok(): no cuBLAS
  cublasHandle_t blas = nullptr;   // bound to stream
  Scratch* scratch = nullptr;
  int32_t* error = nullptr;        // device word, 0 = fine
  int sm_count = 1;
};

// Whether the kernels run `node` (a well-formed compute node per
// common::check_node): types, layouts (quantized rows contiguous, result
// rows dense where a kernel writes whole rows).
bool supports_node(const loom_tensor_t* node);

// Enqueue one node; NULL or a status naming the node and the CUDA error.
loom_status_t* launch_node(const LaunchContext& ctx, const loom_tensor_t* node);

// Per family (ops/<family>.cu).
loom_status_t* launch_elementwise(const LaunchContext& ctx, const loom_tensor_t* node);
loom_status_t* launch_rows_reduce(const LaunchContext& ctx, const loom_tensor_t* node);  // norms, softmax, sum, argmax
loom_status_t* launch_rope(const LaunchContext& ctx, const loom_tensor_t* node);
loom_status_t* launch_rows(const LaunchContext& ctx, const loom_tensor_t* node);  // get_rows, set_rows
loom_status_t* launch_copy(const LaunchContext& ctx, const loom_tensor_t* node);  // cpy, cont
loom_status_t* launch_mul_mat(const LaunchContext& ctx, const loom_tensor_t* node);
loom_status_t* launch_attention(const LaunchContext& ctx, const loom_tensor_t* node);

// The status after a launch: NULL when cudaGetLastError is clean, else
// INTERNAL "[cuda.compute] node ...: <what>: <cuda error>".
loom_status_t* launch_status(const loom_tensor_t* node, const char* what);

}  // namespace loom::cuda

namespace loom::cuda {
// Whether the plugin's kernels have a binary (or PTX) for the current
// device; *why says which architectures it was built for when not.
bool kernels_run_here(std::string* why);
}  // namespace loom::cuda
