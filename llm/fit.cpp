#include "llm/fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

#include "llm/arch.hpp"
#include "llm/kv_cache.hpp"
#include "llm/llama_hparams.hpp"
#include "loom/gguf.hpp"
#include "loom/plugin_calls.hpp"

namespace loom::llm {
namespace {

int64_t layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return -1;
  int64_t v = 0;
  for (size_t i = 4; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

bool reads_host(registry::Device* d) { return registry::buffer_type_is_host(d->buffer_type()); }

bool is_gpu(registry::Device* d) {
  return d->info().type == LOOM_DEVICE_TYPE_GPU || d->info().type == LOOM_DEVICE_TYPE_IGPU;
}

std::string mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / 1048576.0);
  return buf;
}

// Everything the sizing needs from the file, read once.
struct ModelSizes {
  LlamaHparams h;
  std::vector<uint64_t> layer_bytes;  // per layer, tensors not overridden
  uint64_t output_bytes = 0;          // output.weight (untied) + output_norm, unless overridden
  uint64_t host_bytes = 0;            // the rest not overridden (token_embd, rope_freqs, ...)
  uint64_t rope_bytes = 0;            // rope_freqs.weight (copied to offload devices)
  std::vector<uint64_t> pinned;       // per device: bytes of overridden tensors
};

class Fitter {
 public:
  Fitter(const FitRequest& r, FitPlan* plan) : r_(r), plan_(plan) {}

  Status run(const std::string& path) {
    who_ = "[llm.fit] " + path + ": ";
    const size_t nd = r_.devices.size();
    if (nd == 0) return invalid_argument(who_ + "no device given");
    for (registry::Device* d : r_.devices) {
      if (!d) return invalid_argument(who_ + "null device in the device list");
    }
    host_ = nd - 1;
    for (size_t k = 0; k < nd; ++k) {
      if (r_.devices[k]->info().type == LOOM_DEVICE_TYPE_CPU) {
        host_ = k;
        break;
      }
    }
    LOOM_RETURN_IF_ERROR(read(path));
    const int64_t L = s_.h.n_layer;
    plan_->model = path;
    plan_->n_layer = L;
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
      kv_writable_.push_back(k == host_ || KvCache::writable_on(*d, r_.kv_type, s_.h.head_dim(), s_.h.n_head_kv));
    }
    std::vector<size_t> layer_dev;
    if (!r_.tensor_split.empty()) {
      LOOM_RETURN_IF_ERROR(split_layers(r_.tensor_split, &layer_dev));
      plan_->tensor_split = r_.tensor_split;
    } else if (r_.n_gpu_layers >= 0) {
      layer_dev.assign(static_cast<size_t>(L), host_);
      if (const int off = offload_index(); off >= 0) {
        for (int64_t il = 0; il < std::min(r_.n_gpu_layers, L); ++il) layer_dev[static_cast<size_t>(il)] = off;
      }
      plan_->n_gpu_layers = r_.n_gpu_layers;
    } else {
      plan_->automatic = true;
      choose(&layer_dev);
    }
    tally(layer_dev);
    return check();
  }

 private:
  Status read(const std::string& path) {
    StatusOr<GgufFile> file = GgufFile::open(path);
    if (!file.ok()) return Status(file.status().code(), who_ + file.status().message());
    StatusOr<std::string_view> arch = file->get_str("general.architecture");
    if (!arch.ok()) return Status(arch.status().code(), who_ + arch.status().message());
    if (!find_arch(std::string(*arch))) {
      return unimplemented(who_ + "unsupported architecture '" + std::string(*arch) + "' (supported: " +
                           supported_archs() + ")");
    }
    LOOM_RETURN_IF_ERROR(read_llama_hparams(*file, std::string(*arch), &s_.h));
    LOOM_RETURN_IF_ERROR(read_llama_vocab(*file, &s_.h));
    n_ctx_ = r_.n_ctx > 0 ? r_.n_ctx : s_.h.n_ctx_train;
    if (r_.n_batch < 1) return invalid_argument(who_ + "batch size " + std::to_string(r_.n_batch) + " must be >= 1");
    std::vector<std::pair<std::regex, size_t>> ov;
    for (const LoadOptions::TensorOverride& o : r_.overrides) {
      auto it = std::find(r_.devices.begin(), r_.devices.end(), o.device);
      if (it == r_.devices.end()) {
        return invalid_argument(who_ + "tensor override '" + o.pattern + "' names a device not in the device list");
      }
      try {
        ov.emplace_back(std::regex(o.pattern, std::regex::ECMAScript), static_cast<size_t>(it - r_.devices.begin()));
      } catch (const std::regex_error& e) {
        return invalid_argument(who_ + "tensor override pattern '" + o.pattern + "' is not a regular expression: " +
                                e.what());
      }
    }
    s_.layer_bytes.assign(static_cast<size_t>(std::max<int64_t>(s_.h.n_layer, 0)), 0);
    s_.pinned.assign(r_.devices.size(), 0);
    const bool tied = file->find_tensor("output.weight") == nullptr;
    for (const GgufTensorInfo& t : file->tensors()) {
      if (t.name == "rope_freqs.weight") s_.rope_bytes = t.nbytes;
      bool pinned = false;
      for (const auto& [re, k] : ov) {
        if (std::regex_match(t.name, re)) {
          s_.pinned[k] += t.nbytes;
          pinned = true;
          break;
        }
      }
      if (pinned) continue;
      const int64_t il = layer_of(t.name);
      if (il >= 0 && il < s_.h.n_layer) {
        s_.layer_bytes[static_cast<size_t>(il)] += t.nbytes;
      } else if ((t.name == "output.weight" && !tied) || t.name == "output_norm.weight") {
        s_.output_bytes += t.nbytes;
      } else {
        s_.host_bytes += t.nbytes;
      }
    }
    return Status();
  }

  // The n_gpu_layers rule's offload device (LlamaModel::assign_devices).
  int offload_index() const {
    for (size_t k = 0; k < r_.devices.size(); ++k) {
      registry::Device* d = r_.devices[k];
      if (d->info().type == LOOM_DEVICE_TYPE_CPU) continue;
      return (is_gpu(d) || !reads_host(d)) && k != host_ ? static_cast<int>(k) : -1;
    }
    return -1;
  }

  Status split_layers(const std::vector<double>& split, std::vector<size_t>* layer_dev) const {
    const int64_t L = s_.h.n_layer;
    if (split.size() != r_.devices.size()) {
      return invalid_argument(who_ + "tensor split has " + std::to_string(split.size()) + " proportions for " +
                              std::to_string(r_.devices.size()) + " devices");
    }
    double sum = 0.0;
    for (double v : split) {
      if (!std::isfinite(v) || v < 0.0) {
        return invalid_argument(who_ + "tensor split proportion " + std::to_string(v) + " is not a finite number >= 0");
      }
      sum += v;
    }
    if (sum <= 0.0) return invalid_argument(who_ + "tensor split proportions are all 0");
    layer_dev->assign(static_cast<size_t>(L), host_);
    double cum = 0.0;
    int64_t begin = 0;
    for (size_t k = 0; k < split.size(); ++k) {
      cum += split[k];
      const auto end = k + 1 == split.size()
                           ? L
                           : static_cast<int64_t>(std::llround(static_cast<double>(L) * cum / sum));
      for (int64_t il = begin; il < end; ++il) (*layer_dev)[static_cast<size_t>(il)] = k;
      begin = std::max(begin, end);
    }
    return Status();
  }

  uint64_t kv_per_layer() const {
    return 2ull * type_row_size(r_.kv_type, s_.h.kv_dim()) * static_cast<uint64_t>(n_ctx_);
  }

  // Compute estimates (see fit.hpp).
  uint64_t layer_compute() const {
    const LlamaHparams& h = s_.h;
    const auto n = static_cast<uint64_t>(std::min(r_.n_batch, n_ctx_));
    const int64_t pad = std::max<int64_t>(r_.kv_pad, 1);
    const auto n_kv = static_cast<uint64_t>((n_ctx_ + pad - 1) / pad * pad);
    const auto per_token = static_cast<uint64_t>(3 * h.n_embd + h.q_dim() + 2 * h.kv_dim() + 3 * h.n_ff);
    return 4 * n * (per_token + n_kv * static_cast<uint64_t>(h.n_head));
  }
  uint64_t output_compute() const {
    const auto n = static_cast<uint64_t>(std::min(r_.n_batch, n_ctx_));
    return 4 * n * static_cast<uint64_t>(s_.h.n_embd + s_.h.n_vocab);
  }
  uint64_t host_compute() const {
    return 4 * static_cast<uint64_t>(std::min(r_.n_batch, n_ctx_)) * static_cast<uint64_t>(s_.h.n_embd);
  }

  // Automatic: offload candidates take what fits, in list order.
  void choose(std::vector<size_t>* layer_dev) {
    const size_t nd = r_.devices.size();
    const int64_t L = s_.h.n_layer;
    std::vector<int64_t> count(nd, 0);
    std::vector<bool> cand(nd, false);
    uint64_t max_layer = 0;
    for (uint64_t b : s_.layer_bytes) max_layer = std::max(max_layer, b);
    for (size_t k = 0; k < nd; ++k) {
      registry::Device* d = r_.devices[k];
      cand[k] = k != host_ && (is_gpu(d) || !reads_host(d));
    }
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
          const uint64_t fixed = s_.pinned[k] + s_.rope_bytes + layer_compute();
          n = f.free > fixed && per > 0 ? static_cast<int64_t>((f.free - fixed) / per) : (per == 0 ? left : 0);
          n = std::min(n, cap_[k] >= 0 ? cap_[k] : left);
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
                            s_.pinned[owner] + s_.rope_bytes + layer_compute() + s_.output_bytes + output_compute();
      if (need <= f.free) break;
      cap_[owner] = count[owner] - 1;
    }
    layer_dev->clear();
    for (size_t k = 0; k < nd; ++k) {
      for (int64_t i = 0; i < count[k]; ++i) layer_dev->push_back(k);
    }
    if (count[host_] == L) {
      plan_->n_gpu_layers = 0;  // nothing offloaded: no split
    } else {
      for (int64_t c : count) plan_->tensor_split.push_back(static_cast<double>(c));
    }
  }

  void tally(const std::vector<size_t>& layer_dev) {
    const size_t L = layer_dev.size();
    const size_t out_dev = plan_->tensor_split.empty() || L == 0 ? host_ : layer_dev.back();
    std::vector<DeviceFit>& fs = plan_->devices;
    for (size_t il = 0; il < L; ++il) {
      const size_t k = layer_dev[il];
      fs[k].layers += 1;
      fs[k].weights += s_.layer_bytes[il];
      fs[kv_writable_[k] ? k : host_].kv += kv_per_layer();
    }
    for (size_t k = 0; k < fs.size(); ++k) {
      fs[k].weights += s_.pinned[k];
      if (k != host_ && fs[k].layers > 0) fs[k].weights += s_.rope_bytes;
      if (fs[k].layers > 0) fs[k].compute += layer_compute();
    }
    fs[host_].weights += s_.host_bytes;
    fs[host_].compute += host_compute();
    fs[out_dev].weights += s_.output_bytes;
    fs[out_dev].output = true;
    fs[out_dev].compute += output_compute();
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
  ModelSizes s_;
  int64_t n_ctx_ = 0;
  size_t host_ = 0;
  std::vector<bool> kv_writable_;
  std::vector<int64_t> cap_ = std::vector<int64_t>(r_.devices.size(), -1);
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

StatusOr<FitPlan> fit_model(const std::string& path, const FitRequest& request) {
  FitPlan plan;
  Fitter f(request, &plan);
  LOOM_RETURN_IF_ERROR(f.run(path));
  return plan;
}

}  // namespace loom::llm
