// Internal to the scheduler: the plan (indices only, so it applies to any
// graph with the same fingerprint) and the builder that fills it. The
// builder's steps live in one file each: placement, splits/copies, memory.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/runtime/graph.hpp"
#include "loom/registry/registry.hpp"

namespace loom::sched {

// Tensor ids: node i -> i, leaf j -> n_nodes + j.
struct Copy {
  int32_t src_id = -1;       // tensor copied
  size_t device = 0;         // destination device
  Tensor* tensor = nullptr;  // the copy (owned by Plan::ctx)
  size_t bytes = 0;
  size_t offset = 0;  // in the destination's compute buffer
  int32_t split = 0;  // split that copies it in
};

// During a split, node `node` reads copy `copy` instead of its source `slot`.
struct SrcSwap {
  int32_t node = 0;
  int32_t slot = 0;
  int32_t copy = 0;
};

struct Split {
  size_t device = 0;
  std::vector<int32_t> nodes;   // compute nodes (views excluded), in order
  std::vector<int32_t> copies;  // copies made before it runs
  std::vector<SrcSwap> swaps;
};

struct Plan {
  uint64_t fingerprint = 0;
  int32_t n_nodes = 0;
  int32_t n_leafs = 0;
  std::vector<int32_t> node_device;  // per node: device running it; pure views: -1
  std::vector<int32_t> mem_device;   // per tensor id: compute buffer holding it, -1 none
  std::vector<size_t> offset;        // per tensor id, valid when mem_device >= 0
  std::vector<std::string> reason;   // per node: why it runs where it does
  std::vector<Split> splits;
  std::vector<Copy> copies;
  std::vector<size_t> buffer_size;  // per device
  // Liveness (steps are node indices; -1 before the graph; INT32_MAX never
  // dies), kept for the check mode that poisons dead memory.
  std::vector<int32_t> birth, death;            // per tensor id
  std::vector<int32_t> copy_birth, copy_death;  // per copy
  Context ctx;                                  // owns the copy tensors
};


using PinMap = std::unordered_map<std::string, size_t>;  // node name -> device
// The device node t is pinned to, or -1.
int32_t pinned_device(const PinMap& pins, const Tensor* t);
using OwnsBuffer = std::function<bool(const loom_buffer_t*)>;

// Structural fingerprint for plan reuse: ops, types, shapes, strides,
// params, sources, where pre-allocated tensors live, outputs, pins. Memory
// the scheduler placed itself counts as "no memory".
uint64_t fingerprint(const Graph& graph, const PinMap& pins, const OwnsBuffer& owns);

class Builder {
 public:
  Builder(const Graph& graph, const std::vector<registry::Device*>& devices, const PinMap& pins,
          OwnsBuffer owns, Plan* plan);
  Status build();  // place, split, plan memory
  void set_offload(bool on) { offload_ = on; }

  // Steps (one file each).
  Status place();         // scheduler_placement.cpp
  Status build_splits();  // scheduler_splits.cpp
  // Whether node i (on dev) needs a new copy of a result an asynchronous
  // device computed in this graph (build_splits cuts before it).
  bool waits_on_async(size_t i, size_t dev, const std::map<std::pair<int32_t, size_t>, int32_t>& copy_of) const;
  Status plan_memory();   // scheduler_memory.cpp

  // Helpers shared by the steps.
  int32_t id(const Tensor* t) const;
  Tensor* tensor(int32_t id) const;
  // Whether t holds memory the scheduler must place (a base with no data,
  // or with data in one of the scheduler's own buffers).
  bool needs_memory(const Tensor* t) const;
  // Buffer type holding t's memory (base resolved); nullptr when unknown yet
  // or host data without a buffer (*host_data set then).
  loom_buffer_type_t* location(const Tensor* t, bool* host_data = nullptr) const;
  // Whether device d reads t where it lives.
  bool readable(size_t d, const Tensor* t) const;
  int32_t owner_device(const loom_buffer_type_t* buft) const;
  // Estimated microseconds for node t on device d, copies of its sources
  // included (scheduler_cost.cpp).
  double estimate_us(size_t d, const Tensor* t) const;
  std::string device_list() const;

 private:
  const Graph& g_;
  const std::vector<registry::Device*>& devices_;
  const PinMap& pins_;
  OwnsBuffer owns_;
  bool offload_ = true;
  Plan* plan_;
  std::unordered_map<const Tensor*, int32_t> ids_;
};

// Debug print and DOT (scheduler_debug.cpp). describe_plan: every split
// with its copies and every node with the reason for its device (what
// LOOM_SCHED_DEBUG=1 prints); describe_splits / splits_to_dot: one entry per
// split with the data crossing between them; plan_to_dot: every node.
// allocated: the compute buffers' sizes per device (may be empty).
std::string describe_plan(const Plan& plan, const Graph& graph,
                          const std::vector<registry::Device*>& devices);
std::string describe_splits(const Plan& plan, const Graph& graph, const std::vector<registry::Device*>& devices,
                            const std::vector<size_t>& allocated);
std::string splits_to_dot(const Plan& plan, const Graph& graph, const std::vector<registry::Device*>& devices,
                          const std::vector<size_t>& allocated);
std::string plan_to_dot(const Plan& plan, const Graph& graph, const std::vector<registry::Device*>& devices,
                        const std::vector<size_t>& allocated);

}  // namespace loom::sched
