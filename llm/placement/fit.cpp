#include "llm/placement/fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

#include "llm/model/arch.hpp"
#include "llm/model/llama_hparams.hpp"
#include "llm/session/kv_cache.hpp"
#include "loom/runtime/gguf.hpp"
#include "loom/registry/plugin_calls.hpp"
#include "runtime/env.hpp"

namespace loom::llm {
namespace {

bool reads_host(registry::Device* d) { return registry::buffer_type_is_host(d->buffer_type()); }

std::string mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / 1048576.0);
  return buf;
}

class Fitter {
 public:
  Fitter(const FitRequest& r, FitPlan* plan) : r_(r), plan_(plan) {}

  Status run(const GgufFile& file) {
    who_ = "[llm.fit] " + file.name() + ": ";
    const size_t nd = r_.devices.size();
    if (nd == 0) return invalid_argument(who_ + "no device given");
    for (registry::Device* d : r_.devices) {
      if (!d) return invalid_argument(who_ + "null device in the device list");
    }
    host_ = host_device(r_.devices);
    LOOM_RETURN_IF_ERROR(read(file));
    plan_->model = file.name();
    plan_->n_layer = h_.n_layer;
    plan_->n_ctx = n_ctx_;
    plan_->devices.resize(nd);
    for (size_t k = 0; k < nd; ++k) {
      DeviceFit& f = plan_->devices[k];
      registry::Device* d = r_.devices[k];
      f.device = d;
      f.host = k == host_;
      f.own_memory = !reads_host(d);
      if (StatusOr<registry::Device::Memory> m = d->memory(); m.ok() && m->total > 0) {
        f.memory_known = true;
        f.total = m->total;
        f.free = m->free > 0 ? m->free : m->total;  // no free figure: the total (as LlamaSession)
      }
      kv_writable_.push_back(k == host_ || KvCache::writable_on(*d, r_.kv_type, h_.head_dim(), h_.n_head_kv));
    }
    PlacementRequest pr{r_.devices, std::max<int64_t>(r_.n_gpu_layers, 0), r_.tensor_split, r_.overrides};
    if (!r_.tensor_split.empty()) {
      plan_->tensor_split = r_.tensor_split;
    } else if (r_.n_gpu_layers >= 0) {
      plan_->n_gpu_layers = r_.n_gpu_layers;
    } else {
      // Sized from where everything but the layers goes (overrides, output).
      plan_->automatic = true;
      LOOM_ASSIGN_OR_RETURN(Placement base, place_tensors(who_, pr, h_.n_layer, file.tensors()));
      sizes(file.tensors(), base);
      choose();
      pr.n_gpu_layers = plan_->n_gpu_layers;
      pr.tensor_split = plan_->tensor_split;
    }
    LOOM_ASSIGN_OR_RETURN(Placement p, place_tensors(who_, pr, h_.n_layer, file.tensors()));
    tally(p);
    return check();
  }

 private:
  Status read(const GgufFile& file) {
    StatusOr<std::string_view> arch = file.get_str("general.architecture");
    if (!arch.ok()) return Status(arch.status().code(), who_ + arch.status().message());
    if (!find_arch(std::string(*arch))) {
      return unimplemented(who_ + "unsupported architecture '" + std::string(*arch) + "' (supported: " +
                           supported_archs() + ")");
    }
    LOOM_RETURN_IF_ERROR(read_llama_hparams(file, std::string(*arch), &h_));
    LOOM_RETURN_IF_ERROR(read_llama_vocab(file, &h_));
    if (r_.n_seq < 1) return invalid_argument(who_ + "sequence slots " + std::to_string(r_.n_seq) + " must be >= 1");
    n_ctx_ = r_.n_ctx > 0 ? r_.n_ctx : h_.n_ctx_train * r_.n_seq;
    // As the session decides (LlamaSession::create).
    window_kv_ = r_.window_kv && !env_flag("LOOM_KV_SWA_FULL", false);
    if (r_.n_batch < 1) return invalid_argument(who_ + "batch size " + std::to_string(r_.n_batch) + " must be >= 1");
    return Status();
  }

  // What the automatic choice weighs, from the placement with no layer
  // offloaded: each layer's tensors (not overridden), the output's, and
  // the overridden bytes per device.
  void sizes(const std::vector<GgufTensorInfo>& tensors, const Placement& base) {
    layer_bytes_.assign(static_cast<size_t>(std::max<int64_t>(h_.n_layer, 0)), 0);
    pinned_.assign(r_.devices.size(), 0);
    const bool tied = std::none_of(tensors.begin(), tensors.end(),
                                   [](const GgufTensorInfo& t) { return t.name == "output.weight"; });
    for (size_t i = 0; i < tensors.size(); ++i) {
      const GgufTensorInfo& t = tensors[i];
      if (t.name == "rope_freqs.weight") rope_bytes_ = t.nbytes;
      if (base.overridden[i]) {
        pinned_[base.tensor[i]] += t.nbytes;
        continue;
      }
      const int64_t il = layer_of(t.name);
      if (il >= 0 && il < h_.n_layer) {
        layer_bytes_[static_cast<size_t>(il)] += t.nbytes;
      } else if (output_tensor(t.name, tied)) {
        output_bytes_ += t.nbytes;
      }
    }
  }

  // Layer il's K and V bytes (the session's rule: kv_cache.hpp).
  uint64_t kv_of_layer(int64_t il) const {
    int64_t rows = n_ctx_;
    if (window_kv_ && h_.is_swa(il)) {
      rows = std::min(n_ctx_, r_.n_seq * KvCache::window_rows(h_.n_swa, r_.n_batch, n_ctx_ / r_.n_seq));
    }
    return 2ull * type_row_size(r_.kv_type, h_.kv_dim()) * static_cast<uint64_t>(rows);
  }
  // The most any layer holds (the automatic choice's per-layer bound).
  uint64_t kv_per_layer() const {
    uint64_t m = 0;
    for (int64_t il = 0; il < h_.n_layer; ++il) m = std::max(m, kv_of_layer(il));
    return m;
  }

  // Compute estimates (see fit.hpp).
  uint64_t layer_compute() const {
    const auto n = static_cast<uint64_t>(std::min(r_.n_batch, n_ctx_));
    const int64_t pad = std::max<int64_t>(r_.kv_pad, 1);
    const auto n_kv = static_cast<uint64_t>((n_ctx_ + pad - 1) / pad * pad);
    // A mixture of experts: each token's chosen experts' gate, up and down
    // rows (and the router's probabilities) in place of the dense FFN's.
    const int64_t ffn = h_.n_expert > 0 ? h_.n_expert_used * (2 * h_.n_ff_exp + h_.n_embd) + 2 * h_.n_expert
                                        : 3 * h_.n_ff;
    const auto per_token = static_cast<uint64_t>(3 * h_.n_embd + h_.q_dim() + 2 * h_.kv_dim() + ffn);
    return 4 * n * (per_token + n_kv * static_cast<uint64_t>(h_.n_head));
  }
  uint64_t output_compute() const {
    const auto n = static_cast<uint64_t>(std::min(r_.n_batch, n_ctx_));
    return 4 * n * static_cast<uint64_t>(h_.n_embd + h_.n_vocab);
  }
  uint64_t host_compute() const {
    return 4 * static_cast<uint64_t>(std::min(r_.n_batch, n_ctx_)) * static_cast<uint64_t>(h_.n_embd);
  }

  // Automatic: offload candidates take what fits, in list order; the plan
  // gets the split (or n_gpu_layers 0 when nothing is offloaded).
  void choose() {
    const size_t nd = r_.devices.size();
    const int64_t L = h_.n_layer;
    std::vector<int64_t> count(nd, 0);
    std::vector<bool> cand(nd, false);
    std::vector<int64_t> cap(nd, -1);
    uint64_t max_layer = 0;
    for (uint64_t b : layer_bytes_) max_layer = std::max(max_layer, b);
    for (size_t k = 0; k < nd; ++k) cand[k] = k != host_ && can_offload(*r_.devices[k]);
    // The device holding the last layer holds the output too; a candidate
    // that cannot also hold it gives up layers until it can.
    for (int round = 0; round <= L; ++round) {
      int64_t left = L;
      for (size_t k = 0; k < nd; ++k) {
        if (!cand[k]) continue;
        const DeviceFit& f = plan_->devices[k];
        int64_t n = left;
        if (f.memory_known) {
          const uint64_t per = max_layer + (kv_writable_[k] ? kv_per_layer() : 0);
          const uint64_t fixed = pinned_[k] + rope_bytes_ + layer_compute();
          n = f.free > fixed && per > 0 ? static_cast<int64_t>((f.free - fixed) / per) : (per == 0 ? left : 0);
          n = std::min(n, cap[k] >= 0 ? cap[k] : left);
        }
        count[k] = std::min(n, left);
        left -= count[k];
      }
      count[host_] = left;
      size_t owner = host_;
      for (size_t k = 0; k < nd; ++k) {
        if (count[k] > 0) owner = k;
      }
      if (owner == host_ || !plan_->devices[owner].memory_known) break;
      const DeviceFit& f = plan_->devices[owner];
      const uint64_t need = static_cast<uint64_t>(count[owner]) * (max_layer + (kv_writable_[owner] ? kv_per_layer() : 0)) +
                            pinned_[owner] + rope_bytes_ + layer_compute() + output_bytes_ + output_compute();
      if (need <= f.free) break;
      cap[owner] = count[owner] - 1;
    }
    if (count[host_] == L) {
      plan_->n_gpu_layers = 0;  // nothing offloaded: no split
    } else {
      for (int64_t c : count) plan_->tensor_split.push_back(static_cast<double>(c));
    }
  }

  void tally(const Placement& p) {
    std::vector<DeviceFit>& fs = plan_->devices;
    plan_->layer_device = p.layer;
    for (size_t il = 0; il < p.layer.size(); ++il) {
      const size_t k = p.layer[il];
      fs[kv_writable_[k] ? k : host_].kv += kv_of_layer(static_cast<int64_t>(il));
    }
    for (size_t k = 0; k < fs.size(); ++k) {
      fs[k].layers = p.layers[k];
      fs[k].weights = p.bytes[k];
      if (fs[k].layers > 0) fs[k].compute += layer_compute();
    }
    fs[host_].compute += host_compute();
    fs[p.output].output = true;
    fs[p.output].compute += output_compute();
  }

  Status check() const {
    std::string bad;
    for (const DeviceFit& f : plan_->devices) {
      if (!f.own_memory || !f.memory_known || f.need() <= f.free) continue;
      bad += (bad.empty() ? "" : "; ") + f.device->name() + " needs " + std::to_string(f.need()) + " bytes (" +
             mib(f.need()) + ": weights " + std::to_string(f.weights) + ", KV " + std::to_string(f.kv) +
             ", compute " + std::to_string(f.compute) + ", " + std::to_string(f.layers) + " layers" +
             (f.output ? " + output" : "") + ") but has " + std::to_string(f.free) + " bytes (" + mib(f.free) +
             ") free";
    }
    if (bad.empty()) return Status();
    return resource_exhausted(who_ + "the placement asked for does not fit: " + bad +
                              " (use fewer --n-gpu-layers, a smaller --tensor-split share, a smaller --ctx, or "
                              "leave the layer count to the automatic fit)");
  }

  const FitRequest& r_;
  FitPlan* plan_;
  std::string who_;
  LlamaHparams h_;
  int64_t n_ctx_ = 0;
  size_t host_ = 0;
  std::vector<bool> kv_writable_;
  bool window_kv_ = true;
  std::vector<uint64_t> layer_bytes_;  // per layer, tensors not overridden
  uint64_t output_bytes_ = 0;          // output.weight (untied) + output_norm, unless overridden
  uint64_t rope_bytes_ = 0;            // rope_freqs.weight (copied to offload devices)
  std::vector<uint64_t> pinned_;       // per device: bytes of overridden tensors
};

}  // namespace

std::string FitPlan::report() const {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "fit: %s, %lld layers, context %lld (%s)\n", model.c_str(),
                static_cast<long long>(n_layer), static_cast<long long>(n_ctx),
                automatic ? "layers chosen by free memory" : "layers as asked");
  out += line;
  std::snprintf(line, sizeof line, "  %-10s %12s %12s %12s %12s %8s\n", "device", "free", "weights", "KV", "compute",
                "layers");
  out += line;
  for (const DeviceFit& f : devices) {
    const std::string free_s = f.memory_known ? mib(f.free) : std::string("unknown");
    std::snprintf(line, sizeof line, "  %-10s %12s %12s %12s %12s %8lld%s%s\n", f.device->name().c_str(),
                  free_s.c_str(), mib(f.weights).c_str(), mib(f.kv).c_str(), mib(f.compute).c_str(),
                  static_cast<long long>(f.layers), f.output ? " +output" : "",
                  f.own_memory ? "" : " (host memory)");
    out += line;
  }
  return out;
}

StatusOr<FitPlan> fit_model(const GgufFile& file, const FitRequest& request) {
  FitPlan plan;
  Fitter f(request, &plan);
  LOOM_RETURN_IF_ERROR(f.run(file));
  return plan;
}

StatusOr<FitPlan> fit_model(const std::string& path, const FitRequest& request) {
  StatusOr<GgufFile> file = GgufFile::open(path);
  if (!file.ok()) return Status(file.status().code(), "[llm.fit] " + path + ": " + file.status().message());
  return fit_model(*file, request);
}

}  // namespace loom::llm
