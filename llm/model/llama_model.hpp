// A llama-family model loaded from GGUF (the architectures of arch.cpp: the
// architectures of arch.hpp, whose traits say which optional tensors each
// has): hyper-parameters, weight tensors and the buffers holding them on an
// ordered device list.
//
// Placement (LoadOptions): each layer's weights live on one device of the
// list, by the rules of llm/placement/placement.hpp (the n_gpu_layers rule, a
// tensor_split, overrides by name pattern; the host device holds the
// rest). With n_gpu_layers < 0 and no split the load fits the model first
// (llm/placement/fit.hpp): each accelerator with its own memory takes the layers that
// fit in its free memory. The fit reads the file this load opened, so the
// report (fit()) and the placement are one decision.
//
// Weights are leafs of the model's Context. A device whose memory is host
// memory (cpu, blas, an integrated GPU or lavapipe through vulkan) and that
// can wrap host memory gets the mmap'd data section of the file as its
// weights buffer (no copy); otherwise its weights are copied into a device
// buffer. Graphs must be built in the same Context (Graph::build refuses
// mixed contexts): callers mark it after their own long-lived tensors (KV
// cache) and roll back after each step.
//
// Ownership: the model owns the file mapping, the Context and the weights
// buffer; the device must outlive the model. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llm/model/arch.hpp"
#include "llm/model/llama_hparams.hpp"
#include "llm/placement/fit.hpp"
#include "llm/sparse/sparse_ffn.hpp"
#include "llm/tokenizer/tokenizer.hpp"
#include "loom/registry/buffer.hpp"
#include "loom/runtime/gguf.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::llm {

// One share of a sparse layer's neurons under hot/cold placement
// (llm/sparse/sparse_ffn.hpp): the rows of gate, up, the neuron-major down and the
// predictor's output layer for those neurons, in ascending neuron order, on
// one device. n == 0: no share.
struct SparseShare {
  int64_t n = 0;
  Tensor* gate = nullptr;       // [n_embd, n]
  Tensor* up = nullptr;         // [n_embd, n]
  Tensor* down_t = nullptr;     // [n_embd, n]
  Tensor* pred_out = nullptr;   // [r, n]
  Tensor* pred_bias = nullptr;  // [n] or nullptr
};

struct LlamaLayer {
  Tensor* attn_norm = nullptr;
  Tensor* attn_norm_b = nullptr;  // a LayerNorm's bias [n_embd], when the file has one
  // The attention's own norm of the layer's input (attn_norm_2 and its bias:
  // Falcon 40B / 180B), when the file has one; attn_norm then feeds the
  // parallel FFN only.
  Tensor* attn_norm_2 = nullptr;
  Tensor* attn_norm_2_b = nullptr;
  Tensor* wq = nullptr;  // nullptr when fused (wqkv)
  Tensor* wk = nullptr;
  Tensor* wv = nullptr;
  // [n_embd, q_dim + 2 kv_dim]: Q, K, V rows (ArchTraits::fused_qkv, or any
  // file holding attn_qkv.weight), and its optional bias [q_dim + 2 kv_dim].
  Tensor* wqkv = nullptr;
  Tensor* bqkv = nullptr;
  Tensor* wo = nullptr;
  // Biases added after the projections: required where the architecture
  // has them (qwen2's Q, K, V), read when present in any file (as llama.cpp
  // reads a llama's), else nullptr.
  Tensor* bq = nullptr;  // [q_dim]
  Tensor* bk = nullptr;  // [kv_dim]
  Tensor* bv = nullptr;  // [kv_dim]
  Tensor* bo = nullptr;  // [n_embd], after wo
  Tensor* q_norm = nullptr;  // [head_dim], per-head RMS norm of Q before RoPE (qwen3)
  Tensor* k_norm = nullptr;  // [head_dim]
  Tensor* ffn_norm = nullptr;
  Tensor* ffn_norm_b = nullptr;  // [n_embd], when the file has one
  // The attention and the FFN read the layer's input side by side and both
  // outputs join the residual stream together (ArchTraits::parallel_blocks,
  // gptneox's use_parallel_residual, a stablelm layer without ffn_norm):
  // the FFN reads ffn_norm of the layer's input, or the attention's normed
  // input when the layer has no ffn_norm.
  bool parallel = false;
  // Gemma 2 and 3 (ArchTraits::post_norms): RMS norms of the attention's
  // and the FFN's outputs before their residual adds.
  Tensor* post_attn_norm = nullptr;
  Tensor* post_ffw_norm = nullptr;
  Tensor* ffn_gate = nullptr;  // nullptr when fused (ffn_gate_up) or absent (ArchTraits::ffn_sequential)
  Tensor* ffn_up = nullptr;
  Tensor* ffn_gate_up = nullptr;  // [n_embd, 2 n_ff]: gate rows, then up rows (ArchTraits::fused_gate_up)
  Tensor* ffn_down = nullptr;
  // The dense FFN's optional biases (ffn_{gate,up,down}.bias: the GPT
  // family's up and down), added after each product.
  Tensor* ffn_gate_b = nullptr;
  Tensor* ffn_up_b = nullptr;
  Tensor* ffn_down_b = nullptr;
  // A mixture of experts (LlamaHparams::n_expert > 0; then no ffn_gate / up
  // / down): the router [n_embd, n_expert] and the experts stacked
  // [n_embd, n_ff_exp, n_expert] (gate, up) and [n_ff_exp, n_embd, n_expert].
  Tensor* ffn_gate_inp = nullptr;
  Tensor* ffn_gate_exps = nullptr;
  Tensor* ffn_up_exps = nullptr;
  Tensor* ffn_down_exps = nullptr;
  // The shared expert (ArchTraits::shared_expert): its gate's weights
  // [n_embd] (one logit a token) and its FFN [n_embd, n_ff_shexp] x 2,
  // [n_ff_shexp, n_embd].
  Tensor* ffn_gate_inp_shexp = nullptr;
  Tensor* ffn_gate_shexp = nullptr;
  Tensor* ffn_up_shexp = nullptr;
  Tensor* ffn_down_shexp = nullptr;
  // The activation-sparse FFN's tensors (llm/sparse/sparse_ffn.hpp), bound only
  // when LoadOptions::sparse and the model's FFN is ReLU; else nullptr.
  Tensor* ffn_pred_in = nullptr;    // [n_embd, r]
  Tensor* ffn_pred_out = nullptr;   // [r, n_ff]
  Tensor* ffn_pred_bias = nullptr;  // [n_ff] (optional)
  Tensor* ffn_down_t = nullptr;     // [n_embd, n_ff] neuron-major (optional)
  Tensor* ffn_freq = nullptr;       // F32 [n_ff]: each neuron's firing share (optional)
  // A sparse layer's gate and up copied into the device's own (repacked)
  // layout for its dense form (prompt batches), where the device has one;
  // else nullptr and the dense form reads ffn_gate / ffn_up.
  Tensor* ffn_gate_dense = nullptr;
  Tensor* ffn_up_dense = nullptr;
  // Hot/cold placement (LoadOptions::sparse_budget): the frequent neurons'
  // rows on the fast device, the rest on the host device; both n == 0
  // when the layer is not split.
  SparseShare ffn_hot, ffn_cold;
};

struct LoadOptions {
  std::vector<registry::Device*> devices;  // ordered, non-empty, no nulls
  // Layers on the offload device (clamped to n_layer). < 0: as many as fit
  // (the automatic fit of llm/placement/fit.hpp, sized for `session`), unless a
  // tensor_split is given or sparse_budget keeps the layers on the host.
  int64_t n_gpu_layers = 0;
  // Split mode "layer": one proportion (finite, >= 0, not all 0) per entry
  // of `devices`, in order (llm/placement/placement.hpp); empty: the n_gpu_layers rule.
  std::vector<double> tensor_split;
  // Tensors whose name contains a match of `pattern` (ECMAScript regex,
  // searched as llama.cpp's -ot does) live on `device` (one of `devices`)
  // whatever the rules above say; the first matching override wins.
  using TensorOverride = llm::TensorOverride;
  std::vector<TensorOverride> overrides;
  // Also check an explicit placement (n_gpu_layers >= 0 or a split) against
  // the devices' free memory before placing a weight: RESOURCE_EXHAUSTED
  // with the bytes needed and free per device (the automatic fit is always
  // checked). The CLI asks for it; without it an explicit request fails
  // only when a device refuses its buffer.
  bool check_fit = false;
  // The session the fit sizes KV cache and compute buffers for
  // (LlamaSession's options of the same names; n_ctx 0: the model's).
  struct FitSession {
    int64_t n_ctx = 0;
    int64_t n_batch = 32;
    loom_type_t kv_type = LOOM_TYPE_F16;
    int64_t kv_pad = 256;
    // Slots n_ctx is shared by (n_ctx counts every slot's positions) and
    // whether sliding-window layers keep bounded rows (SessionOptions).
    int32_t n_seq = 1;
    bool window_kv = true;
  } fit_session;
  // Called while weights are copied into device buffers (not for zero-copy
  // placement): bytes copied so far, bytes to copy, the device's name.
  std::function<void(size_t done, size_t total, const std::string& device)> progress;
  // Use the FFN predictors of a ReLU model when the file has them
  // (llm/sparse/sparse_ffn.hpp); false: every layer dense (`loom run --sparse off`).
  bool sparse = true;
  // Hot/cold placement of sparse layers (needs ffn_down_t and the
  // blk.N.ffn_freq profile): bytes of FFN rows the fast device (the first
  // device of `devices` other than the host device) may hold; the most
  // frequently active neurons of all sparse layers go there, the rest stay
  // on the host device, and both shares run and are added. < 0: off.
  int64_t sparse_budget = -1;
  // A GGUF whose blk.N.ffn_freq tensors (`loom profile -o`) rank the neurons
  // for sparse_budget instead of the model's own (empty: the model's).
  std::string sparse_profile;
};

// What the load's fit is asked (LlamaModel::load runs it when the layer
// count is open or check_fit is set): the options' devices and placement,
// n_gpu_layers 0 under a split or a sparse budget, the fit_session sizes.
// For a report without a load: fit_model(path, fit_request(options)).
FitRequest fit_request(const LoadOptions& options);

class LlamaModel {
 public:
  // Open, validate and place the weights on `device`. Failures are statuses
  // "[llm.load] <file>: ..." naming the key, tensor or shapes at fault.
  static StatusOr<std::unique_ptr<LlamaModel>> load(const std::string& path, registry::Device* device);
  // The same over a device list (see the placement rules above).
  static StatusOr<std::unique_ptr<LlamaModel>> load(const std::string& path, const LoadOptions& options);

  const LlamaHparams& hparams() const { return hparams_; }
  const GgufFile& file() const { return file_; }
  // The file's tokenizer, built and checked before any weight is placed
  // (an unsupported tokenizer fails the load early); nullptr when the file
  // has none (tokenizer.ggml.model absent).
  const Tokenizer* tokenizer() const { return tokenizer_ ? &*tokenizer_ : nullptr; }
  const std::string& architecture() const { return arch_; }
  // What sets the architecture apart (rope mode, optional tensors).
  const ArchTraits& arch_traits() const { return *traits_; }
  // The host device (holds every weight not offloaded).
  registry::Device* device() const { return device_; }
  // The ordered device list given at load (graphs are scheduled over it).
  const std::vector<registry::Device*>& devices() const { return devices_; }
  // The device running layer il (its norms and matrices, unless an
  // override moved some of them).
  registry::Device* layer_device(int64_t il) const {
    return il >= 0 && il < static_cast<int64_t>(layer_dev_.size()) ? layer_dev_[static_cast<size_t>(il)] : device_;
  }
  // The device of the output head and final norm.
  registry::Device* output_device() const { return output_dev_; }
  // The first device other than the host that holds layers; null when none.
  registry::Device* offload_device() const { return offload_; }
  // Layers whose device is not the host device.
  int64_t n_gpu_layers() const;
  // The fit the load ran (automatic layer counts or check_fit), else null:
  // its report() is what `loom run -v` prints.
  const FitPlan* fit() const { return fit_ ? &*fit_ : nullptr; }
  // Bytes of weights on devices other than the host device.
  size_t offloaded_bytes() const { return offloaded_bytes_; }
  // The device holding weight t (the host device for tensors not placed).
  registry::Device* weight_device(const Tensor* t) const;
  // "cpu: layers 3-4, token_embd; sim0: layers 0-2, output" style summary.
  std::string placement() const;
  // The context holding the weights; graphs are built in it.
  Context& context() { return ctx_; }
  // The live LlamaSessions of this model, oldest first. Each builds its
  // graphs in context() above its own mark, so only the newest may build
  // or roll back (an older one's rollback would destroy a newer one's
  // cache and graphs): LlamaSession refuses to run while a newer one lives.
  const std::vector<const void*>& sessions() const { return sessions_; }
  void add_session(const void* s) { sessions_.push_back(s); }
  void remove_session(const void* s) {
    sessions_.erase(std::remove(sessions_.begin(), sessions_.end(), s), sessions_.end());
  }
  // Whether every weight is the file mapping itself (no copy was made).
  bool zero_copy() const { return zero_copy_; }
  size_t weights_bytes() const { return weights_bytes_; }
  // Bytes of weights held in a layout of the host device's own choosing
  // (loom.weight_layout: e.g. the cpu plugin's repacked Q8_0 / Q4_0), and
  // of sparse layers' gate / up / down_t copied into a cpu device's own
  // buffer (huge pages for their scattered rows).
  size_t relaid_bytes() const { return relaid_bytes_; }

  Tensor* tok_embd = nullptr;
  Tensor* output_norm = nullptr;
  Tensor* output = nullptr;  // tok_embd when the embedding is tied (output.weight absent)
  // Optional biases: the final LayerNorm's (output_norm.bias, [n_embd]) and
  // the output head's (output.bias, [n_vocab]: phi2).
  Tensor* output_norm_b = nullptr;
  Tensor* output_b = nullptr;
  // Learned absolute positions [n_embd, n_ctx_train] (ArchTraits::pos_embd: gpt2), else nullptr.
  Tensor* pos_embd = nullptr;
  // A LayerNorm of the token embeddings (ArchTraits::embd_norm: bloom), else nullptr.
  Tensor* tok_norm = nullptr;
  Tensor* tok_norm_b = nullptr;
  // F32 [n_rot / 2] frequency divisors every layer's RoPE uses (llama-3's
  // rope_freqs.weight); nullptr when the file has none.
  Tensor* rope_freqs = nullptr;
  // LongRoPE's factors (Phi-3 128k files: rope_factors_long / _short.weight,
  // F32 [n_rot / 2], divide theta like rope_freqs): the long ones for
  // sessions whose sequences hold more than hparams().n_ctx_orig positions.
  // nullptr when the file has none (rope_freqs, when present, wins).
  Tensor* rope_long = nullptr;
  Tensor* rope_short = nullptr;
  std::vector<LlamaLayer> layers;

  // The divisors layer il's RoPE reads: for an offloaded layer a copy on
  // the offload device (the scheduler runs a node that reads weights where
  // they live, so a host-only copy would pull every RoPE off the device),
  // with YaRN (not in the file) a tensor on every layer's device, else
  // rope_freqs itself; nullptr when the model has none.
  // long_ctx: the session's sequences hold more than n_ctx_orig positions.
  Tensor* rope_freqs_for(int64_t il, bool long_ctx = false) const;

  // The FFN activation and the predictors' threshold (llm/sparse/sparse_ffn.hpp).
  const SparseFfnParams& sparse_params() const { return sparse_; }
  // Whether layer il has its predictor bound (its FFN may run sparse).
  bool layer_is_sparse(int64_t il) const;
  // Layers with a predictor bound.
  int64_t sparse_layers() const;
  // Hot/cold placement: the fast device (null when off) and the bytes of
  // FFN rows placed on it.
  registry::Device* sparse_fast_device() const { return sparse_fast_; }
  size_t sparse_hot_bytes() const { return sparse_hot_bytes_; }

 private:
  LlamaModel(GgufFile file, const LoadOptions& o);
  Status read_hparams();
  Status read_tokenizer();
  Status make_tensors();
  Status bind_weights();
  Status bind_layer(int64_t il);
  // Layer il's predictor and neuron-major down projection, when wanted.
  Status bind_sparse(int64_t il);
  // Hot/cold placement under `budget` bytes (llm/sparse/sparse_placement.cpp).
  Status split_hot_cold(int64_t budget, const std::string& profile);
  // The rows `rows` of file tensor t (its ne[1], or elements of a 1-D one)
  // as a new leaf named `name`, with their bytes appended to *bytes.
  StatusOr<Tensor*> gather_rows(const Tensor* t, const std::vector<int64_t>& rows, const std::string& name,
                                std::vector<uint8_t>* bytes);
  // Find tensor `name`, check its type (a weight type) and shape against
  // the metadata; absent: NOT_FOUND when required, else *out = nullptr.
  Status find_weight(const std::string& name, std::initializer_list<int64_t> shape, bool required, Tensor** out);
  // Every tensor of the file was bound, or is known to be unused (a sparse
  // FFN's predictors, an old file's attn_rot_embd, a vision tower's v.* and
  // mm.*): any other is UNIMPLEMENTED naming it, since running without it
  // would compute some other model.
  Status check_every_tensor_read() const;
  // Weights used elementwise (norms, biases) must be float; rope_freqs F32.
  Status check_elementwise_types() const;
  Status place_weights();
  // Q, K and V of a layer as one product (a joined wqkv, as files with
  // attn_qkv hold them): picks the layers (the three of one type and K,
  // 2-D, on one device, without biases or Q/K norms, where they would be
  // copied anyway; not with LOOM_QKV_JOIN=0), makes their wqkv as a weight
  // after the file's (its own index in file_tensors_, bound_ and
  // placed_on_) and unbinds the three, so place_weights allocates and
  // copies the joined one instead.
  Status plan_joined_qkv();
  struct JoinedQkv;
  // The joined weight at index i (past the file's tensors), or nullptr.
  const JoinedQkv* joined_at(size_t i) const;
  // Bytes of weight i: the file tensor's, or a joined weight's three.
  size_t weight_nbytes(size_t i) const;
  // Put tensors `which` on `device`: wrap the file mapping when the device
  // reads host memory and can (no copy), else allocate and copy (*copied).
  Status place_on(registry::Device& device, const std::vector<size_t>& which, Buffer* out, bool* copied);
  // Copy the file data of tensors `which` into their (allocated) buffers on
  // `device`, reporting progress. plain_slices: the buffers are of the
  // device's default type (bytes as in the file), so a device with
  // loom.file_load may read them from the file itself (weight_file_load.hpp).
  Status copy_weights(const std::vector<size_t>& which, const registry::Device& device, bool plain_slices = false);
  // Which device each layer, the output and each file tensor go to
  // (llm/placement/placement.hpp), after the fit when the options ask for one.
  Status assign_devices(const LoadOptions& o);
  // The divisors of RoPE's angles layers read: rope_freqs.weight's values
  // (else LongRoPE's long or short factors), YaRN's (hparams), or both
  // multiplied.
  std::vector<float> rope_divisors(bool long_ctx) const;
  // Tensors of rope_divisors() on `device`, one per variant the model has
  // (rope_freqs_for).
  Status copy_rope_freqs_to(registry::Device& device);
  // Move the matrices of `which` that the device wants in its own layout
  // (read only as MUL_MAT A) out of `which` into their own buffer.
  Status relayout(registry::Device& device, std::vector<size_t>* which);

  GgufFile file_;
  std::optional<Tokenizer> tokenizer_;
  registry::Device* device_ = nullptr;
  registry::Device* offload_ = nullptr;
  registry::Device* output_dev_ = nullptr;
  std::vector<registry::Device*> devices_;
  std::vector<registry::Device*> layer_dev_;  // per layer
  std::vector<registry::Device*> placed_on_;  // per file tensor
  std::optional<FitPlan> fit_;
  std::vector<Buffer> device_weights_;  // weights on devices other than the host, a buffer per device
  size_t offloaded_bytes_ = 0;
  struct RopeCopy {
    registry::Device* device;
    bool long_ctx;
    Tensor* t;
  };
  std::vector<RopeCopy> rope_copies_;
  std::vector<Buffer> rope_copy_bufs_;
  std::string arch_;
  const ArchTraits* traits_ = nullptr;
  LlamaHparams hparams_;
  Context ctx_;
  std::vector<Tensor*> file_tensors_;  // one per GGUF tensor, in file order
  std::vector<bool> bound_;             // per file tensor: found by find_weight
  Buffer weights_;
  std::vector<Buffer> relaid_;  // weights in a device's own layout (relayout), a buffer per device
  Buffer sparse_copy_;  // sparse layers' gate, up, down_t copied into the host device's own buffer (relayout)
  Buffer sparse_dense_;  // sparse layers' gate and up in the device's repacked layout for dense batches (relayout)
  struct JoinedQkv {
    Tensor* t;
    size_t parts[3];  // file tensor indices of Q, K and V
    registry::Device* device;
  };
  std::vector<JoinedQkv> joined_;  // index i - file tensors: file_tensors_[i]
  std::vector<Buffer> joined_bufs_;  // joined weights beside a device's lent file mapping
  size_t relaid_bytes_ = 0;
  bool zero_copy_ = false;
  std::vector<const void*> sessions_;
  size_t weights_bytes_ = 0;
  std::function<void(size_t, size_t, const std::string&)> progress_;
  bool want_sparse_ = true;
  int64_t sparse_budget_ = -1;
  SparseFfnParams sparse_;
  registry::Device* sparse_fast_ = nullptr;
  size_t sparse_hot_bytes_ = 0;
  std::vector<Buffer> sparse_bufs_;  // the shares' tensors, a buffer per device
};

}  // namespace loom::llm
