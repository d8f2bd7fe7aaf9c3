#include "loom/graph.hpp"

#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>

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
struct Fnv {
  uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= b[i];
      h *= 1099511628211ull;
    }
  }
  template <typename T>
  void value(const T& v) {
    bytes(&v, sizeof(v));
  }
};

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
  return g;
}

uint64_t Graph::fingerprint() const {
  // Sources are named by position: leafs as -(i+1), nodes as i.
  std::unordered_map<const loom_tensor_t*, int64_t> index;
  for (size_t i = 0; i < leafs_.size(); ++i) index[leafs_[i]] = -static_cast<int64_t>(i) - 1;
  for (size_t i = 0; i < nodes_.size(); ++i) index[nodes_[i]] = static_cast<int64_t>(i);
  auto ref = [&](const loom_tensor_t* t) -> int64_t {
    if (!t) return INT64_MIN;
    auto it = index.find(t);
    return it == index.end() ? INT64_MIN + 1 : it->second;
  };
  auto shape = [](Fnv& f, const Tensor* t) {
    f.value(t->type);
    f.value(t->op);
    for (int d = 0; d < LOOM_MAX_DIMS; ++d) f.value(t->ne[d]);
    for (int d = 0; d < LOOM_MAX_DIMS; ++d) f.value(t->nb[d]);
    f.value(t->flags);
  };
  Fnv f;
  f.value(static_cast<uint64_t>(leafs_.size()));
  f.value(static_cast<uint64_t>(nodes_.size()));
  for (const Tensor* t : leafs_) {
    shape(f, t);
    // Where the leaf lives is part of the structure: placement and plans
    // depend on it, its address does not.
    f.value(static_cast<uint8_t>(t->data != nullptr));
    f.value(reinterpret_cast<uintptr_t>(t->buffer));
  }
  for (const Tensor* t : nodes_) {
    shape(f, t);
    f.bytes(t->op_params, sizeof(t->op_params));
    for (int s = 0; s < LOOM_MAX_SRC; ++s) f.value(ref(t->src[s]));
    f.value(ref(t->view_src));
    f.value(static_cast<uint64_t>(t->view_offset));
  }
  for (const Tensor* t : outputs_) f.value(ref(t));
  return f.h;
}

loom_graph_t Graph::as_abi() const {
  loom_graph_t g;
  std::memset(&g, 0, sizeof(g));
  g.struct_size = sizeof(loom_graph_t);
  g.n_nodes = static_cast<int32_t>(abi_nodes_.size());
  g.nodes = abi_nodes_.data();
  g.fingerprint = fingerprint();
  return g;
}

}  // namespace loom
