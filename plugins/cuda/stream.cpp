#include "stream.h"

#include <cstring>
#include <memory>
#include <string>

#include "common/env.h"
#include "common/glue.h"
#include "common/op_check.h"
#include "common/op_info.h"
#include "common/type_traits.h"
#include "device.h"
#include "ops/act_quant.cuh"
#include "ops/fusion.h"
#include "ops/gemv.h"
#include "ops/support.h"
#include "weight_layout.h"

namespace loom::cuda {
namespace {

using common::guarded;
using common::make_status;

loom_status_t* cuda_status(const Device* d, const char* op, cudaError_t e) {
  cudaGetLastError();
  return make_status(e == cudaErrorMemoryAllocation ? LOOM_STATUS_RESOURCE_EXHAUSTED : LOOM_STATUS_INTERNAL,
                     "[cuda." + std::string(op) + "] " + d->name() + ": " + cudaGetErrorName(e) + " (" +
                         cudaGetErrorString(e) + ")");
}

void s_destroy(loom_stream_t* s) {
  if (s != nullptr) delete Stream::from(s);
}
loom_status_t* s_compute(loom_stream_t* s, const loom_graph_t* g) {
  return guarded("cuda.compute", [&] { return Stream::from(s)->compute(g); });
}
loom_status_t* s_synchronize(loom_stream_t* s) {
  return guarded("cuda.synchronize", [&] { return Stream::from(s)->synchronize(); });
}
loom_status_t* s_set_async(loom_stream_t* s, loom_tensor_t* t, const void* data, size_t offset, size_t size) {
  return guarded("cuda.set_tensor_async", [&] { return Stream::from(s)->set_async(t, data, offset, size); });
}
loom_status_t* s_get_async(loom_stream_t* s, const loom_tensor_t* t, void* data, size_t offset, size_t size) {
  return guarded("cuda.get_tensor_async", [&] { return Stream::from(s)->get_async(t, data, offset, size); });
}
loom_status_t* s_record(loom_stream_t* s, loom_event_t* e) {
  return guarded("cuda.record_event", [&] { return Stream::from(s)->record(e); });
}
loom_status_t* s_wait(loom_stream_t* s, loom_event_t* e) {
  return guarded("cuda.wait_event", [&] { return Stream::from(s)->wait(e); });
}

const loom_stream_iface_t kStreamIface = {
    sizeof(loom_stream_iface_t), s_destroy, s_compute, s_synchronize, s_set_async, s_get_async, s_record, s_wait,
};

void e_destroy(loom_event_t* e) {
  if (e != nullptr) delete Event::from(e);
}
loom_status_t* e_synchronize(loom_event_t* e) {
  return guarded("cuda.event_synchronize", [&] { return Event::from(e)->synchronize(); });
}

const loom_event_iface_t kEventIface = {sizeof(loom_event_iface_t), e_destroy, e_synchronize};

}  // namespace

// ------------------------------------------------------------------ stream

Stream::Stream(Device* device)
    : raw_{sizeof(loom_stream_t), &kStreamIface, device->handle(), this},
      device_(device),
      scratch_(device->name(), "scratch", &stream_, &capturing_),
      act_scratch_(device->name(), "activation blocks", &stream_, &capturing_) {}

bool Stream::is_ours(const loom_stream_t* s) { return s != nullptr && s->iface == &kStreamIface; }

loom_status_t* Stream::create(Device* device, loom_stream_t** out) {
  std::unique_ptr<Stream> s(new Stream(device));
  if (loom_status_t* st = s->init()) return st;
  *out = &s.release()->raw_;
  return nullptr;
}

loom_status_t* Stream::init() {
  device_->make_current();
  cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  if (e != cudaSuccess) return cuda_status(device_, "stream_create", e);
  if ((e = cudaMalloc(reinterpret_cast<void**>(&error_), sizeof(KernelFault))) != cudaSuccess) return cuda_status(device_, "stream_create", e);
  if ((e = cudaMemset(error_, 0, sizeof(KernelFault))) != cudaSuccess) return cuda_status(device_, "stream_create", e);
  if ((e = cudaMallocHost(reinterpret_cast<void**>(&error_host_), sizeof(KernelFault))) != cudaSuccess) return cuda_status(device_, "stream_create", e);
  *error_host_ = KernelFault{};
  const size_t counter_bytes = static_cast<size_t>(kCounterSlots) * sizeof(int32_t);
  if ((e = cudaMalloc(reinterpret_cast<void**>(&counters_), counter_bytes)) != cudaSuccess) return cuda_status(device_, "stream_create", e);
  if ((e = cudaMemset(counters_, 0, counter_bytes)) != cudaSuccess) return cuda_status(device_, "stream_create", e);
  graphs_ = common::plugin_env_flag("LOOM_CUDA_GRAPHS", true);
  fuse_ = common::plugin_env_flag("LOOM_CUDA_FUSE", true);
  const Cublas* cb = device_->cublas();
  if (cb != nullptr && cb->ok()) {
    if (cb->create(&blas_) != CUBLAS_STATUS_SUCCESS) {
      blas_ = nullptr;  // the GEMV kernels take every MUL_MAT then
      common::plugin_log(LOOM_LOG_LEVEL_WARN, "cuda", device_->name() + ": cublasCreate failed; MUL_MAT uses the GEMV kernels");
    } else {
      cb->set_stream(blas_, stream_);
      cb->set_math_mode(blas_, CUBLAS_DEFAULT_MATH);  // f32 results: no TF32
    }
  }
  return nullptr;
}

Stream::~Stream() {
  device_->make_current();
  if (stream_) cudaStreamSynchronize(stream_);
  drop_cuda_graph();
  if (blas_) device_->cublas()->destroy(blas_);
  if (error_) cudaFree(error_);
  if (counters_) cudaFree(counters_);
  if (error_host_) cudaFreeHost(error_host_);
  if (stream_) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

loom_status_t* Stream::compute(const loom_graph_t* graph) {
  if (graph == nullptr) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cuda.compute] graph is null");
  device_->make_current();
  LaunchContext ctx;
  ctx.stream = stream_;
  ctx.cublas = device_->cublas();
  ctx.blas = blas_;
  ctx.scratch = &scratch_;
  ctx.act_scratch = &act_scratch_;
  ctx.act_cache = &act_cache_;
  act_cache_.clear();  // B's blocks are kept within one graph only
  ctx.error = error_;
  ctx.counters = counters_;
  ctx.sm_count = device_->sm_count();
  ctx.f16_gemm = device_->f16_gemm();
  ctx.f16_attention = device_->f16_attention();
  ctx.tc_gemm = device_->tc_gemm();
  ctx.fuse = fuse_;
  loom_status_t* st = nullptr;
  // A replay skips check_graph: its key (fingerprint and addresses) is the
  // one of a graph that passed it.
  if (graphs_ && run_as_cuda_graph(ctx, graph, &st)) return st;
  if ((st = check_graph(graph)) != nullptr) return st;
  return launch_all(ctx, graph);
}

namespace {
bool is_compute(const loom_tensor_t* n) { return n != nullptr && n->op != LOOM_OP_NONE && !common::is_view_op(n->op); }

// How many compute nodes after a MUL_MAT the stream looks for products over
// the same B to run in its grid (gate and up, back to back in the llama
// graph; Q, K and V lie between RoPEs whose memory K's and V's results
// reuse, so gemv_peer keeps them apart).
constexpr int kPeerWindow = 6;

// Whether the kernel writing `mul` (node `at`: the fused norm x weight, or
// a SWIGLU) should also round it to 8-bit blocks of 32: the first MUL_MAT
// after it that reads `mul` as B runs a GEMV over a quantized A of
// 32-element blocks (a Q8_0 / Q4_0 model's Q, K and V projections after the
// norm, its down projection after SWIGLU), which then finds them in the act
// cache instead of launching quantize_b.
bool dense_f32(const loom_tensor_t* t) {
  return t->type == LOOM_TYPE_F32 && t->nb[0] == 4 && t->nb[1] == 4 * static_cast<size_t>(t->ne[0]) &&
         t->nb[2] == t->nb[1] * static_cast<size_t>(t->ne[1]) && t->nb[3] == t->nb[2] * static_cast<size_t>(t->ne[2]);
}

// The B through which the product after node `at` reads `mul`, when the
// kernel writing `mul` (the fused norm x weight, SWIGLU, the split
// ATTENTION's combine) should also round it to 8-bit blocks of 32: the
// first MUL_MAT after it that reads `mul` (or a reshape of it) as B runs a
// GEMV over a quantized A of 32-element blocks (a Q8_0 / Q4_0 model's Q, K
// and V projections after the norm, the attention output's after the
// attention, the down projection after SWIGLU), which then finds them in
// the act cache instead of launching quantize_b. nullptr: no such product.
const loom_tensor_t* rounds_for_next(const LaunchContext& ctx, const loom_graph_t* graph, int32_t at,
                                     const loom_tensor_t* mul) {
  // Dense, whole blocks (the kernels' element e of the result is quant e).
  if (ctx.act_cache == nullptr || ctx.act_scratch == nullptr || !dense_f32(mul) || mul->ne[0] % 32 != 0) {
    return nullptr;
  }
  for (int32_t i = at + 1; i < graph->n_nodes; ++i) {
    const loom_tensor_t* n = graph->nodes[i];
    if (n == nullptr || n->op != LOOM_OP_MUL_MAT) continue;
    const loom_tensor_t* b = n->src[1];
    const bool reshaped = b->view_src == mul && b->data == mul->data && dense_f32(b) && b->ne[0] % 32 == 0 &&
                          b->ne[0] * b->ne[1] * b->ne[2] * b->ne[3] == mul->ne[0] * mul->ne[1] * mul->ne[2] * mul->ne[3];
    if (b != mul && !reshaped) continue;
    const int32_t ta = n->src[0]->type;
    return common::type_traits(ta).is_quantized && act_block_elems(ta) == 32 && gemv_takes(ctx, n) ? b : nullptr;
  }
  return nullptr;
}
}  // namespace

loom_status_t* Stream::check_graph(const loom_graph_t* graph) {
  // Before any launch: a node the kernels cannot run must not reach them
  // (a half-launched graph or a kernel reading the wrong type).
  for (int32_t i = 0; i < graph->n_nodes; ++i) {
    const loom_tensor_t* node = graph->nodes[i];
    if (!is_compute(node)) continue;
    if (const char* why = unsupported_reason(node)) {
      return make_status(LOOM_STATUS_UNIMPLEMENTED, refusal_message(node, why));
    }
    if (loom_status_t* st = common::check_node_memory("cuda.compute", node, common::op_source_count(node->op))) return st;
  }
  return nullptr;
}

loom_status_t* Stream::launch_all(const LaunchContext& ctx, const loom_graph_t* graph) {
  // MUL_MATs already run beside an earlier one (gemv_peer).
  std::vector<char>& ran = ran_early_;
  ran.assign(static_cast<size_t>(graph->n_nodes), 0);
  for (int32_t i = 0; i < graph->n_nodes; ++i) {
    const loom_tensor_t* node = graph->nodes[i];
    if (!is_compute(node) || ran[static_cast<size_t>(i)]) continue;
    // The next compute node, when fusion.h runs the pair as one kernel.
    int32_t j = i + 1;
    while (j < graph->n_nodes && !is_compute(graph->nodes[j])) ++j;
    const loom_tensor_t* mul = ctx.fuse && j < graph->n_nodes ? fused_norm_mul(node, graph->nodes[j]) : nullptr;
    if (mul != nullptr) {
      ActQ8 q8{};
      const loom_tensor_t* b = rounds_for_next(ctx, graph, j, mul);
      if (loom_status_t* st = launch_norm_mul(ctx, node, mul, b ? &q8 : nullptr)) return st;
      if (ctx.act_cache != nullptr) ctx.act_cache->note_write(node), ctx.act_cache->note_write(mul);
      if (b) ctx.act_cache->store(b, 32, ctx.act_scratch->generation(), q8);
      i = j;
      continue;
    }
    // ROPE (Q) with the ROPE right after it (K), and K's ROPE with the
    // SET_ROWS of its result into a cache (and V's after it): one kernel.
    if (ctx.fuse && node->op == LOOM_OP_ROPE) {
      auto next_compute = [&](int32_t from) {
        while (from < graph->n_nodes && !is_compute(graph->nodes[from])) ++from;
        return from;
      };
      RopeRows rr;
      const loom_tensor_t* rope = node;
      int32_t last = i;
      if (j < graph->n_nodes && graph->nodes[j]->op == LOOM_OP_ROPE) {
        rr.q = node;
        rope = graph->nodes[j];
        last = j;
      }
      int32_t end = last;  // the last node the kernel runs
      const int32_t s = next_compute(last + 1);
      if (s < graph->n_nodes && fused_rope_set_rows(rope, graph->nodes[s], rr.perm)) {
        rr.set_k = graph->nodes[s];
        end = s;
        const int32_t v = next_compute(s + 1);
        if (v < graph->n_nodes && fused_second_set_rows(rope, rr.set_k, graph->nodes[v])) {
          rr.set_v = graph->nodes[v];
          end = v;
        }
      }
      if (rr.q != nullptr && !fused_rope_beside(rr.q, rope, rr)) {
        // Q and K apart: K's ROPE (and its stores) at its own turn.
        rr = RopeRows{};
        rope = node;
        end = i;
      }
      if (rr.q != nullptr || rr.set_k != nullptr) {
        if (loom_status_t* st = launch_rope_rows(ctx, rope, rr)) return st;
        for (const loom_tensor_t* w : {rr.q, rope, rr.set_k, rr.set_v}) {
          if (w != nullptr && ctx.act_cache != nullptr) ctx.act_cache->note_write(w);
        }
        i = end;
        continue;
      }
    }
    const loom_tensor_t* add = ctx.fuse && j < graph->n_nodes && node->op == LOOM_OP_MUL_MAT && gemv_takes(ctx, node)
                                   ? fused_mul_mat_add(node, graph->nodes[j], gemv_reads_b(ctx, node))
                                   : nullptr;
    if (add != nullptr) {
      LaunchContext with_add = ctx;
      with_add.fused_add = add;
      if (loom_status_t* st = launch_node(with_add, node)) return st;
      if (ctx.act_cache != nullptr) ctx.act_cache->note_write(node), ctx.act_cache->note_write(add);
      i = j;
      continue;
    }
    if (node->op == LOOM_OP_MUL_MAT && ctx.fuse && gemv_takes(ctx, node)) {
      LaunchContext group = ctx;
      int peers = 0;
      for (int32_t k = i + 1, seen = 0; k < graph->n_nodes && seen < kPeerWindow && peers < 2; ++k) {
        const loom_tensor_t* n = graph->nodes[k];
        if (!is_compute(n)) continue;
        ++seen;
        if (gemv_peer(graph, i, k) && gemv_takes(ctx, n) && is_split(n->src[0]) == is_split(node->src[0])) {
          group.gemv_peers[peers++] = n;
          ran[static_cast<size_t>(k)] = 1;
        }
      }
      if (peers > 0) {
        if (loom_status_t* st = launch_node(group, node)) return st;
        if (ctx.act_cache != nullptr) {
          ctx.act_cache->note_write(node);
          for (int p = 0; p < peers; ++p) ctx.act_cache->note_write(group.gemv_peers[p]);
        }
        continue;
      }
    }
    // SWIGLU, and the split ATTENTION (heads of whole blocks), rounding
    // their result for the product after them.
    const bool rounds = (node->op == LOOM_OP_SWIGLU ||
                         (node->op == LOOM_OP_ATTENTION && node_path(node) == Path::kAttentionSplit)) &&
                        ctx.fuse;
    if (const loom_tensor_t* b = rounds ? rounds_for_next(ctx, graph, i, node) : nullptr) {
      ActQ8 q8{};
      loom_status_t* st = node->op == LOOM_OP_SWIGLU ? launch_elementwise(ctx, node, &q8)
                                                     : launch_attention_split(ctx, node, &q8);
      if (st != nullptr) return st;
      ctx.act_cache->note_write(node);
      ctx.act_cache->store(b, 32, ctx.act_scratch->generation(), q8);
      continue;
    }
    if (loom_status_t* st = launch_node(ctx, node)) return st;
    if (ctx.act_cache != nullptr) ctx.act_cache->note_write(node);
  }
  return nullptr;
}

namespace {

// What a captured graph bakes in: the host's fingerprint and every node's
// and source's address and params (FNV-1a over 8-byte words: a decode step
// hashes a few thousand of them).
uint64_t graph_key(const loom_graph_t* g) {
  uint64_t h = 1469598103934665603ull ^ g->fingerprint;
  auto mix = [&h](uint64_t w) { h = (h ^ w) * 1099511628211ull; };
  for (int32_t i = 0; i < g->n_nodes; ++i) {
    const loom_tensor_t* t = g->nodes[i];
    if (t == nullptr) continue;
    mix(reinterpret_cast<uintptr_t>(t->data));
    static_assert(sizeof t->op_params % 8 == 0, "op_params in whole 8-byte words");
    uint64_t words[sizeof t->op_params / 8];
    std::memcpy(words, t->op_params, sizeof words);
    for (uint64_t w : words) mix(w);
    for (const loom_tensor_t* s : t->src) mix(s ? reinterpret_cast<uintptr_t>(s->data) : 0);
  }
  return h == 0 ? 1 : h;
}

// Graphs worth capturing: decode-sized, every MUL_MAT on the GEMV kernels
// (N <= kGemvMaxCols). Prefill keeps cuBLAS, which may allocate workspace
// and cannot run inside a capture here.
bool decode_sized(const loom_graph_t* g) {
  for (int32_t i = 0; i < g->n_nodes; ++i) {
    const loom_tensor_t* t = g->nodes[i];
    if (t != nullptr && t->op == LOOM_OP_MUL_MAT && t->src[1] != nullptr && t->src[1]->ne[1] > kGemvMaxCols) return false;
  }
  return true;
}

}  // namespace

void Stream::drop_cuda_graph() {
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  graph_exec_ = nullptr;
}

bool Stream::run_as_cuda_graph(const LaunchContext& eager_ctx, const loom_graph_t* graph, loom_status_t** st) {
  if (graph->fingerprint == 0) return false;
  const uint64_t key = graph_key(graph);
  if (key != graph_key_) {
    if (graph_exec_) common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "cuda", device_->name() + ": graph changed, CUDA graph dropped");
    drop_cuda_graph();
    graph_key_ = key;
    graph_failed_ = !decode_sized(graph);  // prefill: eager, never captured
    return false;  // first run of this key: eager (it also sizes the scratch)
  }
  if (graph_failed_) return false;  // capture failed for this key: eager
  if (graph_exec_ == nullptr) {
    // Second run with the same key: check, then capture. MUL_MAT runs on the
    // GEMV kernels here (cuBLAS may allocate workspace while capturing).
    if ((*st = check_graph(graph)) != nullptr) return true;
    LaunchContext ctx = eager_ctx;
    ctx.blas = nullptr;
    if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      cudaGetLastError();
      graphs_ = false;
      return false;
    }
    capturing_ = true;
    loom_status_t* launch = launch_all(ctx, graph);
    capturing_ = false;
    cudaGraph_t g = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream_, &g);
    if (launch != nullptr || end != cudaSuccess || g == nullptr ||
        cudaGraphInstantiate(&graph_exec_, g, 0) != cudaSuccess) {
      if (launch) common::host_services()->status_free(launch);
      if (g) cudaGraphDestroy(g);
      cudaGetLastError();
      graph_exec_ = nullptr;
      graph_failed_ = true;
      common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "cuda", device_->name() + ": CUDA graph capture failed; running eagerly");
      return false;
    }
    cudaGraphDestroy(g);
    common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "cuda", device_->name() + ": captured a CUDA graph of " +
                                                         std::to_string(graph->n_nodes) + " nodes");
  }
  const cudaError_t e = cudaGraphLaunch(graph_exec_, stream_);
  *st = e == cudaSuccess ? nullptr : cuda_status(device_, "compute", e);
  return true;
}

loom_status_t* Stream::synchronize() {
  device_->make_current();
  cudaError_t e = cudaMemcpyAsync(error_host_, error_, sizeof(KernelFault), cudaMemcpyDeviceToHost, stream_);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
  if (e != cudaSuccess) return cuda_status(device_, "synchronize", e);
  if (error_host_->code == kErrNone) return nullptr;
  const std::string what = fault_message(*error_host_);
  *error_host_ = KernelFault{};
  cudaMemsetAsync(error_, 0, sizeof(KernelFault), stream_);
  return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cuda.synchronize] " + device_->name() + ": " + what);
}

loom_status_t* Stream::set_async(loom_tensor_t* t, const void* data, size_t offset, size_t size) {
  if (size == 0) return nullptr;
  device_->make_current();
  const cudaError_t e =
      cudaMemcpyAsync(static_cast<uint8_t*>(t->data) + offset, data, size, cudaMemcpyDefault, stream_);
  return e == cudaSuccess ? nullptr : cuda_status(device_, "set_tensor_async", e);
}

loom_status_t* Stream::get_async(const loom_tensor_t* t, void* data, size_t offset, size_t size) {
  if (size == 0) return nullptr;
  device_->make_current();
  const cudaError_t e =
      cudaMemcpyAsync(data, static_cast<const uint8_t*>(t->data) + offset, size, cudaMemcpyDefault, stream_);
  return e == cudaSuccess ? nullptr : cuda_status(device_, "get_tensor_async", e);
}

loom_status_t* Stream::record(loom_event_t* ev) {
  if (!Event::is_ours(ev)) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cuda.record_event] not a CUDA event");
  device_->make_current();
  const cudaError_t e = cudaEventRecord(Event::from(ev)->event(), stream_);
  return e == cudaSuccess ? nullptr : cuda_status(device_, "record_event", e);
}

loom_status_t* Stream::wait(loom_event_t* ev) {
  if (!Event::is_ours(ev)) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cuda.wait_event] not a CUDA event");
  device_->make_current();
  const cudaError_t e = cudaStreamWaitEvent(stream_, Event::from(ev)->event(), 0);
  return e == cudaSuccess ? nullptr : cuda_status(device_, "wait_event", e);
}

// ------------------------------------------------------------------- event

Event::Event(Device* device) : raw_{sizeof(loom_event_t), &kEventIface, device->handle(), this}, device_(device) {}

bool Event::is_ours(const loom_event_t* e) { return e != nullptr && e->iface == &kEventIface; }

loom_status_t* Event::create(Device* device, loom_event_t** out) {
  std::unique_ptr<Event> ev(new Event(device));
  device->make_current();
  const cudaError_t e = cudaEventCreateWithFlags(&ev->event_, cudaEventDisableTiming);
  if (e != cudaSuccess) return cuda_status(device, "event_create", e);
  *out = &ev.release()->raw_;
  return nullptr;
}

Event::~Event() {
  if (event_) {
    device_->make_current();
    cudaEventDestroy(event_);
  }
}

loom_status_t* Event::synchronize() {
  device_->make_current();
  const cudaError_t e = cudaEventSynchronize(event_);
  return e == cudaSuccess ? nullptr : cuda_status(device_, "event_synchronize", e);
}

}  // namespace loom::cuda
