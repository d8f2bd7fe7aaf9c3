// Fitting a model to device memory before any weight is loaded: from the
// GGUF metadata and tensor infos alone, how many bytes of weights, KV cache
// and compute buffers each device of a list would hold, and (when the
// caller leaves the layer count open) how many layers each accelerator
// takes so that all of it fits in the memory the device reports free.
//
// Who holds what is llm::place_tensors (placement.hpp), the function
// LlamaModel::load places its weights by, and LlamaSession's KV rule (a
// layer's cache on the layer's device unless that device cannot write cache
// rows). LlamaModel::load runs this fit itself when LoadOptions leaves the
// layer count open (n_gpu_layers < 0) or asks for the check (check_fit);
// fit_model on a path is for a report without loading (`loom run --fit`).
//
// Sizes:
//   weights  the file's tensor bytes on that device (rope_freqs copied to
//            every offload device with layers);
//   KV       2 * row_size(kv_type, kv_dim) * rows per layer cached there:
//            rows = n_ctx, or for a sliding-window layer (gemma2/3's local
//            layers, when window_kv and not LOOM_KV_SWA_FULL=1) n_seq *
//            KvCache::window_rows(n_swa, n_batch, n_ctx / n_seq), at most n_ctx;
//   compute  an estimate of the compute buffers the session reserves
//            (LlamaSession::reserve_worst_case): one layer's activations
//            for the largest prompt batch (F32: 3 n_embd + q_dim +
//            2 kv_dim + 3 n_ff values per token, plus n_head x
//            padded-context attention scores), the logits and last hidden
//            state where the output head is, the embedded batch on the
//            host device. The scheduler reuses memory between layers, so
//            this is per device, not per layer.
// Only devices whose memory is their own (not host memory: a GPU with its
// own memory, a sim device without LOOM_SIM_HOST_i) are checked against
// their free memory; weights on host-memory devices are the mapped file.
//
// Automatic choice (n_gpu_layers < 0 and no tensor_split): each offload
// candidate (a device other than the host device that is a GPU or whose
// memory is not host memory; in list order) takes as many of the remaining
// layers as fit in its free memory after its KV cache and compute; the
// host device keeps the rest. A device reporting no memory size takes all
// remaining layers; one reporting a total but no free figure (0) is sized
// by its total, as LlamaSession's KV check does. Explicit requests are checked: one that does not fit is
// RESOURCE_EXHAUSTED naming, per device, bytes needed and free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llm/placement/placement.hpp"
#include "loom/runtime/gguf.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/types.hpp"

namespace loom::llm {

struct FitRequest {
  std::vector<registry::Device*> devices;  // ordered, non-empty (the LoadOptions list)
  int64_t n_gpu_layers = -1;               // < 0: choose by memory (unless tensor_split)
  std::vector<double> tensor_split;        // LoadOptions::tensor_split (empty: none)
  std::vector<TensorOverride> overrides;
  int64_t n_ctx = 0;  // every slot's positions; 0: the model's training context per slot
  int64_t n_batch = 32;
  loom_type_t kv_type = LOOM_TYPE_F16;
  int64_t kv_pad = 256;
  int32_t n_seq = 1;       // slots n_ctx is shared by
  bool window_kv = true;   // sliding-window layers' KV bounded (SessionOptions::window_kv)
};

struct DeviceFit {
  registry::Device* device = nullptr;
  bool host = false;        // the host device (weights not offloaded)
  bool own_memory = false;  // memory that is not host memory: checked against free
  bool memory_known = false;
  uint64_t free = 0, total = 0;
  uint64_t weights = 0, kv = 0, compute = 0;
  int64_t layers = 0;
  bool output = false;  // holds the output head and final norm
  uint64_t need() const { return weights + kv + compute; }
};

struct FitPlan {
  std::string model;  // the file
  int64_t n_layer = 0;
  int64_t n_ctx = 0;
  bool automatic = false;  // layer counts chosen by memory
  std::vector<DeviceFit> devices;  // the request's order
  std::vector<size_t> layer_device;  // per layer: its device (an index into devices)
  // What LoadOptions takes to realise the plan: tensor_split (empty: the
  // n_gpu_layers rule) and n_gpu_layers.
  std::vector<double> tensor_split;
  int64_t n_gpu_layers = 0;
  // A table: device, free, weights, KV, compute, layers (one line each).
  std::string report() const;
};

// Size (and, when asked, choose) the placement of the model at `path`.
// Errors: the file's ("[llm.fit] <path>: ..."), bad requests (as
// place_tensors words them), and RESOURCE_EXHAUSTED when the placement
// asked for does not fit.
StatusOr<FitPlan> fit_model(const std::string& path, const FitRequest& request);
// The same over a file already open (LlamaModel::load's).
StatusOr<FitPlan> fit_model(const GgufFile& file, const FitRequest& request);

}  // namespace loom::llm
