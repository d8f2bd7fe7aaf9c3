#include "loom/runtime/allocator.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "loom/runtime/ops.hpp"
#include "common/align.h"
#include "runtime/free_list.hpp"

namespace loom {
namespace {

using common::align_up;


// Views own no memory: the reshape family, and CPY/SET_ROWS whose result
// aliases their destination (view_src set by the builder).
bool is_view(const Tensor* t) { return t->view_src != nullptr; }

bool is_output(const Tensor* t) { return (t->flags & LOOM_TENSOR_FLAG_OUTPUT) != 0; }

struct Info {
  int children = 0;        // references from sources of later nodes
  int views = 0;           // live views of this base
  bool planned = false;    // memory comes from this plan
  bool handed_on = false;  // its block now belongs to an in-place successor
  size_t block = 0;        // aligned block size
};

class Planner {
 public:
  Planner(const Graph& g, size_t alignment) : g_(g), alignment_(alignment) {}

  AllocPlan run() {
    plan_.alignment = alignment_;
    count_references();
    // Inputs (leafs without memory) are written before the graph runs, so
    // they are all live from the start.
    for (Tensor* leaf : g_.leafs()) {
      if (needs_memory(leaf)) allocate(leaf);
    }
    note_live();
    for (Tensor* node : g_.nodes()) {
      if (needs_memory(node)) {
        const Tensor* src = inplace_source(node);
        if (src) {
          take_over(node, src);
        } else {
          allocate(node);
        }
      }
      note_live();
      release_sources(node);
    }
    plan_.buffer_size = free_.peak();
    return std::move(plan_);
  }

 private:
  static bool needs_memory(const Tensor* t) { return !t->data && !is_view(t); }

  void count_references() {
    for (Tensor* node : g_.nodes()) {
      for (int i = 0; i < LOOM_MAX_SRC; ++i) {
        if (node->src[i]) info_[node->source(i)].children++;
      }
      if (is_view(node)) info_[static_cast<const Tensor*>(node->view_src)].views++;
    }
  }

  void allocate(Tensor* t) {
    Info& in = info_[t];
    const size_t size = t->nbytes();
    in.block = align_up(size, alignment_);
    in.planned = true;
    plan_.offsets[t] = free_.alloc(in.block);
    live_ += size;
  }

  // Memory of src's base, taken over by node: the base dies at this node.
  void take_over(Tensor* node, const Tensor* src) {
    const Tensor* base = is_view(src) ? static_cast<const Tensor*>(src->view_src) : src;
    Info& b = info_[base];
    Info& n = info_[node];
    n.planned = true;
    n.block = b.block;
    b.handed_on = true;
    plan_.offsets[node] = plan_.offsets[base];
    plan_.inplace[node] = src;
    live_ = live_ - base->nbytes() + node->nbytes();
  }

  // The source whose memory `node` may overwrite, or nullptr.
  const Tensor* inplace_source(const Tensor* node) {
    if (!op::op_can_be_inplace(node->op)) return nullptr;
    const Tensor* src = node->source(0);
    if (!src) return nullptr;
    const Tensor* base = is_view(src) ? static_cast<const Tensor*>(src->view_src) : src;
    auto bit = info_.find(base);
    if (bit == info_.end()) return nullptr;
    const Info& b = bit->second;  // element references survive rehashing
    if (!b.planned || b.handed_on) return nullptr;
    if (is_output(base) || is_output(src)) return nullptr;
    // Same type, shape and dense layout: element i of the result sits where
    // element i of the source was.
    if (src->type != node->type || !src->is_contiguous() || !node->is_contiguous()) return nullptr;
    for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
      if (src->ne[d] != node->ne[d]) return nullptr;
    }
    if (is_view(src) && src->view_offset != 0) return nullptr;
    if (node->nbytes() > b.block) return nullptr;
    // The base must die here: every other reader already ran. A second
    // source aliasing the base (another view, or the base under a view)
    // keeps a count up, so it blocks reuse too.
    int refs = 0;
    for (int i = 0; i < LOOM_MAX_SRC; ++i) refs += node->src[i] == src;
    const Info& s = info_[src];
    if (src == base) return (s.children == refs && s.views == 0) ? src : nullptr;
    return (s.children == refs && b.views == 1 && b.children == 0) ? src : nullptr;
  }

  void release_sources(const Tensor* node) {
    for (int i = 0; i < LOOM_MAX_SRC; ++i) {
      const Tensor* s = node->source(i);
      if (!s) continue;
      Info& in = info_[s];
      if (--in.children > 0) continue;
      if (is_view(s)) {
        // A consumed view no longer pins its base (unless it is an output:
        // then its base lives to the end).
        if (is_output(s)) continue;
        const Tensor* base = static_cast<const Tensor*>(s->view_src);
        Info& b = info_[base];
        if (--b.views == 0 && b.children == 0) release(base);
      } else if (in.views == 0) {
        release(s);
      }
    }
  }

  void release(const Tensor* t) {
    Info& in = info_[t];
    if (!in.planned || in.handed_on || is_output(t)) return;
    in.handed_on = true;  // never released twice
    free_.free(plan_.offsets[t], in.block);
    live_ -= t->nbytes();
  }

  void note_live() { plan_.max_live_bytes = std::max(plan_.max_live_bytes, live_); }

  const Graph& g_;
  size_t alignment_;
  AllocPlan plan_;
  FreeList free_;
  std::unordered_map<const Tensor*, Info> info_;
  size_t live_ = 0;
};

}  // namespace

StatusOr<AllocPlan> GraphAllocator::plan(const Graph& graph, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return invalid_argument("[allocator.plan] alignment " + std::to_string(alignment) +
                            " is not a power of two");
  }
  return Planner(graph, alignment).run();
}

Status GraphAllocator::apply(const Graph& graph, const AllocPlan& plan, loom_buffer_t* buffer, void* base_ptr,
                             const PlacedFn& placed) {
  if (!buffer) return invalid_argument("[allocator.apply] buffer is null");
  if (buffer->size < plan.buffer_size) {
    return invalid_argument("[allocator.apply] buffer has " + std::to_string(buffer->size) +
                            " bytes, the plan needs " + std::to_string(plan.buffer_size));
  }
  char* base = plan.buffer_size > 0 ? static_cast<char*>(base_ptr) : nullptr;
  if (plan.buffer_size > 0 && !base) return internal_error("[allocator.apply] buffer base is null");
  // Bases first (leafs, then nodes in order), then views, which derive.
  auto init = [&](Tensor* t) -> Status {
    if (!placed) return Status();
    Status st = placed(t);
    return st.ok() ? st : st.with_context("allocator.apply: '" + std::string(t->name) + "'");
  };
  auto place = [&](Tensor* t) -> Status {
    auto it = plan.offsets.find(t);
    if (it == plan.offsets.end()) return Status();
    if (t->data && t->buffer != buffer) {
      return invalid_argument("[allocator.apply] tensor " + t->describe() +
                              " already has memory in another buffer");
    }
    if (it->second + t->nbytes() > plan.buffer_size) {
      return internal_error("[allocator.apply] plan places " + t->describe() + " at offset " +
                            std::to_string(it->second) + " past the buffer size " +
                            std::to_string(plan.buffer_size));
    }
    t->data = base + it->second;
    t->buffer = buffer;
    return init(t);
  };
  for (Tensor* t : graph.leafs()) LOOM_RETURN_IF_ERROR(place(t));
  for (Tensor* t : graph.nodes()) LOOM_RETURN_IF_ERROR(place(t));
  for (Tensor* t : graph.nodes()) {
    if (!t->view_src) continue;
    Tensor* b = t->base();
    if (!b->data) continue;  // base placed elsewhere later; update_view then
    LOOM_RETURN_IF_ERROR(update_view(t));
    if (b->buffer == buffer) LOOM_RETURN_IF_ERROR(init(t));
  }
  return Status();
}

void forget_gone_placements(const Graph& graph) {
  const std::weak_ptr<const void> none;
  auto forget = [&none](Tensor* t) {
    // Set once (not an empty weak_ptr) and expired since.
    const bool set = t->placed_by.owner_before(none) || none.owner_before(t->placed_by);
    if (!set || !t->placed_by.expired()) return;
    t->data = nullptr;
    t->buffer = nullptr;
    t->placed_by.reset();
  };
  for (Tensor* t : graph.leafs()) forget(t);
  for (Tensor* t : graph.nodes()) forget(t);
  // Views follow their bases (update_view places them again).
  for (Tensor* t : graph.nodes()) {
    if (t->view_src != nullptr && t->base()->data == nullptr) {
      t->data = nullptr;
      t->buffer = nullptr;
    }
  }
}

Status update_view(Tensor* view) {
  if (!view) return invalid_argument("[allocator.update_view] tensor is null");
  if (!view->view_src) {
    return invalid_argument("[allocator.update_view] " + view->describe() + " is not a view");
  }
  Tensor* b = view->base();
  if (!b->data) {
    return invalid_argument("[allocator.update_view] base " + b->describe() + " of view " +
                            view->describe() + " has no memory yet");
  }
  view->data = static_cast<char*>(b->data) + view->view_offset;
  view->buffer = b->buffer;
  return Status();
}

}  // namespace loom
