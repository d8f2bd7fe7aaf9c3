#include "llm/model/llama_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>

#include "llm/model/weight_file_load.hpp"
#include "llm/placement/placement.hpp"
#include "loom/sched/executor.hpp"
#include "loom/runtime/log.hpp"
#include "loom/registry/plugin_calls.hpp"
#include "loom/runtime/types.hpp"
#include "runtime/env.hpp"

namespace loom::llm {
namespace {

std::string dims_str(const int64_t* ne, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

// Weights: any float or quantized type of the ABI (the devices say which
// they run; the cpu plugin runs them all).
bool weight_type_ok(int32_t t) { return type_is_valid(t) && (type_is_float(t) || type_is_quantized(t)); }

std::string weight_types_text() {
  std::string s;
  for (int32_t t = 0; t < LOOM_TYPE_COUNT; ++t) {
    if (weight_type_ok(t)) s += (s.empty() ? "" : ", ") + std::string(type_name(t));
  }
  return s;
}

bool reads_host(const registry::Device* d) {
  return registry::buffer_type_is_host(d->buffer_type());
}

}  // namespace

LlamaModel::LlamaModel(GgufFile file, const LoadOptions& o)
    : file_(std::move(file)), device_(o.devices[host_device(o.devices)]), devices_(o.devices),
      progress_(o.progress), want_sparse_(o.sparse), sparse_budget_(o.sparse_budget) {}

FitRequest fit_request(const LoadOptions& o) {
  FitRequest f;
  f.devices = o.devices;
  f.n_gpu_layers = o.n_gpu_layers;
  // Hot/cold placement keeps the layers on the host device and moves only
  // the hot FFN rows (the budget), so the automatic fit stays out of it.
  if (!o.tensor_split.empty() || (o.n_gpu_layers < 0 && o.sparse_budget >= 0)) f.n_gpu_layers = 0;
  f.tensor_split = o.tensor_split;
  f.overrides = o.overrides;
  f.n_ctx = o.fit_session.n_ctx;
  f.n_batch = o.fit_session.n_batch;
  f.kv_type = o.fit_session.kv_type;
  f.kv_pad = o.fit_session.kv_pad;
  f.n_seq = o.fit_session.n_seq;
  f.window_kv = o.fit_session.window_kv;
  return f;
}

Status LlamaModel::assign_devices(const LoadOptions& o) {
  const FitRequest f = fit_request(o);
  PlacementRequest r{devices_, f.n_gpu_layers, f.tensor_split, f.overrides};
  if (f.n_gpu_layers < 0 || o.check_fit) {
    LOOM_ASSIGN_OR_RETURN(fit_, fit_model(file_, f));
    r.tensor_split = fit_->tensor_split;
    r.n_gpu_layers = fit_->n_gpu_layers;
  }
  LOOM_ASSIGN_OR_RETURN(Placement p,
                        place_tensors("[llm.load] " + file_.name() + ": ", r, hparams_.n_layer, file_.tensors()));
  layer_dev_.clear();
  for (size_t k : p.layer) layer_dev_.push_back(devices_[k]);
  output_dev_ = devices_[p.output];
  placed_on_.clear();
  for (size_t k : p.tensor) placed_on_.push_back(devices_[k]);
  for (registry::Device* d : layer_dev_) {
    if (d != device_) {
      offload_ = d;
      break;
    }
  }
  return Status();
}

int64_t LlamaModel::n_gpu_layers() const {
  return static_cast<int64_t>(std::count_if(layer_dev_.begin(), layer_dev_.end(), [this](registry::Device* d) { return d != device_; }));
}

registry::Device* LlamaModel::weight_device(const Tensor* t) const {
  for (size_t i = 0; i < file_tensors_.size() && i < placed_on_.size(); ++i) {
    if (file_tensors_[i] == t) return placed_on_[i];
  }
  return device_;
}

Tensor* LlamaModel::rope_freqs_for(int64_t il, bool long_ctx) const {
  registry::Device* d = layer_device(il);
  for (const RopeCopy& c : rope_copies_) {
    if (c.device == d && c.long_ctx == (long_ctx && rope_long != nullptr && rope_freqs == nullptr)) return c.t;
  }
  return rope_freqs;
}

std::string LlamaModel::placement() const {
  std::string out;
  for (registry::Device* d : devices_) {
    std::string what;
    int64_t first = -1;
    auto flush = [&](int64_t end) {
      if (first < 0) return;
      what += (what.empty() ? "" : ", ") + std::string(end - first == 1 ? "layer " : "layers ") +
              std::to_string(first) + (end - first == 1 ? "" : "-" + std::to_string(end - 1));
      first = -1;
    };
    for (int64_t il = 0; il < static_cast<int64_t>(layer_dev_.size()); ++il) {
      if (layer_dev_[static_cast<size_t>(il)] == d) {
        if (first < 0) first = il;
      } else {
        flush(il);
      }
    }
    flush(static_cast<int64_t>(layer_dev_.size()));
    size_t moved = 0;
    for (size_t i = 0; i < placed_on_.size(); ++i) {
      const int64_t il = i < file_.tensors().size() ? layer_of(file_.tensors()[i].name) : -1;
      if (placed_on_[i] == d && il >= 0 && layer_device(il) != d) ++moved;
    }
    if (moved) what += (what.empty() ? "" : ", ") + std::to_string(moved) + " overridden tensors";
    if (output_dev_ == d) what += (what.empty() ? "" : ", ") + std::string("output");
    if (!what.empty()) out += (out.empty() ? "" : "; ") + d->name() + ": " + what;
  }
  return out;
}

StatusOr<std::unique_ptr<LlamaModel>> LlamaModel::load(const std::string& path, registry::Device* device) {
  LoadOptions o;
  if (device) o.devices.push_back(device);
  return load(path, o);
}

StatusOr<std::unique_ptr<LlamaModel>> LlamaModel::load(const std::string& path, const LoadOptions& options) {
  if (options.devices.empty()) return invalid_argument("[llm.load] " + path + ": no device given");
  for (registry::Device* d : options.devices) {
    if (!d) return invalid_argument("[llm.load] " + path + ": null device in the device list");
  }
  StatusOr<GgufFile> file = GgufFile::open(path);
  if (!file.ok()) {
    return Status(file.status().code(), "[llm.load] " + file.status().message());  // names the path
  }
  std::unique_ptr<LlamaModel> m(new LlamaModel(std::move(file).value(), options));
  LOOM_RETURN_IF_ERROR(m->read_hparams());
  LOOM_RETURN_IF_ERROR(m->read_tokenizer());
  LOOM_RETURN_IF_ERROR(m->make_tensors());
  LOOM_RETURN_IF_ERROR(m->bind_weights());
  LOOM_RETURN_IF_ERROR(m->assign_devices(options));
  LOOM_RETURN_IF_ERROR(m->plan_joined_qkv());
  LOOM_RETURN_IF_ERROR(m->place_weights());
  if (options.sparse_budget < 0 && !options.sparse_profile.empty()) {
    return invalid_argument("[llm.load] a sparse profile (" + options.sparse_profile + ") is used only with a sparse budget");
  }
  if (options.sparse_budget >= 0) LOOM_RETURN_IF_ERROR(m->split_hot_cold(options.sparse_budget, options.sparse_profile));
  return m;
}

Status LlamaModel::read_hparams() {
  const std::string who = "[llm.load] " + file_.name() + ": ";
  StatusOr<std::string_view> arch = file_.get_str("general.architecture");
  if (!arch.ok()) return Status(arch.status().code(), who + arch.status().message());
  arch_ = std::string(*arch);
  traits_ = find_arch(arch_);
  if (traits_ == nullptr) {
    return unimplemented(who + "unsupported architecture '" + arch_ + "' (general.architecture; supported: " +
                         supported_archs() + ")");
  }
  LOOM_RETURN_IF_ERROR(read_llama_hparams(file_, arch_, &hparams_));
  LOOM_RETURN_IF_ERROR(read_sparse_ffn_params(file_, arch_, &sparse_));
  // GELU (tanh approximation, as ggml's): gated (gemma), or alone (the GPT family).
  if (traits_->gemma || traits_->ffn_sequential) sparse_.activation = FfnActivation::kGelu;
  if (traits_->relu_sqr) sparse_.activation = FfnActivation::kReluSqr;
  return read_llama_vocab(file_, &hparams_);
}

Status LlamaModel::read_tokenizer() {
  if (!file_.has("tokenizer.ggml.model")) return Status();
  StatusOr<Tokenizer> t = Tokenizer::from_gguf(file_);
  if (!t.ok()) return Status(t.status().code(), "[llm.load] " + file_.name() + ": " + t.status().message());
  if (t->n_vocab() != hparams_.n_vocab) {
    return invalid_argument("[llm.load] " + file_.name() + ": the tokenizer has " + std::to_string(t->n_vocab()) +
                            " tokens, the model's vocabulary " + std::to_string(hparams_.n_vocab));
  }
  tokenizer_ = std::move(t).value();
  return Status();
}

Status LlamaModel::make_tensors() {
  const std::string who = "[llm.load] " + file_.name() + ": ";
  for (const GgufTensorInfo& info : file_.tensors()) {
    std::vector<int64_t> dims(info.ne, info.ne + (info.n_dims ? info.n_dims : 1));
    StatusOr<Tensor*> t = ctx_.new_tensor(static_cast<loom_type_t>(info.type), dims, info.name);
    if (!t.ok()) return Status(t.status().code(), who + "tensor '" + info.name + "': " + t.status().message());
    (*t)->flags |= LOOM_TENSOR_FLAG_PARAM;
    file_tensors_.push_back(*t);
  }
  bound_.assign(file_tensors_.size(), false);
  return Status();
}

Status LlamaModel::find_weight(const std::string& name, std::initializer_list<int64_t> shape, bool required,
                               Tensor** out) {
  const std::string who = "[llm.load] " + file_.name() + ": ";
  *out = nullptr;
  const GgufTensorInfo* info = file_.find_tensor(name);
  if (!info) {
    return required ? not_found(who + "missing tensor '" + name + "' (required by architecture " + arch_ + ")")
                    : Status();
  }
  const auto index = static_cast<size_t>(info - file_.tensors().data());
  Tensor* t = file_tensors_[index];
  int64_t want[4] = {1, 1, 1, 1};
  int n = 0;
  for (int64_t d : shape) want[n++] = d;
  for (int i = 0; i < 4; ++i) {
    if (t->ne[i] != want[i]) {
      return invalid_argument(who + "tensor '" + name + "' has shape " +
                              dims_str(t->ne, static_cast<int>(info->n_dims)) + ", the metadata needs " +
                              dims_str(want, n));
    }
  }
  if (!weight_type_ok(t->type)) {
    return unimplemented(who + "tensor '" + name + "' has type " + type_name(t->type) +
                         " (supported: " + weight_types_text() + ")");
  }
  *out = t;
  bound_[index] = true;
  return Status();
}

Status LlamaModel::check_every_tensor_read() const {
  std::vector<std::string> unread;
  int64_t vision = 0;
  for (size_t i = 0; i < file_.tensors().size(); ++i) {
    if (bound_[i]) continue;
    const std::string& name = file_.tensors()[i].name;
    const bool starts_v = name.rfind("v.", 0) == 0 || name.rfind("mm.", 0) == 0;
    if (starts_v) {
      ++vision;
      continue;
    }
    static const char* const kUnused[] = {".ffn_pred_in.", ".ffn_pred_out.", ".ffn_freq", ".ffn_down_t.",
                                          ".attn_rot_embd"};
    if (std::any_of(std::begin(kUnused), std::end(kUnused),
                    [&](const char* part) { return name.find(part) != std::string::npos; })) {
      continue;
    }
    unread.push_back(name);
  }
  if (vision > 0) {
    LOOM_LOG_WARN("llm", "[llm.load] " + file_.name() + ": " + std::to_string(vision) +
                             " tensors of a vision tower (v.*, mm.*) are not used: loom runs the text model");
  }
  if (unread.empty()) return Status();
  std::string list;
  for (size_t i = 0; i < unread.size() && i < 3; ++i) list += (i ? ", '" : "'") + unread[i] + "'";
  if (unread.size() > 3) list += " and " + std::to_string(unread.size() - 3) + " more";
  return unimplemented("[llm.load] " + file_.name() + ": tensor" + (unread.size() > 1 ? "s " : " ") + list +
                       (unread.size() > 1 ? " are" : " is") + " not part of loom's " + arch_ +
                       " model: running without " + (unread.size() > 1 ? "them" : "it") +
                       " would compute another model's outputs");
}

Status LlamaModel::bind_weights() {
  const LlamaHparams& h = hparams_;
  LOOM_RETURN_IF_ERROR(find_weight("token_embd.weight", {h.n_embd, h.n_vocab}, true, &tok_embd));
  if (!traits_->weightless_norms) {
    LOOM_RETURN_IF_ERROR(find_weight("output_norm.weight", {h.n_embd}, true, &output_norm));
  }
  LOOM_RETURN_IF_ERROR(find_weight("output_norm.bias", {h.n_embd}, false, &output_norm_b));
  LOOM_RETURN_IF_ERROR(find_weight("output.weight", {h.n_embd, h.n_vocab}, false, &output));
  if (!output) output = tok_embd;  // tied embedding
  LOOM_RETURN_IF_ERROR(find_weight("output.bias", {h.n_vocab}, false, &output_b));
  if (traits_->embd_norm) {
    LOOM_RETURN_IF_ERROR(find_weight("token_embd_norm.weight", {h.n_embd}, true, &tok_norm));
    LOOM_RETURN_IF_ERROR(find_weight("token_embd_norm.bias", {h.n_embd}, false, &tok_norm_b));
  }
  if (traits_->pos_embd) {
    LOOM_RETURN_IF_ERROR(find_weight("position_embd.weight", {h.n_embd, h.n_ctx_train}, true, &pos_embd));
  }
  if (traits_->rope_freqs) {
    LOOM_RETURN_IF_ERROR(find_weight("rope_freqs.weight", {h.n_rot / 2}, false, &rope_freqs));
  }
  LOOM_RETURN_IF_ERROR(find_weight("rope_factors_long.weight", {h.n_rot / 2}, false, &rope_long));
  LOOM_RETURN_IF_ERROR(find_weight("rope_factors_short.weight", {h.n_rot / 2}, false, &rope_short));
  if ((rope_long == nullptr) != (rope_short == nullptr)) {
    return not_found("[llm.load] " + file_.name() + ": tensor '" +
                     (rope_long ? "rope_factors_short.weight" : "rope_factors_long.weight") +
                     "' missing beside its LongRoPE twin");
  }
  layers.resize(static_cast<size_t>(h.n_layer));
  for (int64_t i = 0; i < h.n_layer; ++i) LOOM_RETURN_IF_ERROR(bind_layer(i));
  LOOM_RETURN_IF_ERROR(check_every_tensor_read());
  return check_elementwise_types();
}

Status LlamaModel::bind_layer(int64_t il) {
  const LlamaHparams& h = hparams_;
  LlamaLayer& l = layers[static_cast<size_t>(il)];
  const std::string p = "blk." + std::to_string(il) + ".";
  if (traits_->pre_norms && !traits_->weightless_norms) {
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_norm.weight", {h.n_embd}, true, &l.attn_norm));
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_norm.bias", {h.n_embd}, false, &l.attn_norm_b));
    if (traits_->parallel_blocks) {
      LOOM_RETURN_IF_ERROR(find_weight(p + "attn_norm_2.weight", {h.n_embd}, false, &l.attn_norm_2));
      LOOM_RETURN_IF_ERROR(find_weight(p + "attn_norm_2.bias", {h.n_embd}, false, &l.attn_norm_2_b));
    }
  }
  // Q, K and V fused when the architecture says so or the file holds them so.
  const int64_t qkv_rows = h.q_dim() + 2 * h.kv_dim();
  if (traits_->fused_qkv || file_.find_tensor(p + "attn_qkv.weight") != nullptr) {
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_qkv.weight", {h.n_embd, qkv_rows}, true, &l.wqkv));
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_qkv.bias", {qkv_rows}, false, &l.bqkv));
  } else {
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_q.weight", {h.n_embd, h.q_dim()}, true, &l.wq));
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_k.weight", {h.n_embd, h.kv_dim()}, true, &l.wk));
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_v.weight", {h.n_embd, h.kv_dim()}, true, &l.wv));
  }
  LOOM_RETURN_IF_ERROR(find_weight(p + "attn_output.weight", {h.q_dim(), h.n_embd}, true, &l.wo));
  if (l.wqkv == nullptr) {
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_q.bias", {h.q_dim()}, traits_->qkv_bias, &l.bq));
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_k.bias", {h.kv_dim()}, traits_->qkv_bias, &l.bk));
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_v.bias", {h.kv_dim()}, traits_->qkv_bias, &l.bv));
  }
  LOOM_RETURN_IF_ERROR(find_weight(p + "attn_output.bias", {h.n_embd}, false, &l.bo));
  if (traits_->layer_norm && !traits_->qk_norm) {
    // Optional per-head LayerNorms of Q and K, a weight per head (Command R+).
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_q_norm.weight", {h.head_dim(), h.n_head}, false, &l.q_norm));
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_k_norm.weight", {h.head_dim(), h.n_head_kv}, false, &l.k_norm));
  }
  if (traits_->qk_norm) {
    const bool whole = traits_->qk_norm_whole;
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_q_norm.weight", {whole ? h.q_dim() : h.head_dim()}, true, &l.q_norm));
    LOOM_RETURN_IF_ERROR(find_weight(p + "attn_k_norm.weight", {whole ? h.kv_dim() : h.head_dim()}, true, &l.k_norm));
  }
  if (traits_->pre_norms && !traits_->parallel_blocks && !traits_->weightless_norms) {
    const std::string ffn_norm = traits_->ffn_norm_post_attention_name ? "post_attention_norm" : "ffn_norm";
    LOOM_RETURN_IF_ERROR(find_weight(p + ffn_norm + ".weight", {h.n_embd}, !traits_->ffn_norm_optional, &l.ffn_norm));
    LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_norm.bias", {h.n_embd}, false, &l.ffn_norm_b));
  }
  l.parallel =
      traits_->parallel_blocks || hparams_.parallel_residual || (traits_->ffn_norm_optional && l.ffn_norm == nullptr);
  if (traits_->post_norms) {
    LOOM_RETURN_IF_ERROR(find_weight(p + "post_attention_norm.weight", {h.n_embd}, true, &l.post_attn_norm));
    LOOM_RETURN_IF_ERROR(find_weight(p + "post_ffw_norm.weight", {h.n_embd}, true, &l.post_ffw_norm));
  }
  if (h.n_expert > 0) {
    const int64_t e = h.n_expert, f = h.n_ff_exp;
    if (file_.find_tensor(p + "ffn_gate_exps.weight") == nullptr && file_.find_tensor(p + "ffn_gate.0.weight")) {
      return unimplemented("[llm.load] " + file_.name() + ": the experts are stored one tensor each ('" + p +
                           "ffn_gate.0.weight', a layout of GGUF files converted before mid-2024): loom reads "
                           "them stacked ('" + p + "ffn_gate_exps.weight'); convert the model again");
    }
    LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_gate_inp.weight", {h.n_embd, e}, true, &l.ffn_gate_inp));
    LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_gate_exps.weight", {h.n_embd, f, e}, true, &l.ffn_gate_exps));
    LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_up_exps.weight", {h.n_embd, f, e}, true, &l.ffn_up_exps));
    LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_down_exps.weight", {f, h.n_embd, e}, true, &l.ffn_down_exps));
    if (!traits_->shared_expert) return Status();
    const int64_t fs = h.n_ff_shexp;
    LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_gate_inp_shexp.weight", {h.n_embd}, true, &l.ffn_gate_inp_shexp));
    LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_gate_shexp.weight", {h.n_embd, fs}, true, &l.ffn_gate_shexp));
    LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_up_shexp.weight", {h.n_embd, fs}, true, &l.ffn_up_shexp));
    return find_weight(p + "ffn_down_shexp.weight", {fs, h.n_embd}, true, &l.ffn_down_shexp);
  }
  LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_down.weight", {h.n_ff, h.n_embd}, true, &l.ffn_down));
  LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_down.bias", {h.n_embd}, false, &l.ffn_down_b));
  if (traits_->ffn_sequential) {  // GELU(up x + b) only: no gate
    LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_up.weight", {h.n_embd, h.n_ff}, true, &l.ffn_up));
    return find_weight(p + "ffn_up.bias", {h.n_ff}, false, &l.ffn_up_b);
  }
  if (traits_->fused_gate_up) {
    // No sparse FFN over a fused gate (its predictor reads ffn_gate).
    return find_weight(p + "ffn_up.weight", {h.n_embd, 2 * h.n_ff}, true, &l.ffn_gate_up);
  }
  LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_gate.weight", {h.n_embd, h.n_ff}, true, &l.ffn_gate));
  LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_up.weight", {h.n_embd, h.n_ff}, true, &l.ffn_up));
  LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_gate.bias", {h.n_ff}, false, &l.ffn_gate_b));
  LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_up.bias", {h.n_ff}, false, &l.ffn_up_b));
  return bind_sparse(il);
}

Status LlamaModel::bind_sparse(int64_t il) {
  if (!want_sparse_ || sparse_.activation != FfnActivation::kRelu) return Status();
  const LlamaHparams& h = hparams_;
  LlamaLayer& l = layers[static_cast<size_t>(il)];
  const std::string p = "blk." + std::to_string(il) + ".";
  const GgufTensorInfo* in = file_.find_tensor(p + "ffn_pred_in.weight");
  if (in == nullptr) return Status();  // no predictor: a dense layer
  if (l.ffn_gate_b || l.ffn_up_b || l.ffn_down_b) {
    return unimplemented("[llm.load] " + file_.name() + ": layer " + std::to_string(il) +
                         " has FFN biases and a sparse predictor: the sparse FFN runs without biases");
  }
  const int64_t r = in->n_dims >= 2 ? in->ne[1] : 0;
  if (r < 1 || r > h.n_ff) {
    return invalid_argument("[llm.load] " + file_.name() + ": tensor '" + p + "ffn_pred_in.weight' has rank " +
                            std::to_string(r) + ", must be in [1, n_ff = " + std::to_string(h.n_ff) + "]");
  }
  LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_pred_in.weight", {h.n_embd, r}, true, &l.ffn_pred_in));
  LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_pred_out.weight", {r, h.n_ff}, true, &l.ffn_pred_out));
  LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_pred_out.bias", {h.n_ff}, false, &l.ffn_pred_bias));
  LOOM_RETURN_IF_ERROR(find_weight(p + "ffn_freq", {h.n_ff}, false, &l.ffn_freq));
  if (l.ffn_freq && l.ffn_freq->type != LOOM_TYPE_F32) {
    return unimplemented("[llm.load] " + file_.name() + ": tensor '" + p + "ffn_freq' must be f32, is " +
                         type_name(l.ffn_freq->type));
  }
  return find_weight(p + "ffn_down_t.weight", {h.n_embd, h.n_ff}, false, &l.ffn_down_t);
}

bool LlamaModel::layer_is_sparse(int64_t il) const {
  return il >= 0 && il < static_cast<int64_t>(layers.size()) && layers[static_cast<size_t>(il)].ffn_pred_in != nullptr;
}

int64_t LlamaModel::sparse_layers() const {
  int64_t n = 0;
  for (int64_t il = 0; il < static_cast<int64_t>(layers.size()); ++il) n += layer_is_sparse(il) ? 1 : 0;
  return n;
}

Status LlamaModel::check_elementwise_types() const {
  const std::string who = "[llm.load] " + file_.name() + ": ";
  std::vector<const Tensor*> elementwise = {output_norm};
  for (const Tensor* t : {output_norm_b, output_b, tok_norm, tok_norm_b}) {
    if (t) elementwise.push_back(t);
  }
  for (const LlamaLayer& l : layers) {
    for (const Tensor* t : {l.attn_norm, l.attn_norm_b, l.attn_norm_2, l.attn_norm_2_b, l.ffn_norm, l.ffn_norm_b, l.bq,
                            l.bk, l.bv, l.bqkv, l.bo, l.q_norm, l.k_norm, l.post_attn_norm, l.post_ffw_norm,
                            l.ffn_pred_bias, l.ffn_gate_b, l.ffn_up_b, l.ffn_down_b}) {
      if (t) elementwise.push_back(t);
    }
  }
  for (const Tensor* t : elementwise) {
    if (t == nullptr) continue;  // (weightless norms: olmo)
    if (!type_is_float(t->type)) {
      return unimplemented(who + "tensor '" + std::string(t->name) + "' must be a float type, is " +
                           type_name(t->type));
    }
  }
  for (const Tensor* t : {rope_freqs, rope_long, rope_short}) {
    if (t && t->type != LOOM_TYPE_F32) {
      return unimplemented(who + "tensor '" + std::string(t->name) + "' must be f32, is " + type_name(t->type));
    }
  }
  return Status();
}

Status LlamaModel::plan_joined_qkv() {
  if (!env_flag("LOOM_QKV_JOIN", true)) return Status();
  auto index_of = [this](const Tensor* t) {
    return static_cast<size_t>(std::find(file_tensors_.begin(), file_tensors_.end(), t) - file_tensors_.begin());
  };
  for (size_t il = 0; il < layers.size(); ++il) {
    LlamaLayer& l = layers[il];
    if (l.wqkv || !l.wq || !l.wk || !l.wv || l.bq || l.bk || l.bv || l.q_norm || l.k_norm) continue;
    const Tensor* parts[3] = {l.wq, l.wk, l.wv};
    bool same = true;
    for (const Tensor* t : parts) {
      same = same && t->type == l.wq->type && t->ne[0] == l.wq->ne[0] && t->ne[2] == 1 && t->ne[3] == 1;
    }
    const size_t iq = index_of(l.wq), ik = index_of(l.wk), iv = index_of(l.wv);
    if (!same || iv >= placed_on_.size() || placed_on_[iq] != placed_on_[ik] || placed_on_[iq] != placed_on_[iv]) {
      continue;
    }
    registry::Device* d = placed_on_[iq];
    LOOM_ASSIGN_OR_RETURN(Tensor * t, ctx_.new_tensor(static_cast<loom_type_t>(l.wq->type),
                                                      {l.wq->ne[0], l.wq->ne[1] + l.wk->ne[1] + l.wv->ne[1]},
                                                      "blk." + std::to_string(il) + ".attn_qkv.weight (joined)"));
    // Only where the three are copied anyway: a device whose memory is not
    // the host's, or the host device's own weight layout (relayout). Where
    // the kernels read the file's mapping in place, a joined copy would
    // cost memory the separate products do not.
    if (reads_host(d) && !(d == device_ && d->weight_buffer_type(t) != nullptr)) continue;
    t->flags |= LOOM_TENSOR_FLAG_PARAM;
    // A weight of its own after the file's: its bytes are the three slices
    // (weight_nbytes, copy_weights), its device the layer's.
    joined_.push_back({t, {iq, ik, iv}, d});
    file_tensors_.push_back(t);
    bound_.push_back(true);
    placed_on_.push_back(d);
    for (size_t i : {iq, ik, iv}) bound_[i] = false;  // read through the joined copy only
    l.wqkv = t;
    l.wq = l.wk = l.wv = nullptr;
  }
  if (!joined_.empty()) {
    LOOM_LOG_DEBUG("llm", std::to_string(joined_.size()) + " layers' Q, K and V joined into one product each");
  }
  return Status();
}

const LlamaModel::JoinedQkv* LlamaModel::joined_at(size_t i) const {
  const size_t n = file_.tensors().size();
  return i >= n && i - n < joined_.size() ? &joined_[i - n] : nullptr;
}

size_t LlamaModel::weight_nbytes(size_t i) const {
  const JoinedQkv* j = joined_at(i);
  if (j == nullptr) return file_.tensors()[i].nbytes;
  size_t n = 0;
  for (size_t p : j->parts) n += file_.tensors()[p].nbytes;
  return n;
}

Status LlamaModel::place_weights() {
  // Divisors not (only) in the file: every layer's device reads a tensor
  // made here.
  const bool made = !hparams_.rope_divisors.empty() || rope_long != nullptr;
  std::vector<size_t> local;
  std::vector<std::pair<registry::Device*, std::vector<size_t>>> groups;  // devices_ order
  for (registry::Device* d : devices_) {
    if (d != device_) groups.emplace_back(d, std::vector<size_t>());
  }
  for (size_t i = 0; i < file_tensors_.size(); ++i) {
    // Tensors the graph does not read (check_every_tensor_read's leftovers:
    // a vision tower, an unused predictor) stay in the file.
    if (!bound_[i]) continue;
    weights_bytes_ += weight_nbytes(i);
    registry::Device* d = placed_on_[i];
    if (d == device_) {
      local.push_back(i);
      continue;
    }
    for (auto& [gd, which] : groups) {
      if (gd == d) which.push_back(i);
    }
  }
  bool copied = false;
  for (auto& [d, which] : groups) {
    if (which.empty()) continue;
    size_t bytes = 0;
    for (size_t i : which) bytes += weight_nbytes(i);
    offloaded_bytes_ += bytes;
    Buffer buf;
    // A device with memory of its own takes its matrices in its own weight
    // layout too (the cuda plugin's split Q8_0 / Q4_0), not only the host
    // device (where the file mapping may be lent as is).
    Status st = reads_host(d) ? Status() : relayout(*d, &which);
    if (st.ok()) st = which.empty() ? Status() : place_on(*d, which, &buf, &copied);
    if (st.ok() && relaid_bytes_ > 0) copied = true;
    if (!st.ok()) {
      std::string avail;
      if (StatusOr<registry::Device::Memory> m = d->memory(); m.ok() && m->total > 0) {
        avail = "; " + std::to_string(m->free) + " of " + std::to_string(m->total) + " bytes free";
      }
      int64_t n = 0;
      for (registry::Device* ld : layer_dev_) n += ld == d ? 1 : 0;
      return Status(st.code(), "[llm.load] " + file_.name() + ": weights of " + std::to_string(n) + " layers need " + std::to_string(bytes) +
                                   " bytes on " + d->name() + avail + ": " + st.message() +
                                   " (try fewer --n-gpu-layers or a smaller --tensor-split share)");
    }
    device_weights_.push_back(std::move(buf));
    if ((rope_freqs || made) && std::find(layer_dev_.begin(), layer_dev_.end(), d) != layer_dev_.end()) {
      LOOM_RETURN_IF_ERROR(copy_rope_freqs_to(*d));
    }
  }
  if (made && std::find(layer_dev_.begin(), layer_dev_.end(), device_) != layer_dev_.end()) {
    LOOM_RETURN_IF_ERROR(copy_rope_freqs_to(*device_));
  }
  if (!local.empty()) {
    Status st = relayout(*device_, &local);
    if (!st.ok()) return Status(st.code(), "[llm.load] " + file_.name() + ": weights: " + st.message());
    copied = copied || relaid_bytes_ > 0;
    st = place_on(*device_, local, &weights_, &copied);
    if (!st.ok()) return Status(st.code(), "[llm.load] " + file_.name() + ": weights: " + st.message());
  }
  zero_copy_ = !copied;
  return Status();
}

std::vector<float> LlamaModel::rope_divisors(bool long_ctx) const {
  std::vector<float> out = hparams_.rope_divisors;
  const Tensor* from_file = rope_freqs ? rope_freqs : long_ctx ? rope_long : rope_short;
  if (from_file) {
    // theta / the file's factor[k], then YaRN's mix: one divisor, the product.
    const GgufTensorInfo* info = file_.find_tensor(from_file->name);
    std::vector<float> file(static_cast<size_t>(from_file->ne[0]));
    std::memcpy(file.data(), info->data, file.size() * sizeof(float));
    if (out.empty()) return file;
    for (size_t k = 0; k < out.size() && k < file.size(); ++k) out[k] *= file[k];
  }
  return out;
}

Status LlamaModel::copy_rope_freqs_to(registry::Device& device) {
  const std::string who = "[llm.load] " + file_.name() + ": RoPE frequency factors on " + device.name() + ": ";
  const bool two = rope_long != nullptr && rope_freqs == nullptr;
  for (bool long_ctx : {false, true}) {
    if (long_ctx && !two) break;
    const std::vector<float> values = rope_divisors(long_ctx);
    StatusOr<Tensor*> t = ctx_.new_tensor(LOOM_TYPE_F32, {static_cast<int64_t>(values.size())},
                                          std::string(long_ctx ? "rope_long" : "rope_freqs") + ".weight@" + device.name());
    if (!t.ok()) return Status(t.status().code(), who + t.status().message());
    (*t)->flags |= LOOM_TENSOR_FLAG_PARAM;
    StatusOr<Buffer> b = allocate_tensors(device, {*t});
    if (!b.ok()) return Status(b.status().code(), who + b.status().message());
    rope_copy_bufs_.push_back(std::move(b).value());
    Status st = tensor_set(*t, values.data(), values.size() * sizeof(float));
    if (!st.ok()) return Status(st.code(), who + st.message());
    rope_copies_.push_back({&device, long_ctx, *t});
  }
  return Status();
}

Status LlamaModel::place_on(registry::Device& device, const std::vector<size_t>& which, Buffer* out, bool* copied) {
  const uint8_t* section = file_.image() + file_.data_offset();
  const size_t section_size = file_.image_size() - static_cast<size_t>(file_.data_offset());
  if (reads_host(&device) && section_size > 0) {
    // Kernels only read weights, so the read-only mapping can be lent as is.
    StatusOr<Buffer> b = device.buffer_from_host_ptr(const_cast<uint8_t*>(section), section_size);
    if (b.ok() && device.supports_buffer_type(b->raw()->buffer_type)) {
      *out = std::move(b).value();
      char* base = static_cast<char*>(out->base());
      loom_buffer_t* raw = out->raw();
      std::vector<size_t> joined;  // not in the file as they are: copied
      for (size_t i : which) {
        if (joined_at(i) != nullptr) {
          joined.push_back(i);
          continue;
        }
        Tensor* t = file_tensors_[i];
        t->data = base + file_.tensors()[i].offset;
        t->buffer = raw;
        LOOM_RETURN_IF_ERROR(registry::buffer_init_tensor(raw, t));
      }
      if (joined.empty()) return Status();
      std::vector<Tensor*> tensors;
      for (size_t i : joined) tensors.push_back(file_tensors_[i]);
      LOOM_ASSIGN_OR_RETURN(Buffer jb, allocate_tensors(device, tensors));
      joined_bufs_.push_back(std::move(jb));
      *copied = true;
      return copy_weights(joined, device, /*plain_slices=*/false);
    }
    if (!b.ok()) LOOM_LOG_DEBUG("llm", "weights copied to " + device.name() + ": " + b.status().message());
  }
  std::vector<Tensor*> tensors;
  for (size_t i : which) tensors.push_back(file_tensors_[i]);
  StatusOr<Buffer> b = allocate_tensors(device, tensors);
  if (!b.ok()) return b.status();
  *out = std::move(b).value();
  *copied = true;
  return copy_weights(which, device, /*plain_slices=*/true);
}

Status LlamaModel::relayout(registry::Device& device, std::vector<size_t>* which) {
  // Only matrices every graph reads as a whole MUL_MAT A, or MUL_MAT_ID A
  // (the experts), (not the embedding
  // table, which GET_ROWS reads, even when the output head shares it, nor
  // the gate and up of a sparse layer, which MUL_MAT_SPARSE_ROWS reads).
  std::vector<const Tensor*> matmul_only;
  for (const LlamaLayer& l : layers) {
    for (Tensor* t :
         {l.wq, l.wk, l.wv, l.wqkv, l.wo, l.ffn_down, l.ffn_gate_up, l.ffn_pred_in, l.ffn_pred_out, l.ffn_gate_inp,
          l.ffn_gate_exps, l.ffn_up_exps, l.ffn_down_exps, l.ffn_gate_shexp, l.ffn_up_shexp, l.ffn_down_shexp}) {
      if (t) matmul_only.push_back(t);
    }
    if (l.ffn_pred_in == nullptr && (l.ffn_gate || l.ffn_up)) {
      for (Tensor* t : {l.ffn_gate, l.ffn_up}) {
        if (t) matmul_only.push_back(t);
      }
    }
  }
  if (output != tok_embd) matmul_only.push_back(output);
  loom_buffer_type_t* buft = nullptr;
  std::vector<size_t> relaid, rest;
  for (size_t i : *which) {
    Tensor* t = file_tensors_[i];
    const bool only_a = std::find(matmul_only.begin(), matmul_only.end(), t) != matmul_only.end();
    loom_buffer_type_t* bt = only_a ? device.weight_buffer_type(t) : nullptr;
    if (bt && (!buft || bt == buft)) {
      buft = bt;
      relaid.push_back(i);
    } else {
      rest.push_back(i);
    }
  }
  // The rows a sparse layer reads are scattered (a tenth of them per
  // token): from the file's 4 KiB-page mapping nearly every row is a TLB
  // miss, so on a cpu device they are copied into its own buffer (huge
  // pages for large buffers, plugins/common/host_buffer.cpp).
  if (device.info().type == LOOM_DEVICE_TYPE_CPU && reads_host(&device)) {
    std::vector<const Tensor*> sparse_read;
    for (const LlamaLayer& l : layers) {
      if (l.ffn_pred_in == nullptr) continue;
      for (Tensor* t : {l.ffn_gate, l.ffn_up, l.ffn_down_t}) {
        if (t) sparse_read.push_back(t);
      }
    }
    std::vector<size_t> copy, keep;
    for (size_t i : rest) {
      const bool s = std::find(sparse_read.begin(), sparse_read.end(), file_tensors_[i]) != sparse_read.end();
      (s ? copy : keep).push_back(i);
    }
    if (!copy.empty()) {
      std::vector<Tensor*> ts;
      for (size_t i : copy) ts.push_back(file_tensors_[i]);
      LOOM_ASSIGN_OR_RETURN(sparse_copy_, allocate_tensors(device, ts));
      LOOM_RETURN_IF_ERROR(copy_weights(copy, device));
      for (size_t i : copy) relaid_bytes_ += weight_nbytes(i);
      rest = std::move(keep);
    }
  }
  // Prompt batches run a sparse layer dense (kSparseMaxTokens): its gate
  // and up, kept in GGUF's layout for the row-sparse product, get a second
  // copy in the device's repacked layout for that dense product (memory for
  // prefill speed: without it, prefill reads them through the slower
  // unrepacked path).
  if (buft != nullptr && &device == device_) {  // (sparse layers' dense copies: the host device's)
    std::vector<Tensor*> dense;
    std::vector<size_t> dense_src;
    for (LlamaLayer& l : layers) {
      if (l.ffn_pred_in == nullptr) continue;
      for (Tensor* LlamaLayer::*f : {&LlamaLayer::ffn_gate, &LlamaLayer::ffn_up}) {
        const Tensor* t = l.*f;
        const auto it = std::find(file_tensors_.begin(), file_tensors_.end(), t);
        if (it == file_tensors_.end()) continue;
        const auto i = static_cast<size_t>(it - file_tensors_.begin());
        if (std::find(which->begin(), which->end(), i) == which->end()) continue;
        if (device.weight_buffer_type(t) != buft) continue;
        LOOM_ASSIGN_OR_RETURN(Tensor * c, ctx_.new_tensor(static_cast<loom_type_t>(t->type), {t->ne[0], t->ne[1]},
                                                          std::string(t->name) + ".dense"));
        c->flags |= LOOM_TENSOR_FLAG_PARAM;
        (f == &LlamaLayer::ffn_gate ? l.ffn_gate_dense : l.ffn_up_dense) = c;
        dense.push_back(c);
        dense_src.push_back(i);
      }
    }
    if (!dense.empty()) {
      LOOM_ASSIGN_OR_RETURN(sparse_dense_, allocate_tensors(device, dense, buft));
      for (size_t k = 0; k < dense.size(); ++k) {
        const GgufTensorInfo& info = file_.tensors()[dense_src[k]];
        LOOM_RETURN_IF_ERROR(tensor_set(dense[k], info.data, info.nbytes));
        relaid_bytes_ += info.nbytes;
      }
    }
  }
  if (relaid.empty()) {
    *which = std::move(rest);
    return Status();
  }
  std::vector<Tensor*> tensors;
  for (size_t i : relaid) tensors.push_back(file_tensors_[i]);
  LOOM_ASSIGN_OR_RETURN(Buffer relaid_buf, allocate_tensors(device, tensors, buft));
  relaid_.push_back(std::move(relaid_buf));
  LOOM_RETURN_IF_ERROR(copy_weights(relaid, device));
  size_t bytes = 0;
  for (size_t i : relaid) bytes += weight_nbytes(i);
  relaid_bytes_ += bytes;
  LOOM_LOG_DEBUG("llm", std::to_string(relaid.size()) + " weights (" + std::to_string(bytes >> 20) + " MiB) in " +
                            registry::buffer_type_name(buft) + ", " + device.name() + "'s own layout");
  *which = std::move(rest);
  return Status();
}

Status LlamaModel::copy_weights(const std::vector<size_t>& which, const registry::Device& device, bool plain_slices) {
  const std::string who = "[llm.load] " + file_.name() + ": ";
  size_t total = 0, done = 0;
  for (size_t i : which) total += weight_nbytes(i);
  std::optional<WeightFileLoad> from_file;
  if (plain_slices) from_file.emplace(file_, device);
  for (size_t i : which) {
    if (const JoinedQkv* j = joined_at(i)) {
      // Q's rows, then K's, then V's: three whole-row slices of the file.
      size_t offset = 0;
      for (size_t p : j->parts) {
        const GgufTensorInfo& info = file_.tensors()[p];
        Status st = tensor_set(j->t, info.data, info.nbytes, offset);
        if (!st.ok()) return Status(st.code(), who + "tensor '" + info.name + "' into " + j->t->name + ": " + st.message());
        offset += info.nbytes;
      }
      done += offset;
      if (progress_) progress_(done, total, device.name());
      continue;
    }
    const GgufTensorInfo& info = file_.tensors()[i];
    if (!from_file || !from_file->load(file_tensors_[i], info)) {
      Status st = tensor_set(file_tensors_[i], info.data, info.nbytes);
      if (!st.ok()) return Status(st.code(), who + "tensor '" + info.name + "': " + st.message());
    }
    done += info.nbytes;
    if (progress_) progress_(done, total, device.name());
  }
  if (from_file) from_file->log_summary();
  return Status();
}

}  // namespace loom::llm
