// Scheduler observability: the plan as text (LOOM_SCHED_DEBUG=1, `loom plan
// --format text`) and as Graphviz DOT (`loom plan`), at two levels of
// detail: one entry per split, or every node (views included) inside the
// cluster of its split and device.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/op_info.h"
#include "loom/registry/plugin_calls.hpp"
#include "loom/runtime/types.hpp"
#include "sched/scheduler_plan.hpp"
#include "sched/scheduler_plan_view.hpp"

namespace loom::sched {
namespace {

bool matches(const Plan& p, const Graph& g) {
  return g.nodes().size() == static_cast<size_t>(p.n_nodes) &&
         g.leafs().size() == static_cast<size_t>(p.n_leafs);
}

std::string dot_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\l";  // left-justified line break
      continue;
    }
    o += c;
  }
  return o;
}

// The MPI rank whose process holds a device named `name`: N for a remote
// device of the mpi plugin ("r<N>.<device>", docs/distributed.md), 0 for a
// device of this process. Only for drawing: devices of one rank are drawn
// in one cluster.
int process_rank(const std::string& name) {
  size_t i = 1;
  if (name.size() < 3 || name[0] != 'r') return 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9' && i < 8) ++i;
  if (i == 1 || i >= name.size() || name[i] != '.') return 0;
  return std::stoi(name.substr(1, i - 1));
}

// Per rank present among the devices, in order of first appearance (rank 0
// first when it has any): the device indices. Empty when all are local.
std::vector<std::pair<int, std::vector<size_t>>> ranks_of(const std::vector<registry::Device*>& devices) {
  std::vector<std::pair<int, std::vector<size_t>>> out;
  bool remote = false;
  for (size_t d = 0; d < devices.size(); ++d) {
    const int r = process_rank(devices[d]->name());
    remote = remote || r > 0;
    size_t k = 0;
    while (k < out.size() && out[k].first != r) ++k;
    if (k == out.size()) out.emplace_back(r, std::vector<size_t>());
    out[k].second.push_back(d);
  }
  if (!remote) out.clear();
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// "rank 1 on HOST": the host from the mpi plugin's description of the
// rank's first device ("... (rank 1 on HOST)").
std::string rank_label(int rank, const registry::Device* first) {
  if (rank == 0) return "rank 0 (this process)";
  const std::string& desc = first->info().description;
  const std::string key = "(rank " + std::to_string(rank) + " on ";
  const size_t at = desc.rfind(key);
  const size_t end = at == std::string::npos ? at : desc.find(')', at);
  if (end == std::string::npos) return "rank " + std::to_string(rank);
  return "rank " + std::to_string(rank) + " on " + desc.substr(at + key.size(), end - at - key.size());
}

const char* const kColours[] = {"lightblue", "palegreen",   "khaki",    "lightpink",
                                "plum",      "lightsalmon", "lightcyan"};
const char* colour(size_t d) { return kColours[d % (sizeof kColours / sizeof kColours[0])]; }

std::string shape_text(const Tensor* t) {
  int n = LOOM_MAX_DIMS;
  while (n > 1 && t->ne[n - 1] == 1) --n;
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(t->ne[i]);
  return s + "]";
}

std::string device_list(const std::vector<registry::Device*>& devices) {
  std::string s;
  for (size_t d = 0; d < devices.size(); ++d) s += (d ? ", " : "") + devices[d]->name();
  return s;
}

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "plan: 212 nodes in 5 splits over sim0, sim1, cpu; 12 copies per step (3.2 KiB)".
std::string headline(const Plan& p, const PlanView& v, const std::vector<registry::Device*>& devices) {
  return "plan: " + plural(static_cast<size_t>(p.n_nodes), "node", "nodes") + " in " +
         plural(p.splits.size(), "split", "splits") + " over " + device_list(devices) + "; " +
         plural(p.copies.size(), "copy", "copies") + " per step (" + human_bytes(v.copy_bytes) + ")";
}

// What a split covers: "layers 0-1 + token_embd.weight", "weights w1, w2",
// or "" (its node range says it then).
std::string coverage(const SplitFacts& f) {
  std::string s = f.layers;
  for (size_t k = 0; k < f.other_weights.size() && k < 3; ++k)
    s += (k > 0 ? ", " : s.empty() ? "weights " : " + ") + f.other_weights[k];
  if (f.other_weights.size() > 3) s += " +" + std::to_string(f.other_weights.size() - 3) + " weights";
  return s;
}

std::string compute_text(const Plan& p, const std::vector<size_t>& allocated, size_t d) {
  std::string s = human_bytes(p.buffer_size[d]);
  if (d < allocated.size() && allocated[d] != p.buffer_size[d]) s += " of a " + human_bytes(allocated[d]) + " buffer";
  return s;
}

// The lines of a split's box or text entry.
std::vector<std::string> split_lines(const Plan& p, const PlanView& v, size_t s,
                                     const std::vector<registry::Device*>& devices,
                                     const std::vector<size_t>& allocated) {
  const SplitFacts& f = v.splits[s];
  const std::string dev = devices[f.device]->name();
  std::vector<std::string> l;
  l.push_back("split " + std::to_string(s) + " on " + dev);
  if (std::string c = coverage(f); !c.empty()) l.push_back(c);
  l.push_back("nodes " + std::to_string(f.first) + ".." + std::to_string(f.last) + ": " +
              std::to_string(f.n_nodes) + " computed, " + plural(f.n_views, "view", "views"));
  l.push_back((f.n_weights == 0 ? std::string("no weights read here")
                                 : "weights read here: " + human_bytes(f.weight_bytes) + " in " +
                                       plural(f.n_weights, "tensor", "tensors")) +
              " (" + dev + " holds " + human_bytes(v.device_weight_bytes[f.device]) + ")");
  l.push_back("compute memory of " + dev + ": " + compute_text(p, allocated, f.device));
  return l;
}

std::string edge_text(const SplitEdge& e) {
  return std::string(e.copied ? "copy " : "read in place ") + plural(e.tensors, "tensor", "tensors") + ", " +
         human_bytes(e.bytes);
}

std::string source_label(const Location& l) { return l.name + " memory (weights, caches, inputs)"; }

std::string from_text(const PlanView& v, const SplitEdge& e, const std::vector<registry::Device*>& devices) {
  if (e.from >= 0) {
    return "split " + std::to_string(e.from) + " (" +
           devices[v.splits[static_cast<size_t>(e.from)].device]->name() + ")";
  }
  return v.sources[static_cast<size_t>(e.from_location)].name + " memory";
}

}  // namespace

std::string describe_plan(const Plan& p, const Graph& g,
                          const std::vector<registry::Device*>& devices) {
  if (!matches(p, g)) return "[sched] plan does not match this graph\n";
  const auto& nodes = g.nodes();
  const PlanView v = make_plan_view(p, g, devices);
  auto name_of = [&](int32_t id) -> std::string {
    const auto i = static_cast<size_t>(id);
    return i < nodes.size() ? nodes[i]->name : g.leafs()[i - nodes.size()]->name;
  };
  std::string s = "[sched] plan: " + std::to_string(p.n_nodes) + " nodes, " +
                  std::to_string(p.splits.size()) + " splits, " + std::to_string(p.copies.size()) +
                  " copies\n";
  for (size_t si = 0; si < p.splits.size(); ++si) {
    const Split& sp = p.splits[si];
    s += "[sched] split " + std::to_string(si) + " on " + devices[sp.device]->name() + ": nodes " +
         std::to_string(sp.nodes.front()) + ".." + std::to_string(sp.nodes.back()) + " (" +
         std::to_string(sp.nodes.size()) + " computed)\n";
    for (int32_t c : sp.copies) {
      const Copy& cp = p.copies[static_cast<size_t>(c)];
      s += "[sched]   input '" + name_of(cp.src_id) + "' " + std::to_string(cp.bytes) +
           " bytes from " + v.where[static_cast<size_t>(cp.src_id)].name + "\n";
    }
    for (int32_t i : sp.nodes) {
      const std::string& why = p.reason[static_cast<size_t>(i)];
      s += "[sched]   node " + std::to_string(i) + " " +
           common::describe_node(nodes[static_cast<size_t>(i)]) + ": " + why + "\n";
    }
  }
  for (size_t d = 0; d < devices.size(); ++d) {
    s += "[sched] compute buffer " + devices[d]->name() + ": " + std::to_string(p.buffer_size[d]) +
         " bytes\n";
  }
  return s;
}

std::string describe_splits(const Plan& p, const Graph& g, const std::vector<registry::Device*>& devices,
                            const std::vector<size_t>& allocated) {
  if (!matches(p, g)) return "plan does not match this graph\n";
  const PlanView v = make_plan_view(p, g, devices);
  std::string s = headline(p, v, devices) + "\n";
  for (size_t i = 0; i < v.splits.size(); ++i) {
    const std::vector<std::string> lines = split_lines(p, v, i, devices, allocated);
    s += lines[0] + ":";
    for (size_t k = 1; k + 1 < lines.size(); ++k) s += (k == 1 ? " " : "; ") + lines[k];
    s += "\n";
    for (const SplitEdge& e : v.edges) {
      if (e.to == static_cast<int32_t>(i)) s += "  in: " + edge_text(e) + " from " + from_text(v, e, devices) + "\n";
    }
  }
  for (size_t d = 0; d < devices.size(); ++d) {
    s += "device " + devices[d]->name() + ": weights " + human_bytes(v.device_weight_bytes[d]) + ", compute " +
         compute_text(p, allocated, d) + "\n";
  }
  return s;
}

std::string splits_to_dot(const Plan& p, const Graph& g, const std::vector<registry::Device*>& devices,
                          const std::vector<size_t>& allocated) {
  if (!matches(p, g)) return "digraph loom_plan {}\n";
  const PlanView v = make_plan_view(p, g, devices);
  std::string s = "digraph loom_plan {\n  rankdir=TB;\n  labelloc=t;\n  label=\"" +
                  dot_escape(headline(p, v, devices) +
                             "\nred: copies between devices; dashed: reads of another device's memory in place; "
                             "dotted: run order") +
                  "\";\n  node [shape=box, style=filled, fontname=\"Helvetica\"];\n";
  for (size_t i = 0; i < v.splits.size(); ++i) {
    std::string label;
    for (const std::string& line : split_lines(p, v, i, devices, allocated)) label += line + "\n";
    s += "  s" + std::to_string(i) + " [label=\"" + dot_escape(label) + "\", fillcolor=" +
         colour(v.splits[i].device) + "];\n";
  }
  for (size_t k = 0; k < v.sources.size(); ++k) {
    s += "  m" + std::to_string(k) + " [label=\"" + dot_escape(source_label(v.sources[k])) +
         "\", shape=cylinder, fillcolor=" +
         (v.sources[k].device >= 0 ? colour(static_cast<size_t>(v.sources[k].device)) : "white") + "];\n";
  }
  // Devices of other processes (mpi ranks): one cluster per rank around its
  // splits and the memory they read there.
  for (const auto& [rank, devs] : ranks_of(devices)) {
    s += "  subgraph cluster_rank_" + std::to_string(rank) + " {\n    label=\"" + rank_label(rank, devices[devs.front()]) +
         "\";\n    style=\"rounded,bold\";\n    color=gray40;\n";
    for (size_t i = 0; i < v.splits.size(); ++i) {
      if (std::find(devs.begin(), devs.end(), v.splits[i].device) != devs.end()) s += "    s" + std::to_string(i) + ";\n";
    }
    for (size_t k = 0; k < v.sources.size(); ++k) {
      const int32_t d = v.sources[k].device;
      if (d >= 0 && std::find(devs.begin(), devs.end(), static_cast<size_t>(d)) != devs.end()) {
        s += "    m" + std::to_string(k) + ";\n";
      }
    }
    s += "  }\n";
  }
  // Run order (dotted), so the boxes stand in the order the splits run.
  for (size_t i = 0; i + 1 < v.splits.size(); ++i) {
    s += "  s" + std::to_string(i) + " -> s" + std::to_string(i + 1) + " [style=dotted, color=gray, arrowhead=none];\n";
  }
  for (const SplitEdge& e : v.edges) {
    const std::string from = e.from >= 0 ? "s" + std::to_string(e.from) : "m" + std::to_string(e.from_location);
    s += "  " + from + " -> s" + std::to_string(e.to) + " [label=\"" + dot_escape(edge_text(e)) + "\"" +
         (e.copied ? ", color=red, fontcolor=red" : ", style=dashed") + "];\n";
  }
  return s + "}\n";
}

namespace {

// The op-level drawing: device clusters holding the device's data (weights
// and other leafs, views of them) and one cluster per split with its nodes,
// its results' views and the copies it makes; plain edges for reads, red
// edges into the copies.
class NodesDot {
 public:
  NodesDot(const Plan& p, const Graph& g, const std::vector<registry::Device*>& devices,
           const std::vector<size_t>& allocated)
      : p_(p), g_(g), devices_(devices), allocated_(allocated), v_(make_plan_view(p, g, devices)),
        n_nodes_(g.nodes().size()) {
    for (size_t i = 0; i < n_nodes_; ++i) ref_[g.nodes()[i]] = "n" + std::to_string(i);
    for (size_t j = 0; j < g.leafs().size(); ++j) ref_[g.leafs()[j]] = "l" + std::to_string(j);
  }

  std::string render() {
    // newrank: graphviz 2.43's default ranking fails ("trouble in
    // init_rank") on some plans whose clusters nest splits in devices.
    s_ = "digraph loom_plan {\n  rankdir=TB;\n  newrank=true;\n  labelloc=t;\n  label=\"" + dot_escape(headline(p_, v_, devices_)) +
         "\";\n  node [shape=box, style=filled, fontname=\"Helvetica\", fontsize=10];\n";
    group();
    const auto ranks = ranks_of(devices_);
    if (ranks.empty()) {
      for (size_t d = 0; d < devices_.size(); ++d) device_cluster(d);
    }
    // Devices of other processes (mpi ranks): their clusters inside one per rank.
    for (const auto& [rank, devs] : ranks) {
      s_ += "  subgraph cluster_rank_" + std::to_string(rank) + " {\n  label=\"" + rank_label(rank, devices_[devs.front()]) +
            "\";\n  style=\"rounded,bold\";\n  color=gray40;\n";
      for (size_t d : devs) device_cluster(d);
      s_ += "  }\n";
    }
    for (size_t k = 0; k < other_.size(); ++k) {
      s_ += "  subgraph cluster_mem_" + std::to_string(k) + " {\n    label=\"" + dot_escape(other_[k].name) +
            " memory\";\n";
      for (int32_t id : other_members_[k]) declare(id, "white", "    ");
      s_ += "  }\n";
    }
    for (int32_t id : loose_) declare(id, "white", "  ");
    edges();
    return s_ + "}\n";
  }

 private:
  const Tensor* tensor(int32_t id) const {
    const auto i = static_cast<size_t>(id);
    return i < n_nodes_ ? g_.nodes()[i] : g_.leafs()[i - n_nodes_];
  }

  // Every tensor id into the cluster it is drawn in: its split (computed
  // nodes, views of their results), else the device or memory holding it.
  void group() {
    split_members_.assign(p_.splits.size(), {});
    device_members_.assign(devices_.size(), {});
    for (size_t id = 0; id < v_.n_ids; ++id) {
      const auto i = static_cast<int32_t>(id);
      const int32_t split = v_.producer[id];
      const Location& at = v_.where[id];
      if (split >= 0) {
        split_members_[static_cast<size_t>(split)].push_back(i);
      } else if (at.device >= 0) {
        device_members_[static_cast<size_t>(at.device)].push_back(i);
      } else if (at.name.empty()) {
        loose_.push_back(i);
      } else {
        size_t k = 0;
        while (k < other_.size() && !(other_[k] == at)) ++k;
        if (k == other_.size()) {
          other_.push_back(at);
          other_members_.emplace_back();
        }
        other_members_[k].push_back(i);
      }
    }
  }

  void device_cluster(size_t d) {
    const std::string dev = devices_[d]->name();
    s_ += "  subgraph cluster_dev_" + std::to_string(d) + " {\n    label=\"" +
          dot_escape(dev + ": weights " + human_bytes(v_.device_weight_bytes[d]) + ", compute " +
                     compute_text(p_, allocated_, d)) +
          "\";\n    style=rounded;\n";
    for (int32_t id : device_members_[d]) declare(id, "white", "    ");
    for (size_t s = 0; s < p_.splits.size(); ++s) {
      if (p_.splits[s].device != d) continue;
      const SplitFacts& f = v_.splits[s];
      std::string label = "split " + std::to_string(s) + " on " + dev;
      if (std::string c = coverage(f); !c.empty()) label += ": " + c;
      s_ += "    subgraph cluster_split_" + std::to_string(s) + " {\n      label=\"" + dot_escape(label) +
            "\";\n      style=dashed;\n";
      for (int32_t id : split_members_[s]) declare(id, colour(d), "      ");
      for (int32_t c : p_.splits[s].copies) {
        const Copy& cp = p_.copies[static_cast<size_t>(c)];
        s_ += "      c" + std::to_string(c) + " [label=\"" +
              dot_escape(std::string(cp.tensor->name) + "\ncopy " + type_name(cp.tensor->type) + " " +
                         shape_text(cp.tensor) + ", " + human_bytes(cp.bytes) + "\n") +
              "\", shape=note, fillcolor=mistyrose];\n";
      }
      s_ += "    }\n";
    }
    s_ += "  }\n";
  }

  void declare(int32_t id, const char* fill, const char* indent) {
    const Tensor* t = tensor(id);
    const bool leaf = static_cast<size_t>(id) >= n_nodes_;
    std::string name = t->name[0] ? std::string(t->name) : "#" + std::to_string(id);
    std::string what = std::string(leaf ? "" : std::string(op_name(t->op)) + " ") + type_name(t->type) + " " +
                       shape_text(t);
    if (leaf) {
      what += ", " + human_bytes(t->nbytes());
      if (t->flags & LOOM_TENSOR_FLAG_PARAM) what += ", weight";
      if (t->flags & LOOM_TENSOR_FLAG_INPUT) what += ", input";
    }
    const bool view = !leaf && common::is_view_op(t->op);
    s_ += std::string(indent) + ref_.at(t) + " [label=\"" + dot_escape(name + "\n" + what + "\n") + "\"" +
          (leaf ? std::string(", shape=ellipse, fillcolor=") +
                      ((t->flags & LOOM_TENSOR_FLAG_PARAM) ? "lightyellow" : fill)
                : std::string(", fillcolor=") + fill) +
          (view ? ", style=\"filled,dashed\"" : "") + "];\n";
  }

  void edges() {
    std::vector<std::vector<int32_t>> copied(n_nodes_);
    for (const Split& sp : p_.splits) {
      for (const SrcSwap& w : sp.swaps) {
        auto& v = copied[static_cast<size_t>(w.node)];
        if (v.empty()) v.assign(LOOM_MAX_SRC, -1);
        v[static_cast<size_t>(w.slot)] = w.copy;
      }
    }
    for (size_t c = 0; c < p_.copies.size(); ++c) {
      const Copy& cp = p_.copies[c];
      s_ += "  " + ref_.at(tensor(cp.src_id)) + " -> c" + std::to_string(c) + " [color=red, fontcolor=red, label=\"" +
            dot_escape("copy " + human_bytes(cp.bytes)) + "\"];\n";
    }
    for (size_t i = 0; i < n_nodes_; ++i) {
      for (int k = 0; k < LOOM_MAX_SRC; ++k) {
        const Tensor* src = g_.nodes()[i]->source(k);
        auto it = src ? ref_.find(src) : ref_.end();
        if (it == ref_.end()) continue;
        const auto& v = copied[i];
        const bool swapped = !v.empty() && v[static_cast<size_t>(k)] >= 0;
        s_ += "  " + (swapped ? "c" + std::to_string(v[static_cast<size_t>(k)]) : it->second) + " -> n" +
              std::to_string(i) + ";\n";
      }
    }
  }

  const Plan& p_;
  const Graph& g_;
  const std::vector<registry::Device*>& devices_;
  const std::vector<size_t>& allocated_;
  const PlanView v_;
  const size_t n_nodes_;
  std::unordered_map<const Tensor*, std::string> ref_;
  std::vector<std::vector<int32_t>> split_members_, device_members_, other_members_;
  std::vector<Location> other_;
  std::vector<int32_t> loose_;
  std::string s_;
};

}  // namespace

std::string plan_to_dot(const Plan& p, const Graph& g, const std::vector<registry::Device*>& devices,
                        const std::vector<size_t>& allocated) {
  if (!matches(p, g)) return "digraph loom_plan {}\n";
  return NodesDot(p, g, devices, allocated).render();
}

}  // namespace loom::sched
