// Graph allocator: plans byte offsets in one buffer for every tensor of a
// graph that needs memory (no data yet, not a view), from liveness.
//  - a tensor is freed after its last consumer ran (views keep their base
//    alive until the view's last consumer);
//  - outputs are never freed; leafs that already have data are left alone;
//  - an op that allows it (op::op_can_be_inplace) reuses its first source's
//    memory when that source dies at this node;
//  - free blocks: best fit, neighbours merged.
#pragma once

#include <cstddef>
#include <functional>
#include <unordered_map>

#include "loom/runtime/graph.hpp"

namespace loom {

struct AllocPlan {
  size_t buffer_size = 0;  // bytes the buffer must have (peak of the plan)
  size_t alignment = 1;
  // Byte offset of each allocated tensor (bases only; views derive).
  std::unordered_map<const Tensor*, size_t> offsets;
  // Tensors that reuse their source's memory in place: tensor -> source.
  std::unordered_map<const Tensor*, const Tensor*> inplace;
  // Largest sum of live tensor sizes at any step (for checking peak).
  size_t max_live_bytes = 0;
};

class GraphAllocator {
 public:
  // alignment: power of two. size_of(t) gives the bytes of tensor t (dense
  // size by default).
  static StatusOr<AllocPlan> plan(const Graph& graph, size_t alignment);

  // Called for every tensor placed in the buffer (and every view of one):
  // the caller's hook, e.g. the buffer's init_tensor through the registry's
  // door (loom/plugin_calls.hpp). The runtime itself never calls a plugin.
  using PlacedFn = std::function<Status(Tensor*)>;

  // Point every planned tensor (and every view of one) at base + offset,
  // owned by `buffer` (recorded in tensor->buffer), then call `placed` on
  // it. `buffer` must be at least plan.buffer_size bytes; `base` is its base
  // address (may be null only when the plan needs no bytes).
  static Status apply(const Graph& graph, const AllocPlan& plan, loom_buffer_t* buffer, void* base,
                      const PlacedFn& placed = {});
};

// Recompute data pointers of views from their bases (after bases moved).
Status update_view(Tensor* view);

// Clears data and buffer of every leaf and node of the graph whose
// placement's owner has gone (Tensor::placed_by expired): a graph computed
// by one executor or scheduler, then handed to another after the first was
// destroyed, is placed anew instead of read through dead memory. Never
// dereferences the old buffer.
void forget_gone_placements(const Graph& graph);

}  // namespace loom
