// Scheduler step 2, splits and copies: cut the placed graph into maximal
// runs of compute nodes on one device (views do not cut: they compute
// nothing), and list for each split the sources its device cannot read
// where they live. Each (tensor, device) pair is copied once per graph, by
// the first split that needs it.
//
// A split is also cut before a node that needs a new copy of a result of
// an asynchronous device's split of this graph (CAP_ASYNC without
// CAP_NO_CUT: its work may still be running). The copy waits for that work; the split's nodes before
// it need not, so they run meanwhile (e.g. the cold share of a hot/cold
// sparse FFN on the cpu while the device computes the hot share, before the
// node that adds the two: docs/sparse-ffn.md).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/op_info.h"
#include "sched/scheduler_plan.hpp"

namespace loom::sched {

bool Builder::waits_on_async(size_t i, size_t dev,
                             const std::map<std::pair<int32_t, size_t>, int32_t>& copy_of) const {
  const Tensor* t = g_.nodes()[i];
  const auto n_nodes = static_cast<int32_t>(g_.nodes().size());
  for (int k = 0; k < LOOM_MAX_SRC; ++k) {
    const Tensor* s = t->source(k);
    if (!s || readable(dev, s)) continue;
    const int32_t sid = id(s);
    if (sid < 0 || copy_of.count({sid, dev})) continue;  // an error later, or copied already
    // Where the data was computed: the base's node (a leaf is ready).
    const int32_t bid = id(const_cast<Tensor*>(s)->base());
    if (bid < 0 || bid >= n_nodes) continue;
    const int32_t from = plan_->node_device[static_cast<size_t>(bid)];
    if (from < 0 || static_cast<size_t>(from) == dev) continue;
    // A device that says waiting for it part-way costs more than the
    // overlap gains (a remote one: a round trip per wait) is not overlapped.
    const uint32_t caps = devices_[static_cast<size_t>(from)]->info().caps;
    if ((caps & LOOM_DEVICE_CAP_ASYNC) != 0 && (caps & LOOM_DEVICE_CAP_NO_CUT) == 0) return true;
  }
  return false;
}

Status Builder::build_splits() {
  const auto& nodes = g_.nodes();
  plan_->splits.clear();
  plan_->copies.clear();
  std::map<std::pair<int32_t, size_t>, int32_t> copy_of;  // (tensor id, device) -> copy
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Tensor* t = nodes[i];
    const int32_t d = plan_->node_device[i];
    if (common::is_view_op(t->op) || d < 0) continue;
    const size_t dev = static_cast<size_t>(d);
    if (!plan_->splits.empty() && plan_->splits.back().device == dev && !plan_->splits.back().nodes.empty() &&
        waits_on_async(i, dev, copy_of)) {
      plan_->splits.emplace_back();
      plan_->splits.back().device = dev;
    }
    if (plan_->splits.empty() || plan_->splits.back().device != dev) {
      plan_->splits.emplace_back();
      plan_->splits.back().device = dev;
    }
    Split& split = plan_->splits.back();
    const auto split_index = static_cast<int32_t>(plan_->splits.size() - 1);
    split.nodes.push_back(static_cast<int32_t>(i));
    for (int k = 0; k < LOOM_MAX_SRC; ++k) {
      const Tensor* s = t->source(k);
      if (!s || readable(dev, s)) continue;
      bool host_data = false;
      loom_buffer_type_t* where = location(s, &host_data);
      if (host_data || !where) {
        return invalid_argument("[sched.split] source '" + std::string(s->name) + "' of node " +
                                common::describe_node(t) + " is host data without a buffer, and '" +
                                devices_[dev]->name() + "' cannot read host memory");
      }
      const int32_t sid = id(s);
      if (sid < 0) {
        return invalid_argument("[sched.split] source '" + std::string(s->name) + "' of node " +
                                common::describe_node(t) + " is not part of the graph");
      }
      auto key = std::make_pair(sid, dev);
      auto it = copy_of.find(key);
      if (it == copy_of.end()) {
        Copy c;
        c.src_id = sid;
        c.device = dev;
        c.bytes = s->nbytes();
        c.split = split_index;
        std::vector<int64_t> dims(s->ne, s->ne + LOOM_MAX_DIMS);
        std::string name = std::string(s->name) + "@" + devices_[dev]->name();
        LOOM_ASSIGN_OR_RETURN(c.tensor,
                              plan_->ctx.new_tensor(static_cast<loom_type_t>(s->type), dims, name));
        // Same layout as the source (it may be a strided view): a byte copy.
        for (int a = 0; a < LOOM_MAX_DIMS; ++a) c.tensor->nb[a] = s->nb[a];
        const auto ci = static_cast<int32_t>(plan_->copies.size());
        plan_->copies.push_back(c);
        split.copies.push_back(ci);
        it = copy_of.emplace(key, ci).first;
      }
      split.swaps.push_back(SrcSwap{static_cast<int32_t>(i), k, it->second});
    }
  }
  return Status();
}

}  // namespace loom::sched
