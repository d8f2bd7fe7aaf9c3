// The facts behind `loom plan`'s drawings and texts (scheduler_plan_view.hpp).
#include "sched/scheduler_plan_view.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/op_info.h"
#include "loom/registry/plugin_calls.hpp"

namespace loom::sched {
namespace {

const Tensor* base_of(const Tensor* t) {
  while (t->view_src) t = static_cast<const Tensor*>(t->view_src);
  return t;
}

// N of a GGUF layer weight "blk.N.<...>", else -1.
int32_t weight_layer(const char* name) {
  const std::string s(name);
  if (s.rfind("blk.", 0) != 0) return -1;
  size_t i = 4;
  int64_t n = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && n < (1 << 24)) n = n * 10 + (s[i++] - '0');
  return i > 4 && i < s.size() && s[i] == '.' ? static_cast<int32_t>(n) : -1;
}

// "layer 4", "layers 0-3", "layers 0-1, 5" for a set of layer indices.
std::string layer_text(const std::set<int32_t>& layers) {
  if (layers.empty()) return "";
  std::string s = layers.size() == 1 ? "layer " : "layers ";
  auto it = layers.begin();
  bool first = true;
  while (it != layers.end()) {
    const int32_t lo = *it;
    int32_t hi = lo;
    for (++it; it != layers.end() && *it == hi + 1; ++it) hi = *it;
    s += (first ? "" : ", ") + std::to_string(lo) + (hi > lo ? "-" + std::to_string(hi) : "");
    first = false;
  }
  return s;
}

class ViewBuilder {
 public:
  ViewBuilder(const Plan& p, const Graph& g, const std::vector<registry::Device*>& devices)
      : p_(p), g_(g), devices_(devices), n_nodes_(g.nodes().size()) {
    for (size_t i = 0; i < n_nodes_; ++i) ids_[g.nodes()[i]] = static_cast<int32_t>(i);
    for (size_t j = 0; j < g.leafs().size(); ++j) ids_[g.leafs()[j]] = static_cast<int32_t>(n_nodes_ + j);
    v_.n_ids = n_nodes_ + g.leafs().size();
  }

  PlanView build() {
    locate();
    produce();
    for (size_t s = 0; s < p_.splits.size(); ++s) v_.splits.push_back(facts(s));
    connect();
    return std::move(v_);
  }

 private:
  const Tensor* tensor(int32_t id) const {
    const auto i = static_cast<size_t>(id);
    return i < n_nodes_ ? g_.nodes()[i] : g_.leafs()[i - n_nodes_];
  }
  int32_t id(const Tensor* t) const {
    auto it = ids_.find(t);
    return it == ids_.end() ? -1 : it->second;
  }

  Location location_of(const Tensor* t) const {
    const Tensor* b = base_of(t);
    const int32_t bid = id(b);
    if (bid >= 0 && p_.mem_device[static_cast<size_t>(bid)] >= 0) {
      const int32_t d = p_.mem_device[static_cast<size_t>(bid)];
      return {d, devices_[static_cast<size_t>(d)]->name()};
    }
    if (!b->buffer) return {-1, "host"};
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (devices_[d]->buffer_type() == b->buffer->buffer_type) return {static_cast<int32_t>(d), devices_[d]->name()};
    }
    return {-1, registry::buffer_type_name(b->buffer->buffer_type)};
  }

  void locate() {
    v_.where.resize(v_.n_ids);
    v_.device_weight_bytes.assign(devices_.size(), 0);
    for (size_t id = 0; id < v_.n_ids; ++id) {
      const Tensor* t = tensor(static_cast<int32_t>(id));
      v_.where[id] = location_of(t);
      if (id >= n_nodes_ && (t->flags & LOOM_TENSOR_FLAG_PARAM) && v_.where[id].device >= 0)
        v_.device_weight_bytes[static_cast<size_t>(v_.where[id].device)] += t->nbytes();
    }
  }

  // Producer split of every tensor (views: of the node they view), and each
  // node's layer: of the weights it reads, else the highest of its sources'.
  void produce() {
    v_.producer.assign(v_.n_ids, -1);
    split_of_.assign(n_nodes_, -1);
    for (size_t s = 0; s < p_.splits.size(); ++s) {
      for (int32_t i : p_.splits[s].nodes) split_of_[static_cast<size_t>(i)] = static_cast<int32_t>(s);
    }
    layer_.assign(v_.n_ids, -1);
    for (size_t j = 0; j < g_.leafs().size(); ++j) layer_[n_nodes_ + j] = weight_layer(g_.leafs()[j]->name);
    for (size_t i = 0; i < n_nodes_; ++i) {
      const Tensor* t = g_.nodes()[i];
      if (common::is_view_op(t->op)) {
        const int32_t s0 = t->src[0] ? id(t->source(0)) : -1;
        v_.producer[i] = s0 >= 0 ? v_.producer[static_cast<size_t>(s0)] : -1;
      } else {
        v_.producer[i] = split_of_[i];
      }
      for (int k = 0; k < LOOM_MAX_SRC; ++k) {
        const int32_t sid = t->src[k] ? id(t->source(k)) : -1;
        if (sid >= 0) layer_[i] = std::max(layer_[i], layer_[static_cast<size_t>(sid)]);
      }
    }
  }

  // The copy node i reads instead of source slot k, or -1.
  int32_t swapped(const Split& sp, int32_t i, int k) const {
    for (const SrcSwap& w : sp.swaps) {
      if (w.node == i && w.slot == k) return w.copy;
    }
    return -1;
  }

  SplitFacts facts(size_t s) const {
    const Split& sp = p_.splits[s];
    SplitFacts f;
    f.device = sp.device;
    f.first = sp.nodes.front();
    f.last = sp.nodes.back();
    f.n_nodes = sp.nodes.size();
    for (size_t i = 0; i < n_nodes_; ++i) {
      if (common::is_view_op(g_.nodes()[i]->op) && v_.producer[i] == static_cast<int32_t>(s)) ++f.n_views;
    }
    std::set<int32_t> weight_layers, node_layers, weights;
    std::set<std::string> others;
    for (int32_t i : sp.nodes) {
      const Tensor* t = g_.nodes()[static_cast<size_t>(i)];
      if (layer_[static_cast<size_t>(i)] >= 0) node_layers.insert(layer_[static_cast<size_t>(i)]);
      for (int k = 0; k < LOOM_MAX_SRC; ++k) {
        if (!t->src[k]) continue;
        const Tensor* b = base_of(t->source(k));
        if (!(b->flags & LOOM_TENSOR_FLAG_PARAM)) continue;
        const int32_t l = weight_layer(b->name);
        if (l >= 0) {
          weight_layers.insert(l);
        } else {
          others.insert(b->name);
        }
        const int32_t bid = id(b);
        if (swapped(sp, i, k) < 0 && bid >= 0 && weights.insert(bid).second) {
          ++f.n_weights;
          f.weight_bytes += b->nbytes();
        }
      }
    }
    f.layers = layer_text(weight_layers.empty() ? node_layers : weight_layers);
    f.other_weights.assign(others.begin(), others.end());
    return f;
  }

  int32_t source_index(const Location& l) {
    for (size_t k = 0; k < v_.sources.size(); ++k) {
      if (v_.sources[k] == l) return static_cast<int32_t>(k);
    }
    v_.sources.push_back(l);
    return static_cast<int32_t>(v_.sources.size() - 1);
  }

  // Copies into each split, and what it reads in place from another
  // device's split or memory; one edge per (from, to, copied).
  void connect() {
    std::map<std::tuple<int32_t, int32_t, int32_t, bool>, size_t> edge_of;
    std::set<std::tuple<size_t, int32_t>> counted;  // (edge, tensor id)
    auto add = [&](int32_t sid, int32_t to, bool copied, size_t bytes) {
      SplitEdge e;
      e.from = v_.producer[static_cast<size_t>(sid)];
      if (e.from < 0) e.from_location = source_index(v_.where[static_cast<size_t>(sid)]);
      e.to = to;
      e.copied = copied;
      auto key = std::make_tuple(e.from, e.from_location, to, copied);
      auto it = edge_of.find(key);
      if (it == edge_of.end()) {
        it = edge_of.emplace(key, v_.edges.size()).first;
        v_.edges.push_back(e);
      }
      if (!counted.emplace(it->second, sid).second) return;
      v_.edges[it->second].tensors += 1;
      v_.edges[it->second].bytes += bytes;
    };
    for (const Copy& c : p_.copies) {
      add(c.src_id, c.split, true, c.bytes);
      v_.copy_bytes += c.bytes;
    }
    for (size_t s = 0; s < p_.splits.size(); ++s) {
      const Split& sp = p_.splits[s];
      for (int32_t i : sp.nodes) {
        const Tensor* t = g_.nodes()[static_cast<size_t>(i)];
        for (int k = 0; k < LOOM_MAX_SRC; ++k) {
          const int32_t sid = t->src[k] ? id(t->source(k)) : -1;
          if (sid < 0 || swapped(sp, i, k) >= 0) continue;
          const int32_t from = v_.producer[static_cast<size_t>(sid)];
          const bool crosses = from >= 0 ? p_.splits[static_cast<size_t>(from)].device != sp.device
                                         : v_.where[static_cast<size_t>(sid)].device != static_cast<int32_t>(sp.device);
          if (crosses) add(sid, static_cast<int32_t>(s), false, tensor(sid)->nbytes());
        }
      }
    }
  }

  const Plan& p_;
  const Graph& g_;
  const std::vector<registry::Device*>& devices_;
  const size_t n_nodes_;
  std::unordered_map<const Tensor*, int32_t> ids_;
  std::vector<int32_t> split_of_, layer_;
  PlanView v_;
};

}  // namespace

PlanView make_plan_view(const Plan& p, const Graph& g, const std::vector<registry::Device*>& devices) {
  return ViewBuilder(p, g, devices).build();
}

std::string human_bytes(size_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace loom::sched
