// The kernels' host side: what a launch needs (the stream, its cuBLAS
// handle, scratch memory, B's cached 8-bit blocks and the fault word) and
// one launcher per op family (one .cu each; which nodes they run is
// support.h's table). Launchers only enqueue work on ctx.stream; errors the
// kernels find (a row index out of range) are written to ctx.error
// (fault.h) and reported by the stream's synchronize. Thread-safety: a
// launch context belongs to one stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "cublas.h"
#include "fault.h"
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
  // Changes whenever the memory get returns is reallocated.
  virtual uint64_t generation() const = 0;
};

class ActCache;
struct ActQ8;

constexpr int64_t kCounterSlots = 65536;

struct LaunchContext {
  cudaStream_t stream = nullptr;
  const Cublas* cublas = nullptr;  // nullptr or !ok(): no cuBLAS
  cublasHandle_t blas = nullptr;   // bound to stream
  Scratch* scratch = nullptr;
  Scratch* act_scratch = nullptr;  // B's 8-bit blocks (kept across nodes: act_cache)
  ActCache* act_cache = nullptr;   // nullptr: quantize B at every MUL_MAT
  KernelFault* error = nullptr;    // device word, code 0 = fine
  // kCounterSlots device ints, zero between kernels: a kernel that counts
  // its blocks in some sets them back to zero (attention_split.cu).
  int32_t* counters = nullptr;
  int sm_count = 1;
  bool f16_gemm = false;  // prefill GEMMs may round A and B to F16 (Device::f16_gemm)
  bool f16_attention = false;  // prefill ATTENTION on tensor cores (Device::f16_attention)
  bool tc_gemm = false;        // prefill MUL_MAT on wmma when cuBLAS is absent (Device::tc_gemm)
  bool fuse = true;       // pairs of nodes as one kernel (fusion.h; LOOM_CUDA_FUSE=0: off)
  // A MUL_MAT's launch only: the ADD fused into its GEMV's store (fusion.h).
  const loom_tensor_t* fused_add = nullptr;
  // A MUL_MAT's launch only: up to two more MUL_MATs over the same B run in
  // the same GEMV grid (fusion.h's gemv_peer), nullptr-terminated.
  const loom_tensor_t* gemv_peers[2] = {nullptr, nullptr};
};

// Enqueue one node that passed unsupported_reason (support.h); NULL or a
// status naming the node and the CUDA error.
loom_status_t* launch_node(const LaunchContext& ctx, const loom_tensor_t* node);

// Per family (ops/<family>.cu).
// q8 (binary ops only): the result also rounded to B's 8-bit blocks of 32,
// as launch_norm_mul's.
loom_status_t* launch_elementwise(const LaunchContext& ctx, const loom_tensor_t* node, ActQ8* q8 = nullptr);
loom_status_t* launch_rows_reduce(const LaunchContext& ctx, const loom_tensor_t* node);  // norms, softmax, sum, argmax
// A norm and the MUL fusion.h pairs with it, as one kernel (reduce.cu).
// q8 != nullptr: the kernel also rounds the product to B's 8-bit blocks of
// 32 (act_quant.cuh, quantize_b's layout) in the stream's act scratch, for
// the MUL_MAT that reads it next (the stream keeps them in its ActCache).
loom_status_t* launch_norm_mul(const LaunchContext& ctx, const loom_tensor_t* norm, const loom_tensor_t* mul,
                               ActQ8* q8 = nullptr);
loom_status_t* launch_rope(const LaunchContext& ctx, const loom_tensor_t* node);
// ROPE and the SET_ROWS after it (and V's, when rr.set_v) as one kernel.
struct RopeRows;
loom_status_t* launch_rope_rows(const LaunchContext& ctx, const loom_tensor_t* node, const RopeRows& rr);
loom_status_t* launch_rows(const LaunchContext& ctx, const loom_tensor_t* node);  // get_rows, set_rows
loom_status_t* launch_copy(const LaunchContext& ctx, const loom_tensor_t* node);  // cpy, cont
loom_status_t* launch_mul_mat(const LaunchContext& ctx, const loom_tensor_t* node);
// Whether launch_mul_mat runs the node on a GEMV (gemv_kernel.cuh's store,
// where a fused ADD can go).
bool gemv_takes(const LaunchContext& ctx, const loom_tensor_t* node);
// Whether the GEMV kernel of a MUL_MAT gemv_takes reads B itself (float A)
// rather than B's 8-bit blocks made before it (quantized A).
bool gemv_reads_b(const LaunchContext& ctx, const loom_tensor_t* node);
loom_status_t* launch_attention(const LaunchContext& ctx, const loom_tensor_t* node);
// Decode; q8: the result also rounded to B's 8-bit blocks of 32 for the
// product after it (as launch_norm_mul's), the node's Dv a multiple of 32.
// Prefill MUL_MAT on tensor cores without cuBLAS (gemm_tc.cu): F16 or
// quantized A, f32 B of more than kGemvMaxCols columns.
bool gemm_tc_fits(const loom_tensor_t* node);
loom_status_t* launch_gemm_tc(const LaunchContext& ctx, const loom_tensor_t* node);
// Prefill ATTENTION on tensor cores (attention_tc.cu): F16 K and V, head
// sizes up to kTcMaxDim, more than kSplitMaxTokens queries.
bool attention_tc_fits(const loom_tensor_t* node);
loom_status_t* launch_attention_tc(const LaunchContext& ctx, const loom_tensor_t* node);
loom_status_t* launch_attention_split(const LaunchContext& ctx, const loom_tensor_t* node, ActQ8* q8 = nullptr);
loom_status_t* launch_mul_mat_id(const LaunchContext& ctx, const loom_tensor_t* node);        // ABI 1.5
// MUL_MAT_ID's prefill grouped by expert (mul_mat_id_grouped.cu): whether
// it takes the node, and the launch (round: B rounded to 8-bit blocks).
bool mul_mat_id_grouped_fits(const loom_tensor_t* node);
loom_status_t* launch_mul_mat_id_grouped(const LaunchContext& ctx, const loom_tensor_t* node, bool round);
loom_status_t* launch_top_k(const LaunchContext& ctx, const loom_tensor_t* node);             // ABI 1.5
loom_status_t* launch_sparse(const LaunchContext& ctx, const loom_tensor_t* node);  // ABI 1.3 sparse products

// The status after a launch: NULL when cudaGetLastError is clean, else
// INTERNAL "[cuda.compute] node ...: <what>: <cuda error>".
loom_status_t* launch_status(const loom_tensor_t* node, const char* what);

}  // namespace loom::cuda

namespace loom::cuda {
// Whether the plugin's kernels have a binary (or PTX) for the current
// device; *why says which architectures it was built for when not.
bool kernels_run_here(std::string* why);
}  // namespace loom::cuda
