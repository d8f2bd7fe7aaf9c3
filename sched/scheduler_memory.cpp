// Scheduler step 3, memory: byte offsets in each device's compute buffer
// for the tensors it holds (its nodes' results, the inputs placed there, the
// copies into it), from liveness over the whole execution order. Outputs
// are never freed; a tensor is freed after the last step that reads it
// (through any view or copy). Best-fit free list, neighbours merged.
// In-place reuse of a dying source is not done here (docs/scheduler.md).
#include <algorithm>
#include <climits>
#include <vector>

#include "common/align.h"
#include "common/op_info.h"
#include "loom/registry/plugin_calls.hpp"
#include "runtime/free_list.hpp"
#include "sched/scheduler_plan.hpp"

namespace loom::sched {
namespace {

using common::align_up;


// One allocation: a graph tensor (id >= 0) or a copy (copy >= 0).
struct Item {
  int32_t id = -1;
  int32_t copy = -1;
  int32_t birth = -1;  // step it is written first (-1: before the graph)
  int32_t death = -1;  // last step reading it; INT32_MAX: never freed
  size_t block = 0;
};

}  // namespace

Status Builder::plan_memory() {
  const auto& nodes = g_.nodes();
  const auto n = static_cast<int32_t>(nodes.size());
  const size_t n_ids = nodes.size() + g_.leafs().size();
  std::vector<int32_t> death(n_ids, -1);
  std::vector<int32_t> copy_death(plan_->copies.size(), -1);
  auto base_id = [&](const Tensor* s) {
    return id(s->view_src ? static_cast<const Tensor*>(s->view_src) : s);
  };
  auto use = [&](int32_t tid, int32_t step) {
    if (tid >= 0) death[static_cast<size_t>(tid)] = std::max(death[static_cast<size_t>(tid)], step);
  };
  // Which source slots read a copy instead.
  std::vector<std::vector<int32_t>> swapped(nodes.size());
  for (const Split& s : plan_->splits) {
    const int32_t start = s.nodes.front();
    for (int32_t c : s.copies)
      use(base_id(tensor(plan_->copies[static_cast<size_t>(c)].src_id)), start);
    for (const SrcSwap& w : s.swaps) {
      auto& v = swapped[static_cast<size_t>(w.node)];
      if (v.empty()) v.assign(LOOM_MAX_SRC, -1);
      v[static_cast<size_t>(w.slot)] = w.copy;
    }
  }
  for (int32_t i = 0; i < n; ++i) {
    const Tensor* t = nodes[static_cast<size_t>(i)];
    if (common::is_view_op(t->op)) continue;
    if (t->view_src) use(base_id(t), i);  // writes into its base
    use(i, i);                            // a result nobody reads dies at once
    const auto& sw = swapped[static_cast<size_t>(i)];
    for (int k = 0; k < LOOM_MAX_SRC; ++k) {
      if (!t->src[k]) continue;
      if (!sw.empty() && sw[static_cast<size_t>(k)] >= 0) {
        auto& cd = copy_death[static_cast<size_t>(sw[static_cast<size_t>(k)])];
        cd = std::max(cd, i);
      } else {
        use(base_id(t->source(k)), i);
      }
    }
  }
  for (const Tensor* o : g_.outputs()) {
    int32_t b = base_id(o);
    if (b >= 0) death[static_cast<size_t>(b)] = INT32_MAX;
  }

  plan_->birth.assign(n_ids, -1);
  plan_->death.assign(n_ids, -1);
  plan_->copy_birth.assign(plan_->copies.size(), 0);
  plan_->copy_death.assign(plan_->copies.size(), 0);
  plan_->offset.assign(n_ids, 0);
  plan_->buffer_size.assign(devices_.size(), 0);
  for (size_t d = 0; d < devices_.size(); ++d) {
    loom_buffer_type_t* buft = devices_[d]->buffer_type();
    LOOM_ASSIGN_OR_RETURN(const size_t alignment, registry::buffer_type_alignment(buft));
    Status size_error;
    auto size_of = [&](const Tensor* t) -> size_t {
      StatusOr<size_t> sz = registry::buffer_type_alloc_size(buft, t);
      if (!sz.ok()) {
        if (size_error.ok()) size_error = sz.status();
        return alignment;
      }
      return align_up(std::max<size_t>(*sz, 1), alignment);
    };
    std::vector<Item> items;
    for (size_t tid = 0; tid < n_ids; ++tid) {
      if (plan_->mem_device[tid] != static_cast<int32_t>(d)) continue;
      Item it;
      it.id = static_cast<int32_t>(tid);
      it.birth = tid < nodes.size() ? static_cast<int32_t>(tid) : -1;
      it.death = std::max(death[tid], it.birth);
      it.block = size_of(tensor(it.id));
      plan_->birth[tid] = it.birth;
      plan_->death[tid] = it.death;
      items.push_back(it);
    }
    for (size_t c = 0; c < plan_->copies.size(); ++c) {
      const Copy& cp = plan_->copies[c];
      if (cp.device != d) continue;
      Item it;
      it.copy = static_cast<int32_t>(c);
      it.birth = plan_->splits[static_cast<size_t>(cp.split)].nodes.front();
      it.death = std::max(copy_death[c], it.birth);
      it.block = size_of(cp.tensor);
      plan_->copy_birth[c] = it.birth;
      plan_->copy_death[c] = it.death;
      items.push_back(it);
    }
    LOOM_RETURN_IF_ERROR(size_error);
    if (items.empty()) continue;
    // Sweep the steps: allocate what is born at a step, then free what dies there.
    std::vector<size_t> by_birth(items.size()), by_death(items.size());
    for (size_t k = 0; k < items.size(); ++k) by_birth[k] = by_death[k] = k;
    std::stable_sort(by_birth.begin(), by_birth.end(),
                     [&](size_t a, size_t b) { return items[a].birth < items[b].birth; });
    std::stable_sort(by_death.begin(), by_death.end(),
                     [&](size_t a, size_t b) { return items[a].death < items[b].death; });
    FreeList fl;
    std::vector<size_t> off(items.size(), 0);
    size_t bi = 0, di = 0;
    while (bi < items.size()) {
      const int32_t step = items[by_birth[bi]].birth;
      for (; bi < items.size() && items[by_birth[bi]].birth == step; ++bi)
        off[by_birth[bi]] = fl.alloc(items[by_birth[bi]].block);
      const int32_t next = bi < items.size() ? items[by_birth[bi]].birth : INT32_MAX;
      // Free everything dead before the next birth step.
      for (; di < items.size() && items[by_death[di]].death < next &&
             items[by_death[di]].death != INT32_MAX;
           ++di) {
        const Item& it = items[by_death[di]];
        if (it.birth <= step) fl.free(off[by_death[di]], it.block);
      }
    }
    for (size_t k = 0; k < items.size(); ++k) {
      if (items[k].id >= 0) {
        plan_->offset[static_cast<size_t>(items[k].id)] = off[k];
      } else {
        plan_->copies[static_cast<size_t>(items[k].copy)].offset = off[k];
      }
    }
    plan_->buffer_size[d] = fl.peak();
  }
  return Status();
}

}  // namespace loom::sched
