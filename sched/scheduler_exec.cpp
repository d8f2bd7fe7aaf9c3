// Scheduler execution: issue the splits in order on their devices' streams
// without waiting for each. Before a split: the waits its memory needs
// (scheduler_sync.cpp), its input copies (queued on the destination stream
// with set_tensor_async from a staging slot when the device takes queued
// copies, else synchronous), the swap of its nodes' sources to the copies.
// After it: an event on its stream. At the end every stream used is
// synchronized, the swaps are undone and the first error (lowest split) is
// returned. docs/scheduler.md, "Execution and concurrency model".
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "loom/log.hpp"
#include "loom/plugin_calls.hpp"
#include "loom/scheduler.hpp"
#include "sched/scheduler_plan.hpp"
#include "sched/scheduler_sync.hpp"

namespace loom {
namespace {

// Copy the bytes of src (any buffer, possibly a strided view: its whole
// span) into dst, which has the same layout. Synchronous.
Status copy_bytes(const Tensor* src, Tensor* dst, std::vector<unsigned char>& staging) {
  loom_buffer_t* db = dst->buffer;
  Status st = registry::buffer_copy_tensor(db, src, dst);
  if (st.code() != StatusCode::kUnimplemented) return st;
  const size_t bytes = src->nbytes();
  staging.resize(bytes);
  if (loom_buffer_t* sb = src->buffer) {
    LOOM_RETURN_IF_ERROR(registry::buffer_get_tensor(sb, src, staging.data(), 0, bytes));
  } else {
    std::memcpy(staging.data(), src->data, bytes);  // host data without a buffer
  }
  return registry::buffer_set_tensor(db, dst, staging.data(), 0, bytes);
}

// src's bytes into host memory (the source must be complete).
Status read_bytes(const Tensor* src, std::vector<unsigned char>& out) {
  const size_t bytes = src->nbytes();
  out.resize(bytes);
  if (loom_buffer_t* sb = src->buffer)
    return registry::buffer_get_tensor(sb, src, out.data(), 0, bytes);
  std::memcpy(out.data(), src->data, bytes);
  return Status();
}

}  // namespace

Status Scheduler::set_pipelining(int n) {
  if (n < 1)
    return invalid_argument("[sched.set_pipelining] n = " + std::to_string(n) + ", must be >= 1");
  if (n != pipelining_) plan_.reset();
  pipelining_ = n;
  return Status();
}

Status Scheduler::compute(Graph& graph) {
  auto link_name = [this](const Tensor* t) -> std::string {
    if (!t->buffer) return "host";
    for (registry::Device* d : devices_) {
      if (d->buffer_type() == t->buffer->buffer_type) return d->name();
    }
    return registry::buffer_type_name(t->buffer->buffer_type);
  };
  LOOM_RETURN_IF_ERROR(allocate(graph));
  const sched::Plan& plan = *plan_;
  const auto& nodes = graph.nodes();
  const auto n_nodes = nodes.size();
  const size_t n_dev = devices_.size();
  auto tensor = [&](int32_t id) -> Tensor* {
    const auto i = static_cast<size_t>(id);
    return i < n_nodes ? nodes[i] : graph.leafs()[i - n_nodes];
  };
  stats_ = SchedStats{};
  std::vector<loom_buffer_type_t*> bufts;
  for (registry::Device* d : devices_) bufts.push_back(d->buffer_type());
  sched::Ordering order(streams_, bufts, use_events_, async_, plan.splits.size(), stats_);
  for (size_t d = 0; d < n_dev; ++d) {
    if (async_copy_[d] && slots_[d].size() != static_cast<size_t>(pipelining_))
      slots_[d].resize(static_cast<size_t>(pipelining_));
  }
  std::vector<size_t> next_event(n_dev, 0), next_slot(n_dev, 0);
  // An event for the k-th split of device d, made on first use; nullptr
  // when the device has none (it then stays without).
  auto split_event = [&](size_t d) -> Event* {
    if (!use_events_[d] || !async_[d]) return nullptr;
    const size_t k = next_event[d]++;
    while (events_[d].size() <= k) {
      auto ev = devices_[d]->create_event();
      if (!ev.ok()) {
        LOOM_LOG_WARN("sched", ev.status().to_string() + "; synchronizing its stream instead");
        use_events_[d] = false;
        return nullptr;
      }
      events_[d].push_back(std::move(ev).value());
    }
    return &events_[d][k];
  };
  // The first error, by split index (async errors surface late).
  struct Failure {
    int32_t split = INT32_MAX;
    Status status;
    std::string what;
  } failure;
  auto fail = [&](int32_t si, const Status& st, const std::string& what) {
    if (si < failure.split) failure = Failure{si, st, what};
  };
  // A failed wait on another split's work: name that split.
  auto fail_wait = [&](int32_t si, const Status& st) {
    const int32_t f = order.failed_split();
    fail(f >= 0 ? f : si, st, "compute");
  };
  std::vector<std::pair<loom_tensor_t**, loom_tensor_t*>> saved;  // swaps of this compute
  std::vector<loom_tensor_t*> abi_nodes;
  std::vector<size_t> domains;
  std::vector<char> swapped;
  for (size_t si = 0; si < plan.splits.size() && failure.split == INT32_MAX; ++si) {
    const sched::Split& s = plan.splits[si];
    const size_t dev = s.device;
    const auto split = static_cast<int32_t>(si);
    const auto t0 = std::chrono::steady_clock::now();
    // The memory domains the split touches: its device's, and where every
    // source it reads in place and every node's base live.
    domains.assign(1, dev);
    auto touch = [&](const Tensor* t) {
      const size_t x = order.domain(t);
      if (std::find(domains.begin(), domains.end(), x) == domains.end()) domains.push_back(x);
    };
    swapped.assign(s.nodes.size() * LOOM_MAX_SRC, 0);
    for (const sched::SrcSwap& w : s.swaps) {
      const auto pos = std::find(s.nodes.begin(), s.nodes.end(), w.node) - s.nodes.begin();
      swapped[static_cast<size_t>(pos) * LOOM_MAX_SRC + static_cast<size_t>(w.slot)] = 1;
    }
    for (size_t k = 0; k < s.nodes.size(); ++k) {
      const Tensor* n = nodes[static_cast<size_t>(s.nodes[k])];
      touch(n);
      for (int j = 0; j < LOOM_MAX_SRC; ++j) {
        if (n->src[j] && !swapped[k * LOOM_MAX_SRC + static_cast<size_t>(j)]) touch(n->source(j));
      }
    }
    Status st;
    for (size_t x : domains) {
      st = order.stream_after_domain(dev, x);
      if (!st.ok()) break;
    }
    if (!st.ok()) {
      fail_wait(split, st);
      break;
    }
    for (int32_t c : s.copies) {
      const sched::Copy& cp = plan.copies[static_cast<size_t>(c)];
      const Tensor* src = tensor(cp.src_id);
      st = order.host_after_domain(order.domain(src));  // the source is complete
      if (!st.ok()) {
        fail_wait(split, st);
        break;
      }
      if (async_copy_[dev]) {
        // Queued on the destination stream (ordered after its earlier
        // splits), from a staging slot that stays alive until it is done.
        Scheduler::Slot& slot = slots_[dev][next_slot[dev]++ % slots_[dev].size()];
        if (slot.busy) {
          if (slot.done) {
            st = slot.done.synchronize();
            ++stats_.event_syncs;
          } else {
            st = streams_[dev].synchronize();
            ++stats_.stream_syncs;
          }
          slot.busy = false;
          if (!st.ok()) {
            fail(order.first_pending(dev) >= 0 ? order.first_pending(dev) : split, st,
                 "copying '" + std::string(src->name) + "' in");
            break;
          }
        }
        st = read_bytes(src, slot.bytes);
        if (st.ok())
          st = streams_[dev].set_tensor_async(cp.tensor, slot.bytes.data(), 0, slot.bytes.size());
        if (st.ok()) {
          slot.busy = true;
          ++stats_.async_copies;
          if (use_events_[dev] && !slot.done) {
            auto ev = devices_[dev]->create_event();
            if (ev.ok()) slot.done = std::move(ev).value();
          }
          if (slot.done) st = streams_[dev].record_event(slot.done.raw());
        }
      } else {
        // Synchronous: the destination's memory must be idle as well.
        st = order.host_after_domain(dev);
        if (!st.ok()) {
          fail_wait(split, st);
          break;
        }
        st = copy_bytes(src, cp.tensor, staging_);
      }
      if (!st.ok()) {
        fail(split, st, "copying '" + std::string(src->name) + "' in");
        break;
      }
      ++stats_.copies;
      stats_.bytes_copied += cp.bytes;
      stats_.bytes_per_link[link_name(src) + "->" + devices_[dev]->name()] += cp.bytes;
    }
    if (failure.split != INT32_MAX) break;
    // The swaps stay until every stream is synchronized at the end: an
    // asynchronous stream may read the nodes' sources when it runs.
    for (const sched::SrcSwap& w : s.swaps) {
      Tensor* n = nodes[static_cast<size_t>(w.node)];
      saved.emplace_back(&n->src[w.slot], n->src[w.slot]);
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
    st = streams_[dev].compute(g);
    if (st.ok()) st = order.issued(dev, split, domains, split_event(dev));
    if (!st.ok()) {
      fail(split, st, "compute");
      break;
    }
    ++stats_.splits;
    if (profile_) {
      stats_.split_us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    if (check_) {
      st = poison_dead(graph, si, order);
      if (!st.ok()) {
        if (order.failed_split() >= 0) {
          fail_wait(split, st);
        } else {
          fail(split, st, "check mode");
        }
      }
    }
  }
  // Drain every stream (on error too: queued work still reads the swapped
  // sources and the staging slots). A failed stream names its first split
  // whose event reports the failure, else its first unfinished split.
  for (size_t d = 0; d < n_dev; ++d) {
    if (order.issued_on(d).empty() && !async_copy_[d]) continue;
    const int32_t pending = order.first_pending(d);
    Status st = streams_[d].synchronize();
    if (st.ok()) continue;
    int32_t at = pending;
    for (int32_t s : order.issued_on(d)) {
      Event* ev = s >= pending && pending >= 0 ? order.event_of(s) : nullptr;
      if (ev && !ev->synchronize().ok()) {
        at = s;
        break;
      }
    }
    if (at < 0) at = failure.split != INT32_MAX ? failure.split : 0;
    fail(at, st, "compute");
  }
  order.all_done();
  for (auto& slots : slots_) {
    for (Scheduler::Slot& slot : slots) slot.busy = false;
  }
  for (auto it = saved.rbegin(); it != saved.rend(); ++it) *it->first = it->second;
  if (failure.split == INT32_MAX) return Status();
  const Status& st = failure.status;
  const sched::Split& s = plan.splits[static_cast<size_t>(failure.split)];
  return Status(st.code(), "[sched.compute] split " + std::to_string(failure.split) +
                               " on device '" + devices_[s.device]->name() + "' (nodes " +
                               std::to_string(s.nodes.front()) + ".." +
                               std::to_string(s.nodes.back()) + ", " + failure.what +
                               "): " + st.message());
}

Status Scheduler::poison_dead(const Graph& graph, size_t split, sched::Ordering& order) {
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
                                             static_cast<char*>(registry::buffer_base(t->buffer)));
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
    // Only once every split that may read the memory has finished.
    LOOM_RETURN_IF_ERROR(order.host_after_domain(order.domain(r.t)));
    staging_.assign(r.end - r.begin, 0xFF);
    loom_buffer_t* b = r.t->buffer;
    LOOM_RETURN_IF_ERROR(registry::buffer_set_tensor(b, r.t, staging_.data(), 0, staging_.size()));
  }
  return Status();
}

}  // namespace loom
