// The CPU support table (the op set's rules, common/op_check.h: the
// kernels handle every well-formed node) and the node -> kernel dispatch
// over the thread pool.
#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>

#include "common/env.h"
#include "common/glue.h"
#include "common/op_check.h"
#include "common/type_traits.h"
#include "ops/ops.h"
#include "weight_layout.h"

namespace loom::cpu {

namespace {

Kernel kernel_for(int32_t op) {
  switch (op) {
    case LOOM_OP_GET_ROWS: return kernel_get_rows;
    case LOOM_OP_ADD:
    case LOOM_OP_SUB:
    case LOOM_OP_MUL:
    case LOOM_OP_DIV: return kernel_binary;
    case LOOM_OP_SCALE:
    case LOOM_OP_SILU:
    case LOOM_OP_GELU:
    case LOOM_OP_RELU:
    case LOOM_OP_TANH: return kernel_unary;
    case LOOM_OP_SWIGLU: return kernel_swiglu;
    case LOOM_OP_RMS_NORM:
    case LOOM_OP_NORM: return kernel_norm;
    case LOOM_OP_ROPE: return kernel_rope;
    case LOOM_OP_SOFT_MAX: return kernel_soft_max;
    case LOOM_OP_CPY:
    case LOOM_OP_CONT: return kernel_copy;
    case LOOM_OP_SET_ROWS: return kernel_set_rows;
    case LOOM_OP_ARGMAX: return kernel_argmax;
    case LOOM_OP_SUM_ROWS: return kernel_sum_rows;
    case LOOM_OP_TOP_K: return kernel_top_k;
    default: return nullptr;
  }
}

}  // namespace

const char* unsupported_reason(const loom_tensor_t* node) {
  if (node == nullptr) return "null node";
  if (node->op == LOOM_OP_NONE || is_view_op(node->op)) return nullptr;
  // Repacked weights (cpu_weights) are read only as a whole MUL_MAT A (one
  // matrix) or MUL_MAT_ID A (a stack of them, one per expert).
  for (int i = 0; i < LOOM_MAX_SRC; ++i) {
    const loom_tensor_t* s = node->src[i];
    if (s == nullptr || !is_repacked(s)) continue;
    const bool as_a = i == 0 && weight_layout_unsupported(s) == nullptr &&
                      ((node->op == LOOM_OP_MUL_MAT && s->ne[2] == 1) || node->op == LOOM_OP_MUL_MAT_ID);
    if (!as_a) return "reads a repacked cpu_weights tensor other than as a whole MUL_MAT or MUL_MAT_ID src0";
  }
  return common::check_node(node);
}

// Below this many multiply-adds / element updates a node runs on one thread;
// LOOM_CPU_PARALLEL_MIN_WORK overrides it (0: always use the pool, as the op
// tests do to exercise the threaded paths on small shapes). ~100k
// multiply-adds take a few microseconds on one thread, about what handing
// work to the pool and waiting for it costs (more when another process holds
// a core); 16384 made stories260K decode 25-30% slower.
constexpr int64_t kDefaultParallelMinWork = 100000;

// ATTENTION's multiply-adds count this many times: it reads the KV cache,
// rarely in L1/L2, each head's rows a separate short stream, so a decode step
// waits on memory and a second thread pays at a fifth of the work other nodes
// need (768-dim decode, ~33 keys: 11.6 -> 7.2 us per call with 2 threads).
constexpr int64_t kAttentionWorkWeight = 5;

// SILU, SWIGLU and GELU's elements count this many times: each is an exp
// (or a tanh) and a division, ~30 vector instructions per 8 lanes, where
// the elements of an ADD or a norm are a load and a store. So a 16-row
// step's SWIGLU (16 x 2,048) runs on the pool (BM_swiglu/16 on a Zen 5:
// 17.7 us on one thread, 8.8 on two); a decode row's stays on one.
constexpr int64_t kTranscendentalWorkWeight = 8;

int64_t parallel_min_work() {
  static const int64_t value = [] {
    return common::plugin_env_int("LOOM_CPU_PARALLEL_MIN_WORK", 0, INT64_MAX, kDefaultParallelMinWork);
  }();
  return value;
}

// Rough work of a node: multiply-adds for MUL_MAT, elements touched
// otherwise. ATTENTION counts elements too (K's, for decode): its real work
// follows `visible`, data the estimate cannot see, and a padded n_kv would
// wake the pool for decode steps that attend over a few rows.
int64_t work_estimate(const loom_tensor_t* node) {
  int64_t n = nelements(node);
  if ((node->op == LOOM_OP_MUL_MAT || node->op == LOOM_OP_MUL_MAT_ID) && node->src[0] != nullptr) {
    return n * node->src[0]->ne[0];
  }
  // The sparse products: the dense bound (the active share is data).
  if ((node->op == LOOM_OP_MUL_MAT_SPARSE_ROWS || node->op == LOOM_OP_MUL_MAT_SPARSE_COLS) && node->src[0]) {
    return nelements(node->src[0]) * node->ne[1];
  }
  for (int i = 0; i < LOOM_MAX_SRC; ++i) {
    if (node->src[i] != nullptr) n = std::max(n, nelements(node->src[i]));
  }
  return n;
}

int64_t Exec::claim_chunk(int ith, int nth, int64_t chunks) {
  if (nth > kOwners) {
    const int64_t c = next_chunk();
    return c < chunks ? c : -1;
  }
  for (int k = 0; k < nth; ++k) {
    const int owner = (ith + k) % nth;
    int64_t c0, c1;
    common::split_range(chunks, owner, nth, &c0, &c1);
    if (owned_[owner].next.load(std::memory_order_relaxed) >= c1 - c0) continue;  // spent: skip the write
    const int64_t i = owned_[owner].next.fetch_add(1, std::memory_order_relaxed);
    if (i < c1 - c0) return c0 + i;
  }
  return -1;
}

void* Exec::scratch(size_t bytes) {
  constexpr size_t kAlign = 64;
  if (scratch_.size() < bytes + kAlign) scratch_.resize(bytes + kAlign);
  const auto p = reinterpret_cast<uintptr_t>(scratch_.data());
  return scratch_.data() + ((kAlign - p % kAlign) % kAlign);
}

loom_status_t* run_node(common::ThreadPool& pool, std::vector<uint8_t>& scratch, const loom_tensor_t* node) {
  if (node == nullptr) return common::make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cpu.compute] null node");
  if (node->op == LOOM_OP_NONE || is_view_op(node->op)) return nullptr;
  if (const char* why = unsupported_reason(node)) {
    return common::make_status(LOOM_STATUS_UNIMPLEMENTED,
                               "[cpu.compute] unsupported node " + describe_node(node) + ": " + why);
  }
  if (nelements(node) == 0) return nullptr;
  if (loom_status_t* st = common::check_node_memory("cpu.compute", node, LOOM_MAX_SRC)) return st;
  try {
    // Waking the pool costs microseconds; tiny nodes (decode-size norms,
    // adds) finish sooner on the calling thread alone.
    const bool transcendental =
        node->op == LOOM_OP_SILU || node->op == LOOM_OP_SWIGLU || node->op == LOOM_OP_GELU;
    const int64_t work = node->op == LOOM_OP_ATTENTION ? kAttentionWorkWeight * attention_work(node)
                         : transcendental         ? kTranscendentalWorkWeight * work_estimate(node)
                                                  : work_estimate(node);
    Exec ex(pool, work >= parallel_min_work(), scratch);
    if (node->op == LOOM_OP_MUL_MAT) {
      run_mul_mat(node, ex);
    } else if (node->op == LOOM_OP_MUL_MAT_ID) {
      run_mul_mat_id(node, ex);
    } else if (node->op == LOOM_OP_ATTENTION) {
      run_attention(node, ex);
    } else if (node->op == LOOM_OP_MUL_MAT_SPARSE_ROWS || node->op == LOOM_OP_MUL_MAT_SPARSE_COLS) {
      run_mul_mat_sparse(node, ex);
    } else {
      const Kernel kernel = kernel_for(node->op);
      ex.run([&](int ith, int nth) { kernel(node, ith, nth); });
    }
  } catch (const KernelError& e) {
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT,
                               "[cpu.compute] node " + describe_node(node) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return common::make_status(LOOM_STATUS_RESOURCE_EXHAUSTED,
                               "[cpu.compute] node " + describe_node(node) + ": out of host memory");
  } catch (const std::exception& e) {
    return common::make_status(LOOM_STATUS_INTERNAL,
                               "[cpu.compute] node " + describe_node(node) + ": " + e.what());
  }
  return nullptr;
}

}  // namespace loom::cpu
