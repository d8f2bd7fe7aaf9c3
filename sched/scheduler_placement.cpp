// Scheduler step 1, placement: which device runs each node. Rules in order
// (docs/scheduler.md): pins; nodes reading weights go where the weights
// live; device regions grow forward then backward; the rest goes to the
// first device that supports the op; then a node moves to an earlier device
// that reads all its sources and whose results the original device reads
// (zero copies either way); views follow their base.
#include <cstdio>
#include <string>

#include "common/op_info.h"
#include "loom/runtime/types.hpp"
#include "sched/scheduler_plan.hpp"

namespace loom::sched {

namespace {
std::string us_text(double us) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", us);
  return b;
}
}  // namespace


int32_t pinned_device(const PinMap& pins, const Tensor* t) {
  if (pins.empty()) return -1;
  auto it = pins.find(t->name);
  return it == pins.end() ? -1 : static_cast<int32_t>(it->second);
}

Builder::Builder(const Graph& graph, const std::vector<registry::Device*>& devices,
                 const PinMap& pins, OwnsBuffer owns, Plan* plan)
    : g_(graph), devices_(devices), pins_(pins), owns_(std::move(owns)), plan_(plan) {
  const auto& nodes = g_.nodes();
  const auto& leafs = g_.leafs();
  ids_.reserve(nodes.size() + leafs.size());
  for (size_t i = 0; i < nodes.size(); ++i) ids_[nodes[i]] = static_cast<int32_t>(i);
  for (size_t j = 0; j < leafs.size(); ++j) ids_[leafs[j]] = static_cast<int32_t>(nodes.size() + j);
}

int32_t Builder::id(const Tensor* t) const {
  auto it = ids_.find(t);
  return it == ids_.end() ? -1 : it->second;
}

Tensor* Builder::tensor(int32_t id) const {
  const auto n = static_cast<int32_t>(g_.nodes().size());
  return id < n ? g_.nodes()[static_cast<size_t>(id)] : g_.leafs()[static_cast<size_t>(id - n)];
}

bool Builder::needs_memory(const Tensor* t) const {
  if (t->view_src) return false;
  return t->data == nullptr || owns_(t->buffer);
}

loom_buffer_type_t* Builder::location(const Tensor* t, bool* host_data) const {
  if (host_data) *host_data = false;
  const Tensor* b = t->view_src ? static_cast<const Tensor*>(t->view_src) : t;
  if (!needs_memory(b)) {
    if (!b->buffer && host_data) *host_data = true;
    return b->buffer ? b->buffer->buffer_type : nullptr;
  }
  int32_t bid = id(b);
  int32_t d = bid < 0 ? -1 : plan_->mem_device[static_cast<size_t>(bid)];
  return d < 0 ? nullptr : devices_[static_cast<size_t>(d)]->buffer_type();
}

bool Builder::readable(size_t d, const Tensor* t) const {
  bool host_data = false;
  loom_buffer_type_t* buft = location(t, &host_data);
  if (host_data) return devices_[d]->reads_host_pointers();
  return buft && devices_[d]->supports_buffer_type(buft);
}

int32_t Builder::owner_device(const loom_buffer_type_t* buft) const {
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (devices_[d]->buffer_type() == buft) return static_cast<int32_t>(d);
  }
  return -1;
}

std::string Builder::device_list() const {
  std::string s;
  for (size_t d = 0; d < devices_.size(); ++d) s += (d ? ", " : "") + devices_[d]->name();
  return s;
}

Status Builder::place() {
  const auto& nodes = g_.nodes();
  const size_t n = nodes.size();
  const size_t n_dev = devices_.size();
  std::vector<int32_t>& dev = plan_->node_device;
  dev.assign(n, -1);
  plan_->reason.assign(n, "");
  plan_->mem_device.assign(n + g_.leafs().size(), -1);
  std::vector<bool> fixed(n, false);  // pinned or forced: later passes leave them
  auto supports = [&](size_t d, const Tensor* t) { return devices_[d]->supports_op(t); };
  auto set = [&](size_t i, size_t d, std::string why) {
    dev[i] = static_cast<int32_t>(d);
    plan_->reason[i] = std::move(why);
  };

  // Pass 1: pins, writes into pre-allocated memory, weights.
  for (size_t i = 0; i < n; ++i) {
    const Tensor* t = nodes[i];
    if (common::is_view_op(t->op)) continue;
    if (const int32_t p = pinned_device(pins_, t); p >= 0) {
      const auto pd = static_cast<size_t>(p);
      if (!supports(pd, t)) {
        return unimplemented("[sched.place] node " + common::describe_node(t) + " is pinned to '" +
                             devices_[pd]->name() + "', which does not support it");
      }
      const Tensor* vb = static_cast<const Tensor*>(t->view_src);
      if (vb && !needs_memory(vb) && !readable(pd, vb)) {
        return unimplemented("[sched.place] node " + common::describe_node(t) + " is pinned to '" +
                             devices_[pd]->name() + "', which cannot write into '" + vb->name +
                             "' where it lives");
      }
      set(i, pd, "pinned");
      fixed[i] = true;
      continue;
    }
    if (t->view_src && !needs_memory(static_cast<const Tensor*>(t->view_src))) {
      // CPY/SET_ROWS into memory the application placed: run where it is readable.
      const Tensor* base = static_cast<const Tensor*>(t->view_src);
      auto fits = [&](int32_t k) {
        return k >= 0 && readable(static_cast<size_t>(k), base) &&
               supports(static_cast<size_t>(k), t);
      };
      int32_t owner = base->buffer ? owner_device(base->buffer->buffer_type) : -1;
      if (!fits(owner)) owner = -1;
      for (size_t k = 0; owner < 0 && k < n_dev; ++k) {
        if (fits(static_cast<int32_t>(k))) owner = static_cast<int32_t>(k);
      }
      if (owner < 0) {
        return unimplemented("[sched.place] node " + common::describe_node(t) + " writes into '" +
                             base->name + "', and no device among [" + device_list() +
                             "] both reads that memory and runs the op");
      }
      set(i, static_cast<size_t>(owner), "writes into '" + std::string(base->name) + "'");
      fixed[i] = true;
      continue;
    }
    for (int k = 0; k < LOOM_MAX_SRC && dev[i] < 0; ++k) {
      const Tensor* s = t->source(k);
      if (!s) continue;
      const Tensor* b = s->view_src ? static_cast<const Tensor*>(s->view_src) : s;
      if (b->op != LOOM_OP_NONE || needs_memory(b) || !b->buffer) continue;
      int32_t owner = owner_device(b->buffer->buffer_type);
      if (owner >= 0 && supports(static_cast<size_t>(owner), t)) {
        set(i, static_cast<size_t>(owner), "weights '" + std::string(b->name) + "' live there");
        // Offload: an earlier device may take it when that is estimated
        // cheaper, weight copy included (large batches).
        const double here = estimate_us(static_cast<size_t>(owner), t);
        for (size_t e = 0; offload_ && e < static_cast<size_t>(owner); ++e) {
          if (!supports(e, t)) continue;
          const double there = estimate_us(e, t);
          if (there < 0.8 * here) {
            set(i, e,
                "offload from " + devices_[static_cast<size_t>(owner)]->name() + ": est. " +
                    us_text(there) + " us vs " + us_text(here) + " us");
            break;
          }
        }
      }
    }
  }
  // Pass 2: grow regions forward, then backward.
  auto grow = [&](size_t i, int32_t& cur) {
    const Tensor* t = nodes[i];
    if (common::is_view_op(t->op)) return;
    if (dev[i] >= 0) {
      cur = dev[i];
    } else if (cur >= 0 && supports(static_cast<size_t>(cur), t)) {
      set(i, static_cast<size_t>(cur), "region of " + devices_[static_cast<size_t>(cur)]->name());
    }
  };
  int32_t cur = -1;
  for (size_t i = 0; i < n; ++i) grow(i, cur);
  cur = -1;
  for (size_t i = n; i-- > 0;) grow(i, cur);
  // Pass 3: fill by support, in device order.
  for (size_t i = 0; i < n; ++i) {
    const Tensor* t = nodes[i];
    if (common::is_view_op(t->op) || dev[i] >= 0) continue;
    for (size_t d = 0; d < n_dev && dev[i] < 0; ++d) {
      if (supports(d, t))
        set(i, d, d == 0 ? "first device" : "fallback: earlier devices lack the op");
    }
    if (dev[i] < 0) {
      return unimplemented("[sched.place] no device runs node " + common::describe_node(t) +
                           "; asked: " + device_list());
    }
  }
  // Memory of results and inputs, then pass 4 (preferred device) in order so
  // each move sees where its sources already live.
  auto locate_inputs = [&](size_t i) {
    const Tensor* t = nodes[i];
    for (int k = 0; k < LOOM_MAX_SRC; ++k) {
      const Tensor* s = t->source(k);
      if (!s) continue;
      const Tensor* b = s->view_src ? static_cast<const Tensor*>(s->view_src) : s;
      int32_t bid = id(b);
      if (b->op == LOOM_OP_NONE && bid >= 0 && needs_memory(b) &&
          plan_->mem_device[static_cast<size_t>(bid)] < 0) {
        plan_->mem_device[static_cast<size_t>(bid)] = dev[i];
      }
    }
  };
  for (size_t i = 0; i < n; ++i) {
    const Tensor* t = nodes[i];
    if (common::is_view_op(t->op)) continue;
    if (t->view_src && needs_memory(static_cast<const Tensor*>(t->view_src))) {
      // CPY/SET_ROWS into a tensor the scheduler places: follow that tensor.
      const Tensor* base = static_cast<const Tensor*>(t->view_src);
      int32_t bd = plan_->mem_device[static_cast<size_t>(id(base))];
      if (bd >= 0 && bd != dev[i]) {
        if (!supports(static_cast<size_t>(bd), t)) {
          return unimplemented("[sched.place] node " + common::describe_node(t) + " writes into '" +
                               base->name + "' on '" + devices_[static_cast<size_t>(bd)]->name() +
                               "', which does not support it");
        }
        set(i, static_cast<size_t>(bd), "writes into '" + std::string(base->name) + "'");
      }
    } else if (!fixed[i]) {
      const size_t d = static_cast<size_t>(dev[i]);
      for (size_t e = 0; e < d; ++e) {
        if (!supports(e, t) || !devices_[d]->supports_buffer_type(devices_[e]->buffer_type()))
          continue;
        bool all = true;
        for (int k = 0; k < LOOM_MAX_SRC && all; ++k) {
          if (t->src[k]) all = readable(e, t->source(k));
        }
        if (!all) continue;
        const double here = estimate_us(d, t);
        const double there = estimate_us(e, t);
        if (there < here) {
          set(i, e,
              "moved from " + devices_[d]->name() + ": reads the same buffers, est. " + us_text(there) +
                  " us vs " + us_text(here) + " us");
          break;
        }
      }
    }
    locate_inputs(i);
    if (needs_memory(t)) plan_->mem_device[i] = dev[i];
  }
  // Inputs nothing computes from (only outputs): the first device.
  for (size_t j = 0; j < g_.leafs().size(); ++j) {
    if (needs_memory(g_.leafs()[j]) && plan_->mem_device[n + j] < 0) plan_->mem_device[n + j] = 0;
  }
  return Status();
}

}  // namespace loom::sched
