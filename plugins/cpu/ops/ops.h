// CPU kernels: the op support table, node -> kernel dispatch, and the row
// read/write helpers every kernel uses. Kernels are the plain reference path
// other plugins are compared against: readable, byte strides everywhere,
// compute in f32 with double accumulation for reductions.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "common/op_info.h"
#include "common/thread_pool.h"
#include "loom/plugin.h"

namespace loom::cpu {

// Thrown by a kernel on bad data that supports_op cannot see (e.g. a row
// index out of range); becomes an INVALID_ARGUMENT status at the stream.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// MUL_MAT with Q8_0 / Q4_0 A quantizes B to 8-bit blocks and uses integer
// dot products (matmul_int8.cpp) in builds with AVX2 + FMA + F16C (the
// cpu-avx2 and cpu-avx512 variants); 0 elsewhere. The cost hint follows it.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define LOOM_CPU_INT8_DOT 1
#else
#define LOOM_CPU_INT8_DOT 0
#endif

// LOOM_CPU_INT8_DOT of the build the kernels were compiled in (plugin.cpp
// and weight_layout.cpp are baseline code and ask this).
bool int8_dot_built();

// A kernel computes its share [ith of nth] of node `dst`; sources are dst->src.
using Kernel = void (*)(const loom_tensor_t* dst, int ith, int nth);

// Shared op facts (common/op_info.h).
using common::describe_node;
using common::op_name;

// nullptr when the CPU kernels can run `node`, else a static reason
// ("types", "shapes", ...). Never allocates.
const char* unsupported_reason(const loom_tensor_t* node);
inline bool supports_op(const loom_tensor_t* node) { return unsupported_reason(node) == nullptr; }

// Run one node on the pool (views and NONE are no-ops). Returns NULL or a
// status naming the op, the node and its types. Not thread-safe per pool.
// Rough work of a node: multiply-adds for MUL_MAT, elements touched otherwise
// (ATTENTION included: its real work depends on `visible`, which is data).
int64_t work_estimate(const loom_tensor_t* node);
// ATTENTION's multiply-adds over the rows its `visible` input says (read at
// run time, when the data is there; plans use work_estimate).
int64_t attention_work(const loom_tensor_t* node);
// Nodes with less work than this run on the calling thread alone
// (LOOM_CPU_PARALLEL_MIN_WORK, default 100000).
int64_t parallel_min_work();

// loom.cost: estimated microseconds for node with `threads` threads; 0 for
// views, < 0 for nodes this plugin does not run (cost.cpp).
double op_time_us(const loom_tensor_t* node, int threads);

// How one node's work is run: on every thread of the pool, or on the calling
// thread alone for small nodes, with scratch memory the node's threads share.
class Exec {
 public:
  Exec(common::ThreadPool& pool, bool parallel, std::vector<uint8_t>& scratch)
      : pool_(pool), parallel_(parallel), scratch_(scratch) {}
  int threads() const { return parallel_ ? pool_.size() : 1; }
  // fn(ith, nth) for each of threads() slots; returns when all are done.
  // Slots may run one after another on one thread (common::ThreadPool), so
  // they must never wait for each other.
  template <typename Fn>
  void run(Fn&& fn) {
    chunk_.store(0, std::memory_order_relaxed);
    for (int i = 0; i < std::min(threads(), kOwners); ++i) owned_[i].next.store(0, std::memory_order_relaxed);
    if (!parallel_ || pool_.size() == 1) {
      fn(0, 1);
    } else {
      pool_.run([&](int ith, int nth) { fn(ith, nth); });
    }
  }
  // Inside run(): the next unclaimed chunk index (0, 1, 2, ... across all
  // threads), so a thread that starts late or runs slow takes fewer chunks.
  // Which thread computes a chunk does not change its result.
  int64_t next_chunk() { return chunk_.fetch_add(1, std::memory_order_relaxed); }
  // Inside run(), slot ith of nth: the next unclaimed of `chunks` chunks, -1
  // when none is left. Slot ith first takes its own share (split_range of
  // the chunks) in order, then the unclaimed chunks of the other shares.
  // So, unless a slot starts late or runs slow, each thread reads one
  // contiguous stream, and the same rows step after step, where next_chunk
  // hands the chunks out in arrival order. Every chunk is claimed once.
  // More than kOwners slots share next_chunk's order.
  int64_t claim_chunk(int ith, int nth, int64_t chunks);
  // At least `bytes` of 64-byte aligned memory, valid until the next node;
  // call before run(), not inside.
  void* scratch(size_t bytes);

 private:
  common::ThreadPool& pool_;
  bool parallel_;
  std::vector<uint8_t>& scratch_;
  std::atomic<int64_t> chunk_{0};
  static constexpr int kOwners = 16;
  struct alignas(64) Owned {
    std::atomic<int64_t> next;  // claims of this share so far (set in run())
  };
  Owned owned_[kOwners];
};

// Run one node; `scratch` is the device's, reused across nodes.
loom_status_t* run_node(common::ThreadPool& pool, std::vector<uint8_t>& scratch, const loom_tensor_t* node);

// ------------------------------------------------------------ tensor access

using common::is_view_op;
inline int64_t nrows(const loom_tensor_t* t) { return t->ne[1] * t->ne[2] * t->ne[3]; }
inline int64_t nelements(const loom_tensor_t* t) { return t->ne[0] * nrows(t); }

// Address of element (or block, for quantized types) i0 of a row.
inline char* elem_ptr(const loom_tensor_t* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return static_cast<char*>(t->data) + i0 * static_cast<int64_t>(t->nb[0]) +
         i1 * static_cast<int64_t>(t->nb[1]) + i2 * static_cast<int64_t>(t->nb[2]) +
         i3 * static_cast<int64_t>(t->nb[3]);
}
inline char* row_ptr(const loom_tensor_t* t, int64_t i1, int64_t i2, int64_t i3) {
  return elem_ptr(t, 0, i1, i2, i3);
}
// Row r (flat over dims 1..3, row-major) -> (i1, i2, i3).
inline void unravel_row(const loom_tensor_t* t, int64_t r, int64_t* i1, int64_t* i2, int64_t* i3) {
  if (r < t->ne[1]) {  // every row of a 2-D tensor: no divisions (kernels call this per stored group)
    *i1 = r, *i2 = 0, *i3 = 0;
    return;
  }
  *i1 = r % t->ne[1];
  *i2 = (r / t->ne[1]) % t->ne[2];
  *i3 = r / (t->ne[1] * t->ne[2]);
}

// One element of a float or integer type as float.
float load_elem(int32_t type, const char* p);
// Store v as one element of a float type.
void store_elem(int32_t type, char* p, float v);
// Row (i1, i2, i3) of any type -> ne[0] floats (dequantizes blocks).
void load_row(const loom_tensor_t* t, int64_t i1, int64_t i2, int64_t i3, float* out);
// ne[0] floats -> row (i1, i2, i3) of a float or quantized type.
void store_row(const loom_tensor_t* t, int64_t i1, int64_t i2, int64_t i3, const float* in);
// Index value of an I32 or I64 element.
int64_t load_index(const loom_tensor_t* t, int64_t i0, int64_t i1, int64_t i2);

// ------------------------------------------------------------ kernels
void kernel_binary(const loom_tensor_t* dst, int ith, int nth);    // ADD SUB MUL DIV
void kernel_unary(const loom_tensor_t* dst, int ith, int nth);     // SILU GELU RELU TANH SCALE
void kernel_swiglu(const loom_tensor_t* dst, int ith, int nth);
void kernel_norm(const loom_tensor_t* dst, int ith, int nth);      // NORM RMS_NORM
void run_mul_mat(const loom_tensor_t* dst, Exec& ex);  // quantizes B first on the int8 path
void run_mul_mat_sparse(const loom_tensor_t* dst, Exec& ex);  // MUL_MAT_SPARSE_ROWS / _COLS (sparse_matmul.cpp)
void run_mul_mat_id(const loom_tensor_t* dst, Exec& ex);  // MUL_MAT_ID: MUL_MAT per chosen expert (matmul_id.cpp)
void run_attention(const loom_tensor_t* dst, Exec& ex);   // splits decode over KV chunks (attention.cpp)
void kernel_rope(const loom_tensor_t* dst, int ith, int nth);
void kernel_soft_max(const loom_tensor_t* dst, int ith, int nth);
void kernel_copy(const loom_tensor_t* dst, int ith, int nth);      // CPY CONT
void kernel_get_rows(const loom_tensor_t* dst, int ith, int nth);
void kernel_set_rows(const loom_tensor_t* dst, int ith, int nth);
void kernel_argmax(const loom_tensor_t* dst, int ith, int nth);
void kernel_sum_rows(const loom_tensor_t* dst, int ith, int nth);
void kernel_top_k(const loom_tensor_t* dst, int ith, int nth);

}  // namespace loom::cpu
