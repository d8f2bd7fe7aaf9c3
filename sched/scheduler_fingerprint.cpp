// Structural fingerprint for plan reuse. Like Graph::fingerprint, but memory
// the scheduler placed itself counts as "none" (so computing the same graph
// twice, or a rebuilt one, gives the same value), and pins count.
#include <cstring>
#include <vector>

#include "sched/scheduler_plan.hpp"
#include "runtime/word_hash.hpp"

namespace loom::sched {
namespace {


}  // namespace

uint64_t fingerprint(const Graph& graph, const PinMap& pins, const OwnsBuffer& owns) {
  const auto& nodes = graph.nodes();
  const auto& leafs = graph.leafs();
  const std::vector<int64_t>& refs = graph.source_refs();
  constexpr size_t kRefs = Graph::kRefsPerNode;
  WordHash f;
  auto common = [&](const Tensor* t) {
    f.value(t->type);
    f.value(t->op);
    f.bytes(t->ne, sizeof(t->ne));
    f.bytes(t->nb, sizeof(t->nb));
    f.value(t->flags);
    // Where memory the application placed lives (its buffer, not its address).
    const bool placed = t->data != nullptr && !owns(t->buffer);
    f.value(static_cast<uint8_t>(placed));
    f.value(reinterpret_cast<uintptr_t>(placed ? t->buffer : nullptr));
  };
  f.value(static_cast<uint64_t>(leafs.size()));
  f.value(static_cast<uint64_t>(nodes.size()));
  for (const Tensor* t : leafs) common(t);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Tensor* t = nodes[i];
    common(t);
    f.bytes(t->op_params, sizeof(t->op_params));
    for (size_t r = 0; r < kRefs; ++r) f.value(refs[i * kRefs + r]);
    f.value(static_cast<uint64_t>(t->view_offset));
    f.value(pinned_device(pins, t));
  }
  for (int64_t r : graph.output_refs()) f.value(r);
  return f.h;
}

}  // namespace loom::sched
