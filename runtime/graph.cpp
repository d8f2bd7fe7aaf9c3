#include "loom/runtime/graph.hpp"

#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "runtime/word_hash.hpp"

namespace loom {
namespace {

std::string label(const Tensor* t) { return "'" + std::string(t->name) + "'"; }

// Children of t in the DFS: sources first, then the view base.
Tensor* child(const Tensor* t, int i) {
  if (i < LOOM_MAX_SRC) return static_cast<Tensor*>(t->src[i]);
  return static_cast<Tensor*>(t->view_src);
}
constexpr int kChildren = LOOM_MAX_SRC + 1;

// FNV-1a, 64 bit.

}  // namespace

StatusOr<Graph> Graph::build(const std::vector<Tensor*>& outputs) {
  if (outputs.empty()) return invalid_argument("[graph.build] no outputs given");
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i]) return invalid_argument("[graph.build] output " + std::to_string(i) + " is null");
  }
  Graph g;
  g.ctx_ = outputs[0]->ctx;
  if (!g.ctx_) {
    return invalid_argument("[graph.build] output " + label(outputs[0]) + " was not made by a Context");
  }

  // Iterative DFS (graphs can be deep); post-order puts sources before users.
  // 1 = on the current path, 2 = done.
  std::unordered_map<const Tensor*, int> state;
  struct Frame {
    Tensor* t;
    int next;
  };
  std::vector<Frame> stack;
  for (Tensor* out : outputs) {
    if (out->ctx != g.ctx_) {
      return invalid_argument("[graph.build] output " + out->describe() +
                              " belongs to another context than output " + label(outputs[0]));
    }
    if (state.count(out)) continue;
    stack.push_back({out, 0});
    state[out] = 1;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next == kChildren) {
        Tensor* t = f.t;
        state[t] = 2;
        stack.pop_back();
        if (t->op == LOOM_OP_NONE) {
          g.leafs_.push_back(t);
        } else {
          g.nodes_.push_back(t);
        }
        continue;
      }
      Tensor* c = child(f.t, f.next++);
      if (!c) continue;
      if (c->ctx != g.ctx_) {
        return invalid_argument("[graph.build] tensor " + c->describe() + " (used by " + label(f.t) +
                                ") belongs to another context than output " + label(outputs[0]));
      }
      auto it = state.find(c);
      if (it == state.end()) {
        state[c] = 1;
        stack.push_back({c, 0});
      } else if (it->second == 1) {
        // c is on the current path: the path from c to the top is the cycle.
        std::string cycle;
        bool on = false;
        for (const Frame& fr : stack) {
          if (fr.t == c) on = true;
          if (on) cycle += label(fr.t) + " -> ";
        }
        return invalid_argument("[graph.build] cycle through tensor " + label(c) + ": " + cycle +
                                label(c));
      }
    }
  }
  std::unordered_set<const Tensor*> seen_out;
  for (Tensor* out : outputs) {
    if (!seen_out.insert(out).second) continue;
    out->flags |= LOOM_TENSOR_FLAG_OUTPUT;
    g.outputs_.push_back(out);
  }
  g.abi_nodes_.assign(g.nodes_.begin(), g.nodes_.end());
  // Positions of every source, once: fingerprints run on every compute.
  std::unordered_map<const loom_tensor_t*, int64_t> index;
  for (size_t i = 0; i < g.leafs_.size(); ++i) index[g.leafs_[i]] = -static_cast<int64_t>(i) - 1;
  for (size_t i = 0; i < g.nodes_.size(); ++i) index[g.nodes_[i]] = static_cast<int64_t>(i);
  auto ref = [&](const loom_tensor_t* t) -> int64_t {
    if (!t) return INT64_MIN;
    auto it = index.find(t);
    return it == index.end() ? INT64_MIN + 1 : it->second;
  };
  g.refs_.reserve(g.nodes_.size() * kRefsPerNode);
  for (const Tensor* t : g.nodes_) {
    for (int s = 0; s < LOOM_MAX_SRC; ++s) g.refs_.push_back(ref(t->src[s]));
    g.refs_.push_back(ref(t->view_src));
  }
  for (const Tensor* t : g.outputs_) g.out_refs_.push_back(ref(t));
  return g;
}

uint64_t Graph::fingerprint() const {
  auto shape = [](WordHash& f, const Tensor* t) {
    f.value(t->type);
    f.value(t->op);
    for (int d = 0; d < LOOM_MAX_DIMS; ++d) f.value(t->ne[d]);
    for (int d = 0; d < LOOM_MAX_DIMS; ++d) f.value(t->nb[d]);
    f.value(t->flags);
  };
  WordHash f;
  f.value(static_cast<uint64_t>(leafs_.size()));
  f.value(static_cast<uint64_t>(nodes_.size()));
  for (const Tensor* t : leafs_) {
    shape(f, t);
    // Where the leaf lives is part of the structure: placement and plans
    // depend on it, its address does not.
    f.value(static_cast<uint8_t>(t->data != nullptr));
    f.value(reinterpret_cast<uintptr_t>(t->buffer));
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Tensor* t = nodes_[i];
    shape(f, t);
    f.bytes(t->op_params, sizeof(t->op_params));
    for (size_t r = 0; r < kRefsPerNode; ++r) f.value(refs_[i * kRefsPerNode + r]);
    f.value(static_cast<uint64_t>(t->view_offset));
  }
  for (int64_t r : out_refs_) f.value(r);
  return f.h;
}

loom_graph_t Graph::as_abi(uint64_t fingerprint) const {
  loom_graph_t g;
  std::memset(&g, 0, sizeof(g));
  g.struct_size = sizeof(loom_graph_t);
  g.n_nodes = static_cast<int32_t>(abi_nodes_.size());
  g.nodes = abi_nodes_.data();
  g.fingerprint = fingerprint;
  return g;
}

}  // namespace loom
