// A compute graph: every tensor reachable from the outputs, nodes in a
// topological order (sources before users). Building never asserts: null
// outputs, a cycle, or tensors of different contexts give a status.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/runtime/tensor.hpp"

namespace loom {

class Graph {
 public:
  // Outputs get LOOM_TENSOR_FLAG_OUTPUT. The graph refers to tensors of one
  // context and is valid as long as that context.
  static StatusOr<Graph> build(const std::vector<Tensor*>& outputs);

  // Tensors with an op (views included), in execution order.
  const std::vector<Tensor*>& nodes() const { return nodes_; }
  // Tensors without an op (inputs, weights), in first-use order.
  const std::vector<Tensor*>& leafs() const { return leafs_; }
  const std::vector<Tensor*>& outputs() const { return outputs_; }
  Context* context() const { return ctx_; }
  // Structural fingerprint: ops, types, shapes, strides, params, sources and
  // where leafs live (buffer identity).
  uint64_t fingerprint() const;
  // Sources by position, fixed at build: for node i, kRefsPerNode entries
  // (src[0..LOOM_MAX_SRC), then view_src): leaf j as -(j+1), node j as j,
  // none as INT64_MIN, a tensor outside the graph as INT64_MIN + 1.
  static constexpr size_t kRefsPerNode = LOOM_MAX_SRC + 1;
  const std::vector<int64_t>& source_refs() const { return refs_; }
  // The outputs the same way.
  const std::vector<int64_t>& output_refs() const { return out_refs_; }
  // ABI view of the nodes for a stream (pointer valid while the graph lives),
  // with `fingerprint` as its fingerprint (callers have usually computed it).
  loom_graph_t as_abi(uint64_t fingerprint) const;
  loom_graph_t as_abi() const { return as_abi(fingerprint()); }

 private:
  Context* ctx_ = nullptr;
  std::vector<Tensor*> nodes_;
  std::vector<Tensor*> leafs_;
  std::vector<Tensor*> outputs_;
  std::vector<loom_tensor_t*> abi_nodes_;
  std::vector<int64_t> refs_;
  std::vector<int64_t> out_refs_;
};

}  // namespace loom
