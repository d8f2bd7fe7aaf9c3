// Scheduler observability: the plan as text (LOOM_SCHED_DEBUG=1) and as
// Graphviz DOT (one cluster per device, copies as red edges between them).
#include <string>
#include <unordered_map>

#include "loom/plugin_calls.hpp"
#include "loom/types.hpp"
#include "common/op_info.h"
#include "sched/scheduler_plan.hpp"

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
    o += c;
  }
  return o;
}

const char* const kColours[] = {"lightblue", "palegreen",   "khaki",    "lightpink",
                                "plum",      "lightsalmon", "lightcyan"};

}  // namespace

std::string describe_plan(const Plan& p, const Graph& g,
                          const std::vector<registry::Device*>& devices) {
  if (!matches(p, g)) return "[sched] plan does not match this graph\n";
  const auto& nodes = g.nodes();
  auto name_of = [&](int32_t id) -> std::string {
    const auto i = static_cast<size_t>(id);
    return i < nodes.size() ? nodes[i]->name : g.leafs()[i - nodes.size()]->name;
  };
  auto where = [&](int32_t id) -> std::string {
    const auto i = static_cast<size_t>(id);
    const Tensor* t = i < nodes.size() ? nodes[i] : g.leafs()[i - nodes.size()];
    const Tensor* b = t->view_src ? static_cast<const Tensor*>(t->view_src) : t;
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (nodes[j] == b && p.mem_device[j] >= 0)
        return devices[static_cast<size_t>(p.mem_device[j])]->name();
    }
    for (size_t j = 0; j < g.leafs().size(); ++j) {
      if (g.leafs()[j] == b && p.mem_device[nodes.size() + j] >= 0) {
        return devices[static_cast<size_t>(p.mem_device[nodes.size() + j])]->name();
      }
    }
    return b->buffer ? registry::buffer_type_name(b->buffer->buffer_type) : std::string("host");
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
           " bytes from " + where(cp.src_id) + "\n";
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

std::string plan_to_dot(const Plan& p, const Graph& g,
                        const std::vector<registry::Device*>& devices) {
  if (!matches(p, g)) return "digraph loom_plan {}\n";
  const auto& nodes = g.nodes();
  std::string s = "digraph loom_plan {\n  rankdir=TB;\n  node [shape=box, style=filled];\n";
  for (size_t d = 0; d < devices.size(); ++d) {
    const char* colour = kColours[d % (sizeof kColours / sizeof kColours[0])];
    s += "  subgraph cluster_" + std::to_string(d) + " {\n    label=\"" +
         dot_escape(devices[d]->name()) + "\";\n";
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (p.node_device[i] != static_cast<int32_t>(d)) continue;
      s += "    n" + std::to_string(i) + " [label=\"" + dot_escape(nodes[i]->name) + "\\n" +
           op_name(nodes[i]->op) + "\", fillcolor=" + colour + "];\n";
    }
    s += "  }\n";
  }
  for (size_t j = 0; j < g.leafs().size(); ++j) {
    s += "  l" + std::to_string(j) + " [label=\"" + dot_escape(g.leafs()[j]->name) +
         "\", shape=ellipse, fillcolor=white];\n";
  }
  std::unordered_map<const Tensor*, std::string> names;
  for (size_t i = 0; i < nodes.size(); ++i) names[nodes[i]] = "n" + std::to_string(i);
  for (size_t j = 0; j < g.leafs().size(); ++j) names[g.leafs()[j]] = "l" + std::to_string(j);
  auto ref = [&](const Tensor* t) -> std::string {
    auto it = names.find(t);
    return it == names.end() ? std::string() : it->second;
  };
  // Copied sources: red edges labelled with bytes.
  std::vector<std::vector<int32_t>> copied(nodes.size());
  for (const Split& sp : p.splits) {
    for (const SrcSwap& w : sp.swaps) {
      auto& v = copied[static_cast<size_t>(w.node)];
      if (v.empty()) v.assign(LOOM_MAX_SRC, -1);
      v[static_cast<size_t>(w.slot)] = w.copy;
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int k = 0; k < LOOM_MAX_SRC; ++k) {
      const Tensor* src = nodes[i]->source(k);
      if (!src) continue;
      std::string from = ref(src);
      if (from.empty()) continue;
      const auto& v = copied[i];
      if (!v.empty() && v[static_cast<size_t>(k)] >= 0) {
        s += "  " + from + " -> n" + std::to_string(i) + " [color=red, label=\"copy " +
             std::to_string(p.copies[static_cast<size_t>(v[static_cast<size_t>(k)])].bytes) +
             " B\"];\n";
      } else {
        s += "  " + from + " -> n" + std::to_string(i) + ";\n";
      }
    }
  }
  return s + "}\n";
}

}  // namespace loom::sched
