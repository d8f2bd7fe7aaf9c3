// BLAS kernels: the support table (MUL_MAT only; views and leafs are no-ops),
// node dispatch, and the per-stream scratch the kernels convert operands into.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include <cblas.h>

#include "common/op_info.h"
#include "common/thread_pool.h"
#include "loom/plugin.h"

namespace loom::blas {

// The largest dimension or stride a BLAS call takes (its integer type).
inline constexpr int64_t kMaxBlasInt = std::numeric_limits<blasint>::max();

// Thrown by a kernel on data supports_op cannot see; becomes INVALID_ARGUMENT.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// F32 scratch owned by a stream: grown on demand, never shrunk, reused by
// every compute of that stream (no allocation per call once warm).
class Scratch {
 public:
  // At least n floats; contents unspecified.
  float* a(size_t n) { return grow(a_, n); }
  float* b(size_t n) { return grow(b_, n); }
  float* c(size_t n) { return grow(c_, n); }
  size_t capacity() const { return a_.size() + b_.size() + c_.size(); }

 private:
  static float* grow(std::vector<float>& v, size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
  }
  std::vector<float> a_, b_, c_;
};

// What a kernel may use: the device's pool (operand conversion) and the
// stream's scratch.
struct Workspace {
  common::ThreadPool* pool;
  Scratch* scratch;
};

// Shared op facts (common/op_info.h).
using common::describe_node;
using common::op_name;

using common::is_view_op;

// nullptr when this plugin can run `node`, else a static reason ("op",
// "types", "shapes", ...). Never allocates.
const char* unsupported_reason(const loom_tensor_t* node);
inline bool supports_op(const loom_tensor_t* node) { return unsupported_reason(node) == nullptr; }

// loom.cost: estimated microseconds for node with `threads` threads; 0 for
// views, < 0 for nodes this plugin does not run (cost.cpp).
double op_time_us(const loom_tensor_t* node, int threads);

// Run one node (views and NONE are no-ops). NULL or a status naming the node.
loom_status_t* run_node(Workspace& ws, const loom_tensor_t* node);

// MUL_MAT through cblas_sgemm / cblas_sgemv. Throws on failure.
void mul_mat(const loom_tensor_t* dst, Workspace& ws);

}  // namespace loom::blas
