// Scheduler execution: for each split in order, copy its inputs in (the
// destination buffer's copy_tensor when it can, else staged through host
// memory), point the split's nodes at the copies, run the nodes on the
// device's stream and wait. Synchronous: one split in flight at a time
// (docs/scheduler.md, "Execution").
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "loom/scheduler.hpp"
#include "scheduler_plan.hpp"

namespace loom {
namespace {

// Copy the bytes of src (any buffer, possibly a strided view: its whole
// span) into dst, which has the same layout.
Status copy_bytes(const Tensor* src, Tensor* dst, std::vector<unsigned char>& staging) {
  loom_buffer_t* db = dst->buffer;
  const loom_buffer_iface_t* di = db->iface;
  if (di->struct_size >= LOOM_STRUCT_END(loom_buffer_iface_t, copy_tensor) && di->copy_tensor) {
    Status st = status_from_abi(di->copy_tensor(db, src, dst));
    if (st.code() != StatusCode::kUnimplemented) return st;
  }
  const size_t bytes = src->nbytes();
  staging.resize(bytes);
  if (loom_buffer_t* sb = src->buffer) {
    LOOM_RETURN_IF_ERROR(status_from_abi(sb->iface->get_tensor(sb, src, staging.data(), 0, bytes)));
  } else {
    std::memcpy(staging.data(), src->data, bytes);  // host data without a buffer
  }
  return status_from_abi(di->set_tensor(db, dst, staging.data(), 0, bytes));
}

}  // namespace

Status Scheduler::compute(Graph& graph) {
  auto link_name = [this](const Tensor* t) -> std::string {
    if (!t->buffer) return "host";
    for (registry::Device* d : devices_) {
      if (d->buffer_type() == t->buffer->buffer_type) return d->name();
    }
    loom_buffer_type_t* b = t->buffer->buffer_type;
    return b->iface->name(b);
  };
  LOOM_RETURN_IF_ERROR(allocate(graph));
  const sched::Plan& plan = *plan_;
  const auto& nodes = graph.nodes();
  const auto n_nodes = nodes.size();
  auto tensor = [&](int32_t id) -> Tensor* {
    const auto i = static_cast<size_t>(id);
    return i < n_nodes ? nodes[i] : graph.leafs()[i - n_nodes];
  };
  stats_ = SchedStats{};
  std::vector<loom_tensor_t*> abi_nodes;
  std::vector<loom_tensor_t*> saved;
  for (size_t si = 0; si < plan.splits.size(); ++si) {
    const sched::Split& s = plan.splits[si];
    registry::Device* dev = devices_[s.device];
    const auto t0 = std::chrono::steady_clock::now();
    auto fail = [&](const Status& st, const std::string& what) {
      return Status(st.code(), "[sched.compute] split " + std::to_string(si) + " on device '" +
                                   dev->name() + "' (nodes " + std::to_string(s.nodes.front()) +
                                   ".." + std::to_string(s.nodes.back()) + ", " + what +
                                   "): " + st.message());
    };
    for (int32_t c : s.copies) {
      const sched::Copy& cp = plan.copies[static_cast<size_t>(c)];
      const Tensor* src = tensor(cp.src_id);
      Status st = copy_bytes(src, cp.tensor, staging_);
      if (!st.ok()) return fail(st, "copying '" + std::string(src->name) + "' in");
      ++stats_.copies;
      stats_.bytes_copied += cp.bytes;
      stats_.bytes_per_link[link_name(src) + "->" + dev->name()] += cp.bytes;
    }
    saved.clear();
    for (const sched::SrcSwap& w : s.swaps) {
      Tensor* n = nodes[static_cast<size_t>(w.node)];
      saved.push_back(n->src[w.slot]);
      n->src[w.slot] = plan.copies[static_cast<size_t>(w.copy)].tensor;
    }
    abi_nodes.clear();
    for (int32_t i : s.nodes) abi_nodes.push_back(nodes[static_cast<size_t>(i)]);
    loom_graph_t g;
    std::memset(&g, 0, sizeof g);
    g.struct_size = sizeof(loom_graph_t);
    g.n_nodes = static_cast<int32_t>(abi_nodes.size());
    g.nodes = abi_nodes.data();
    // Each split is its own graph for the plugin: mix the split index in.
    g.fingerprint = plan.fingerprint ^ ((si + 1) * 0x9e3779b97f4a7c15ull);
    Status st = streams_[s.device].compute(g);
    if (st.ok()) st = streams_[s.device].synchronize();
    for (size_t k = 0; k < s.swaps.size(); ++k) {
      nodes[static_cast<size_t>(s.swaps[k].node)]->src[s.swaps[k].slot] = saved[k];
    }
    if (!st.ok()) return fail(st, "compute");
    ++stats_.splits;
    if (profile_) {
      stats_.split_us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    if (check_) {
      st = poison_dead(graph, si);
      if (!st.ok()) return fail(st, "check mode");
    }
  }
  return Status();
}

Status Scheduler::poison_dead(const Graph& graph, size_t split) {
  const sched::Plan& plan = *plan_;
  const auto& nodes = graph.nodes();
  const int32_t from = plan.splits[split].nodes.front();
  const int32_t next =
      split + 1 < plan.splits.size() ? plan.splits[split + 1].nodes.front() : INT32_MAX - 1;
  struct Range {
    size_t device, begin, end;
    Tensor* t;
  };
  std::vector<Range> dead, live;
  auto add = [&](size_t d, Tensor* t, int32_t birth, int32_t death) {
    const size_t begin = static_cast<size_t>(static_cast<char*>(t->data) -
                                             static_cast<char*>(t->buffer->iface->base(t->buffer)));
    Range r{d, begin, begin + t->nbytes(), t};
    if (death >= from && death < next) {
      dead.push_back(r);
    } else if (birth < next && death >= next) {
      live.push_back(r);
    }
  };
  for (size_t id = 0; id < plan.mem_device.size(); ++id) {
    if (plan.mem_device[id] < 0) continue;
    Tensor* t = id < nodes.size() ? nodes[id] : graph.leafs()[id - nodes.size()];
    add(static_cast<size_t>(plan.mem_device[id]), t, plan.birth[id], plan.death[id]);
  }
  for (size_t c = 0; c < plan.copies.size(); ++c) {
    add(plan.copies[c].device, plan.copies[c].tensor, plan.copy_birth[c], plan.copy_death[c]);
  }
  for (const Range& r : dead) {
    bool shared = false;
    for (const Range& l : live)
      shared = shared || (l.device == r.device && l.begin < r.end && r.begin < l.end);
    if (shared) continue;
    staging_.assign(r.end - r.begin, 0xFF);
    loom_buffer_t* b = r.t->buffer;
    LOOM_RETURN_IF_ERROR(
        status_from_abi(b->iface->set_tensor(b, r.t, staging_.data(), 0, staging_.size())));
  }
  return Status();
}

}  // namespace loom
