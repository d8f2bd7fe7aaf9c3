// Hot/cold placement of sparse FFN layers (LoadOptions::sparse_budget,
// llm/sparse/sparse_ffn.hpp): rank every neuron of every sparse layer by its
// firing share (blk.N.ffn_freq), give the fast device the most frequent ones
// whose rows (gate, up, the neuron-major down and the predictor's output
// row) fit the budget, and keep the rest on the host device. Each share is a
// set of new leaf tensors gathered from the file's rows, in ascending neuron
// order; the graph computes both shares from the same predictor hidden layer
// and adds their outputs (build_ffn).
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "llm/model/llama_model.hpp"
#include "loom/sched/executor.hpp"
#include "loom/runtime/log.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/runtime/types.hpp"

namespace loom::llm {
namespace {

struct Ranked {
  float freq;
  int64_t layer;
  int64_t neuron;
};

// Bytes one neuron of layer l takes on a device: its row of gate, up,
// down_t and pred_out (and its bias).
size_t neuron_bytes(const LlamaLayer& l) {
  size_t b = 0;
  for (const Tensor* t : {l.ffn_gate, l.ffn_up, l.ffn_down_t, l.ffn_pred_out}) b += type_row_size(t->type, t->ne[0]);
  return b + (l.ffn_pred_bias ? type_size(l.ffn_pred_bias->type) : 0);
}

// Whether `dev` runs the sparse products on weights of l's types.
bool runs_sparse(registry::Device& dev, const LlamaLayer& l) {
  Context ctx;
  auto w = ctx.new_tensor(static_cast<loom_type_t>(l.ffn_gate->type), {l.ffn_gate->ne[0], 1}, "w");
  auto wd = ctx.new_tensor(static_cast<loom_type_t>(l.ffn_down_t->type), {l.ffn_down_t->ne[0], 1}, "wd");
  auto x = ctx.new_tensor(LOOM_TYPE_F32, {l.ffn_gate->ne[0], 1}, "x");
  auto h = ctx.new_tensor(LOOM_TYPE_F32, {1, 1}, "h");
  auto s = ctx.new_tensor(LOOM_TYPE_F32, {1, 1}, "s");
  if (!w.ok() || !wd.ok() || !x.ok() || !h.ok() || !s.ok()) return false;
  auto rows = op::mul_mat_sparse_rows(ctx, *w, *x, *s, 0.0f);
  auto cols = op::mul_mat_sparse_cols(ctx, *wd, *h, *s, 0.0f);
  return rows.ok() && cols.ok() && dev.supports_op(*rows) && dev.supports_op(*cols);
}

}  // namespace

StatusOr<Tensor*> LlamaModel::gather_rows(const Tensor* t, const std::vector<int64_t>& rows, const std::string& name,
                                          std::vector<uint8_t>* bytes) {
  const GgufTensorInfo* info = file_.find_tensor(t->name);
  if (info == nullptr) return internal_error("[llm.load] " + file_.name() + ": no file data for '" + t->name + "'");
  const bool vector = t->ne[1] == 1 && info->n_dims == 1;
  const size_t row = vector ? type_size(t->type) : type_row_size(t->type, t->ne[0]);
  const auto* src = static_cast<const uint8_t*>(info->data);
  for (int64_t r : rows) bytes->insert(bytes->end(), src + static_cast<size_t>(r) * row, src + static_cast<size_t>(r + 1) * row);
  std::vector<int64_t> ne = vector ? std::vector<int64_t>{static_cast<int64_t>(rows.size())}
                                   : std::vector<int64_t>{t->ne[0], static_cast<int64_t>(rows.size())};
  LOOM_ASSIGN_OR_RETURN(Tensor * out, ctx_.new_tensor(static_cast<loom_type_t>(t->type), ne, name));
  out->flags |= LOOM_TENSOR_FLAG_PARAM;
  return out;
}

Status LlamaModel::split_hot_cold(int64_t budget, const std::string& profile_path) {
  const std::string who = "[llm.load] " + file_.name() + ": hot/cold placement: ";
  // A separate profile (loom profile -o): its blk.N.ffn_freq replace the model's.
  std::optional<GgufFile> profile;
  if (!profile_path.empty()) {
    StatusOr<GgufFile> pf = GgufFile::open(profile_path);
    if (!pf.ok()) return Status(pf.status().code(), who + "profile " + profile_path + ": " + pf.status().message());
    profile.emplace(std::move(pf).value());
  }
  auto freq_of = [&](int64_t il, const float** f) -> Status {
    const std::string name = "blk." + std::to_string(il) + ".ffn_freq";
    *f = nullptr;
    if (profile) {
      const GgufTensorInfo* pi = profile->find_tensor(name);
      if (pi == nullptr) return Status();
      if (pi->type != LOOM_TYPE_F32 || pi->n_elements() != hparams_.n_ff) {
        return invalid_argument(who + "profile " + profile_path + ": '" + name + "' must be f32 with n_ff = " +
                                std::to_string(hparams_.n_ff) + " elements, is " + type_name(pi->type) + " with " +
                                std::to_string(pi->n_elements()));
      }
      *f = static_cast<const float*>(pi->data);
      return Status();
    }
    const LlamaLayer& l = layers[static_cast<size_t>(il)];
    if (l.ffn_freq) *f = static_cast<const float*>(file_.find_tensor(l.ffn_freq->name)->data);
    return Status();
  };
  for (registry::Device* d : devices_) {
    if (d != device_) {
      sparse_fast_ = d;
      break;
    }
  }
  if (sparse_fast_ == nullptr) {
    return invalid_argument(who + "a sparse budget needs a second device (e.g. --device vulkan0,cpu)");
  }
  std::vector<Ranked> ranked;
  std::vector<int64_t> split_layers;
  for (int64_t il = 0; il < static_cast<int64_t>(layers.size()); ++il) {
    const LlamaLayer& l = layers[static_cast<size_t>(il)];
    const float* f = nullptr;
    LOOM_RETURN_IF_ERROR(freq_of(il, &f));
    if (!layer_is_sparse(il) || l.ffn_down_t == nullptr || f == nullptr) continue;
    if (layer_dev_[static_cast<size_t>(il)] != device_) continue;  // an offloaded layer is whole already
    if (!runs_sparse(*sparse_fast_, l)) {
      LOOM_LOG_WARN("llm", who + sparse_fast_->name() + " does not run the sparse products of layer " +
                               std::to_string(il) + ": it stays on " + device_->name());
      continue;
    }
    for (int64_t j = 0; j < hparams_.n_ff; ++j) ranked.push_back({f[j], il, j});
    split_layers.push_back(il);
  }
  if (split_layers.empty()) {
    LOOM_LOG_WARN("llm", who + "no layer has a predictor, ffn_down_t and ffn_freq" +
                               (profile ? " (in the profile " + profile_path + ")" : std::string()) + ": nothing to place");
    return Status();
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) { return a.freq > b.freq; });
  std::vector<std::vector<bool>> hot(layers.size());
  for (int64_t il : split_layers) hot[static_cast<size_t>(il)].assign(static_cast<size_t>(hparams_.n_ff), false);
  size_t used = 0;
  for (const Ranked& r : ranked) {
    const size_t b = neuron_bytes(layers[static_cast<size_t>(r.layer)]);
    if (used + b > static_cast<size_t>(budget)) break;  // the most frequent first: stop at the first that does not fit
    used += b;
    hot[static_cast<size_t>(r.layer)][static_cast<size_t>(r.neuron)] = true;
  }
  std::vector<Tensor*> fast_tensors, host_tensors;
  std::vector<std::vector<uint8_t>> fast_bytes, host_bytes;
  for (int64_t il : split_layers) {
    LlamaLayer& l = layers[static_cast<size_t>(il)];
    std::vector<int64_t> hot_rows, cold_rows;
    for (int64_t j = 0; j < hparams_.n_ff; ++j) (hot[static_cast<size_t>(il)][static_cast<size_t>(j)] ? hot_rows : cold_rows).push_back(j);
    const std::string p = "blk." + std::to_string(il) + ".";
    for (int side = 0; side < 2; ++side) {
      const std::vector<int64_t>& rows = side == 0 ? hot_rows : cold_rows;
      SparseShare& share = side == 0 ? l.ffn_hot : l.ffn_cold;
      share.n = static_cast<int64_t>(rows.size());
      if (rows.empty()) continue;
      const std::string sfx = side == 0 ? ".hot" : ".cold";
      auto& tensors = side == 0 ? fast_tensors : host_tensors;
      auto& bytes = side == 0 ? fast_bytes : host_bytes;
      const std::pair<Tensor* LlamaLayer::*, Tensor* SparseShare::*> parts[] = {
          {&LlamaLayer::ffn_gate, &SparseShare::gate},
          {&LlamaLayer::ffn_up, &SparseShare::up},
          {&LlamaLayer::ffn_down_t, &SparseShare::down_t},
          {&LlamaLayer::ffn_pred_out, &SparseShare::pred_out},
          {&LlamaLayer::ffn_pred_bias, &SparseShare::pred_bias}};
      for (const auto& [from, to] : parts) {
        const Tensor* src = l.*from;
        if (src == nullptr) continue;
        bytes.emplace_back();
        LOOM_ASSIGN_OR_RETURN(share.*to, gather_rows(src, rows, std::string(src->name) + sfx, &bytes.back()));
        tensors.push_back(share.*to);
      }
    }
  }
  for (int side = 0; side < 2; ++side) {
    auto& tensors = side == 0 ? fast_tensors : host_tensors;
    auto& bytes = side == 0 ? fast_bytes : host_bytes;
    if (tensors.empty()) continue;
    registry::Device& dev = side == 0 ? *sparse_fast_ : *device_;
    StatusOr<Buffer> buf = allocate_tensors(dev, tensors);
    if (!buf.ok()) return Status(buf.status().code(), who + "on " + dev.name() + ": " + buf.status().message());
    for (size_t i = 0; i < tensors.size(); ++i) {
      Status st = tensor_set(tensors[i], bytes[i].data(), bytes[i].size());
      if (!st.ok()) return Status(st.code(), who + tensors[i]->name + ": " + st.message());
    }
    sparse_bufs_.push_back(std::move(buf).value());
  }
  sparse_hot_bytes_ = used;
  LOOM_LOG_INFO("llm", file_.name() + ": hot/cold placement: " + std::to_string(used) + " bytes of FFN rows on " +
                           sparse_fast_->name() + " (budget " + std::to_string(budget) + ")");
  return Status();
}

}  // namespace loom::llm
