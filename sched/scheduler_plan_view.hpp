// Internal to the scheduler: the facts `loom plan` and LOOM_SCHED_DEBUG show
// about a plan applied to a graph, gathered once for every renderer
// (scheduler_debug.cpp): where each tensor lives, which split produces it,
// what each split covers (layers, nodes, weights) and the data crossing
// between splits (copies, and reads of another device's memory in place).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/runtime/graph.hpp"
#include "loom/registry/registry.hpp"
#include "sched/scheduler_plan.hpp"

namespace loom::sched {

// Where a tensor's memory is: a device's memory (index into the device
// list), or a place no device of the list owns (a buffer type of another
// device, or host data without a buffer), named.
struct Location {
  int32_t device = -1;  // >= 0: devices[device]
  std::string name;     // the device's name, else the buffer type's, else "host"
  bool operator==(const Location& o) const { return device == o.device && name == o.name; }
};

struct SplitFacts {
  size_t device = 0;
  int32_t first = 0, last = 0;  // first and last compute node
  size_t n_nodes = 0;           // compute nodes
  size_t n_views = 0;           // view nodes of its results
  // Layers whose weights (GGUF names blk.N.*) its nodes read, directly or
  // through earlier nodes: "layers 2-3", "layer 4", "" when none.
  std::string layers;
  std::vector<std::string> other_weights;  // weights read outside any layer
  size_t n_weights = 0;                    // weights read where they live
  size_t weight_bytes = 0;
};

// Data entering split `to` from split `from` (>= 0) or from the memory of
// source location `from_location` (when from < 0): graph inputs, weights,
// caches. copied: through the scheduler's copies, else read in place.
struct SplitEdge {
  int32_t from = -1;
  int32_t from_location = -1;  // index into PlanView::sources
  int32_t to = 0;
  bool copied = true;
  size_t tensors = 0;
  size_t bytes = 0;
};

struct PlanView {
  size_t n_ids = 0;               // nodes then leafs (the plan's tensor ids)
  std::vector<Location> where;    // per tensor id: its memory's location (views: their base's)
  std::vector<int32_t> producer;  // per tensor id: split computing its data, -1 for leaf data
  std::vector<SplitFacts> splits;
  std::vector<Location> sources;  // locations of leaf data entering some split
  std::vector<SplitEdge> edges;
  std::vector<size_t> device_weight_bytes;  // per device: weights of the graph it holds
  size_t copy_bytes = 0;
};

// The facts of plan p applied to graph g (p must match g).
PlanView make_plan_view(const Plan& p, const Graph& g, const std::vector<registry::Device*>& devices);

// "1.5 KiB (1536 B)"-style sizes: bytes below 1 KiB exactly, else one decimal
// of the largest binary unit.
std::string human_bytes(size_t bytes);

}  // namespace loom::sched
