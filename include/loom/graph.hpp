// A compute graph: every tensor reachable from the outputs, nodes in a
// topological order (sources before users). Building never asserts: null
// outputs, a cycle, or tensors of different contexts give a status.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/tensor.hpp"

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
  // ABI view of the nodes for a stream (pointer valid while the graph lives).
  loom_graph_t as_abi() const;

 private:
  Context* ctx_ = nullptr;
  std::vector<Tensor*> nodes_;
  std::vector<Tensor*> leafs_;
  std::vector<Tensor*> outputs_;
  std::vector<loom_tensor_t*> abi_nodes_;
};

}  // namespace loom
