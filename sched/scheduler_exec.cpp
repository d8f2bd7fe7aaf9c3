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

#include "loom/sched/executor.hpp"
#include "loom/runtime/log.hpp"
#include "loom/registry/plugin_calls.hpp"
#include "loom/sched/scheduler.hpp"
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
  if (run_) return invalid_argument("[sched.set_pipelining] work is in flight; finish() it first");
  if (n != pipelining_) drop_plans();
  pipelining_ = n;
  return Status();
}

Status Scheduler::compute(Graph& graph) {
  Status st = submit(graph);
  if (!st.ok()) return st;  // submit drained the run already
  return finish();
}

Status Scheduler::set_input(Tensor* t, const void* data, size_t bytes) {
  if (!t) return invalid_argument("[sched.set_input] tensor is null");
  const Tensor* base = t->base();
  for (size_t d = 0; base->buffer && d < devices_.size(); ++d) {
    if (base->buffer->buffer_type == devices_[d]->buffer_type() && async_copy_[d] && queued_copies_) {
      return queue_input(t, d, data, bytes);
    }
  }
  if (run_) {
    sched::Run& r = *run_;
    Status st = r.order.host_after_domain(r.order.domain(t));
    if (!st.ok()) {
      const int32_t f = r.order.failed_split();
      r.fail(f >= 0 ? f : 0, st, "compute");
      return finish();
    }
  }
  return tensor_set(t, data, bytes);
}

sched::Run& Scheduler::begin_run() {
  if (!run_) {
    stats_ = SchedStats{};
    std::vector<loom_buffer_type_t*> bufts;
    for (registry::Device* d : devices_) bufts.push_back(d->buffer_type());
    run_ = std::make_unique<sched::Run>(streams_, bufts, use_events_, async_, stats_);
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (async_copy_[d] && slots_[d].size() != static_cast<size_t>(pipelining_))
        slots_[d].resize(static_cast<size_t>(pipelining_));
    }
  }
  return *run_;
}

Status Scheduler::queue_input(Tensor* t, size_t d, const void* data, size_t bytes) {
  // tensor_set's checks, before anything is queued.
  if (!t->data || !t->buffer) {
    return invalid_argument("[sched.set_input] tensor '" + std::string(t->name) + "' has no memory yet (allocate first)");
  }
  if (!t->is_contiguous()) return invalid_argument("[sched.set_input] tensor '" + std::string(t->name) + "' is not contiguous");
  if (bytes > t->nbytes() || (bytes > 0 && !data)) {
    return invalid_argument("[sched.set_input] tensor '" + std::string(t->name) + "': " + std::to_string(bytes) +
                            " bytes for its " + std::to_string(t->nbytes()));
  }
  sched::Run& r = begin_run();
  // The write is work of d's stream on d's memory, with an id of its own.
  const int32_t id = r.order.add_splits(1);
  r.splits.push_back({d, 0, 0, r.graphs, -1});
  const std::string what = "writing input '" + std::string(t->name) + "'";
  Status st = r.order.stream_after_domain(d, d);  // other devices' work on that memory first
  if (!st.ok()) {
    const int32_t f = r.order.failed_split();
    r.fail(f >= 0 ? f : id, st, "compute");
    return finish();
  }
  const auto* p = static_cast<const unsigned char*>(data);
  r.staged.emplace_back(p, p + bytes);
  st = streams_[d].set_tensor_async(t, r.staged.back().data(), 0, bytes);
  if (st.ok()) st = r.order.issued(d, id, {d}, next_event(d));
  if (!st.ok()) {
    r.fail(id, st, what);
    return finish();
  }
  ++stats_.queued_inputs;
  return Status();
}

Status Scheduler::submit(Graph& graph) {
  // A graph of another plan finishes the work in flight first (plan_for).
  LOOM_RETURN_IF_ERROR(allocate(graph));
  sched::Run& r = begin_run();
  const sched::Plan& plan = *plan_;
  ++r.graphs;
  for (size_t si = 0; si < plan.splits.size(); ++si) {
    if (!issue_split(graph, si)) return finish();
  }
  return Status();
}

Event* Scheduler::next_event(size_t d) {
  if (!use_events_[d] || !async_[d]) return nullptr;
  const size_t k = run_->next_event[d]++;
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
}

bool Scheduler::queued_copy(const sched::Copy& cp, const Tensor* src, size_t x, size_t dev, int32_t split,
                            Status* st) {
  sched::Run& r = *run_;
  // The source's stream reads it after its own earlier work (which produced
  // it) and after other devices' work on its memory (rule 1).
  *st = r.order.stream_after_domain(x, x);
  if (!st->ok()) return false;
  Scheduler::Slot& slot = slots_[dev][r.next_slot[dev]++ % slots_[dev].size()];
  if (slot.busy) {
    *st = slot.done ? slot.done.synchronize() : streams_[dev].synchronize();
    ++(slot.done ? stats_.event_syncs : stats_.stream_syncs);
    slot.busy = false;
    if (!st->ok()) return false;
  }
  slot.bytes.resize(src->nbytes());
  *st = streams_[x].get_tensor_async(src, slot.bytes.data(), 0, slot.bytes.size());
  if (!st->ok()) return false;
  // The read is work of x on its own memory: an id of its own, so that host
  // writes there (inputs of the next graph) wait for it too.
  Event* ev = next_event(x);
  *st = issue_for_reader(x, split, ev);
  if (!st->ok()) return false;
  if (ev) {
    *st = streams_[dev].wait_event(ev->raw());
    ++stats_.events_waited;
  } else {
    *st = streams_[x].synchronize();  // no event after all: the host waits
    ++stats_.stream_syncs;
  }
  if (st->ok()) *st = streams_[dev].set_tensor_async(cp.tensor, slot.bytes.data(), 0, slot.bytes.size());
  if (!st->ok()) return false;
  slot.busy = true;
  ++stats_.async_copies;
  if (!slot.done) {
    auto e = devices_[dev]->create_event();
    if (e.ok()) slot.done = std::move(e).value();
  }
  if (slot.done) *st = streams_[dev].record_event(slot.done.raw());
  return st->ok();
}

bool Scheduler::direct_copy(const Tensor* src, const Tensor* dst, size_t x, size_t dev) const {
  if (!async_copy_[dev] || x >= devices_.size() || x == dev) return false;
  if (queued_copies_ && use_events_[dev] && async_[x] && use_events_[x] && streams_[x].has_get_async()) return false;
  const loom_buffer_t* sb = src->buffer;
  const loom_buffer_t* db = dst->buffer;
  return sb && db && sb->iface == db->iface && registry::buffer_offers_copy(db);
}

bool Scheduler::read_together(Graph& graph, size_t si, int32_t split,
                              std::vector<const std::vector<unsigned char>*>* fetched) {
  sched::Run& r = *run_;
  const sched::Split& s = plan_->splits[si];
  const auto& nodes = graph.nodes();
  fetched->assign(s.copies.size(), nullptr);
  // Per source device, the copies whose source it can read out queued.
  std::vector<std::vector<size_t>> by_device(devices_.size());
  for (size_t k = 0; k < s.copies.size(); ++k) {
    const sched::Copy& cp = plan_->copies[static_cast<size_t>(s.copies[k])];
    const auto i = static_cast<size_t>(cp.src_id);
    const Tensor* src = i < nodes.size() ? nodes[i] : graph.leafs()[i - nodes.size()];
    const size_t x = r.order.domain(src);
    if (x >= devices_.size() || x == s.device || !async_[x] || !streams_[x].has_get_async() || !src->buffer) continue;
    if (direct_copy(src, cp.tensor, x, s.device)) continue;  // copy_in offers it to the destination's buffer
    // Stream to stream already (queued_copy): the host never holds the bytes.
    if (queued_copies_ && async_copy_[s.device] && use_events_[s.device] && use_events_[x]) continue;
    by_device[x].push_back(k);
  }
  for (size_t x = 0; x < devices_.size(); ++x) {
    if (by_device[x].size() < 2) continue;  // one read gains nothing from a queue
    auto fail = [&](const Status& st) {
      const int32_t f = r.order.failed_split();
      r.fail(f >= 0 ? f : split, st, "reading the inputs from '" + devices_[x]->name() + "'");
      return false;
    };
    Status st = r.order.stream_after_domain(x, x);  // other devices' writes there first
    if (!st.ok()) return fail(st);
    for (size_t k : by_device[x]) {
      const sched::Copy& cp = plan_->copies[static_cast<size_t>(s.copies[k])];
      const auto i = static_cast<size_t>(cp.src_id);
      const Tensor* src = i < nodes.size() ? nodes[i] : graph.leafs()[i - nodes.size()];
      r.staged.emplace_back(src->nbytes());
      (*fetched)[k] = &r.staged.back();
      st = streams_[x].get_tensor_async(src, r.staged.back().data(), 0, r.staged.back().size());
      if (!st.ok()) return fail(st);
    }
    // The reads are work of x on its own memory; the host waits for them (and
    // everything before) once.
    st = issue_for_reader(x, split, next_event(x));  // without events the wait is a stream synchronize
    if (st.ok()) st = r.order.host_after_domain(x);
    if (!st.ok()) return fail(st);
    ++stats_.batched_reads;
  }
  return true;
}

Status Scheduler::issue_for_reader(size_t e, int32_t reader, Event* ev) {
  sched::Run& r = *run_;
  const int32_t id = r.order.add_splits(1);
  const sched::Run::SplitInfo info = r.splits[static_cast<size_t>(reader)];  // a copy: push_back may move the vector
  r.splits.push_back({e, info.first, info.last, info.graph, info.local});
  return r.order.issued(e, id, {e}, ev);
}

bool Scheduler::copy_in(const sched::Copy& cp, const Tensor* src, size_t dev, int32_t split,
                        const std::vector<unsigned char>* fetched) {
  sched::Run& r = *run_;
  auto link_name = [this](const Tensor* t) -> std::string {
    if (!t->buffer) return "host";
    for (registry::Device* d : devices_) {
      if (d->buffer_type() == t->buffer->buffer_type) return d->name();
    }
    return registry::buffer_type_name(t->buffer->buffer_type);
  };
  auto fail_wait = [&](const Status& st) {
    const int32_t f = r.order.failed_split();
    r.fail(f >= 0 ? f : split, st, "compute");
    return false;
  };
  const size_t x = r.order.domain(src);
  Status st;
  bool direct = false;
  if (direct_copy(src, cp.tensor, x, dev) && ordered_copy_[x] && ordered_copy_[dev]) {
    // Ordered by the plugin after the work queued on both streams (two
    // remote ranks: the send queued after the source's run, the receive
    // before the destination's next one): no host wait, only other
    // devices' work on the two memories first. The copy is then work of
    // each of the two devices on its own memory.
    st = r.order.stream_after_domain(x, x);
    if (st.ok()) st = r.order.stream_after_domain(dev, dev);
    if (!st.ok()) return fail_wait(st);
    st = registry::buffer_copy_tensor(cp.tensor->buffer, src, cp.tensor);
    direct = st.code() != StatusCode::kUnimplemented;  // else staged below
    for (size_t e : {x, dev}) {
      if (!direct || !st.ok()) break;
      st = issue_for_reader(e, split, next_event(e));
    }
    if (direct && st.ok()) {
      ++stats_.direct_copies;
      ++stats_.ordered_copies;
    }
  } else if (direct_copy(src, cp.tensor, x, dev)) {
    // A host-side copy like copy_bytes': the source complete, the destination idle.
    st = r.order.host_after_domain(x);
    if (st.ok()) st = r.order.host_after_domain(dev);
    if (!st.ok()) return fail_wait(st);
    st = registry::buffer_copy_tensor(cp.tensor->buffer, src, cp.tensor);
    direct = st.code() != StatusCode::kUnimplemented;  // else staged below
    if (direct && st.ok()) ++stats_.direct_copies;
  }
  if (direct) {
    // done (or failed) above
  } else if (queued_copies_ && async_copy_[dev] && use_events_[dev] && x < devices_.size() && x != dev && async_[x] &&
      use_events_[x] && streams_[x].has_get_async()) {
    if (!queued_copy(cp, src, x, dev, split, &st)) {
      const int32_t f = r.order.failed_split();
      r.fail(f >= 0 ? f : split, st, "copying '" + std::string(src->name) + "' in");
      return false;
    }
  } else if ((st = r.order.host_after_domain(x)), !st.ok()) {  // the source is complete
    return fail_wait(st);
  } else if (async_copy_[dev] && fetched) {
    // Read together already, into memory the run owns until finish(): queued
    // from there, no staging slot to wait for.
    st = streams_[dev].set_tensor_async(cp.tensor, fetched->data(), 0, fetched->size());
    if (st.ok()) ++stats_.async_copies;
  } else if (async_copy_[dev]) {
    // Queued on the destination stream (ordered after its earlier splits),
    // from a staging slot that stays alive until it is done.
    Scheduler::Slot& slot = slots_[dev][r.next_slot[dev]++ % slots_[dev].size()];
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
        const int32_t p = r.order.first_pending(dev);
        r.fail(p >= 0 ? p : split, st, "copying '" + std::string(src->name) + "' in");
        return false;
      }
    }
    st = read_bytes(src, slot.bytes);
    if (st.ok()) st = streams_[dev].set_tensor_async(cp.tensor, slot.bytes.data(), 0, slot.bytes.size());
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
    st = r.order.host_after_domain(dev);
    if (!st.ok()) return fail_wait(st);
    st = fetched ? registry::buffer_set_tensor(cp.tensor->buffer, cp.tensor, fetched->data(), 0, fetched->size())
                 : copy_bytes(src, cp.tensor, staging_);
  }
  if (!st.ok()) {
    r.fail(split, st, "copying '" + std::string(src->name) + "' in");
    return false;
  }
  ++stats_.copies;
  stats_.bytes_copied += cp.bytes;
  stats_.bytes_per_link[link_name(src) + "->" + devices_[dev]->name()] += cp.bytes;
  return true;
}

bool Scheduler::issue_split(Graph& graph, size_t si) {
  sched::Run& r = *run_;
  const sched::Plan& plan = *plan_;
  const auto& nodes = graph.nodes();
  const auto n_nodes = nodes.size();
  const sched::Split& s = plan.splits[si];
  const size_t dev = s.device;
  // The split's id in the run: its graph's first id + si.
  // Ids are handed out in issue order (queued reads of copy sources get
  // theirs in between), so on every stream they increase with the work.
  const int32_t split = r.order.add_splits(1);
  r.splits.push_back({dev, s.nodes.front(), s.nodes.back(), r.graphs - 1, static_cast<int32_t>(si)});
  const auto t0 = std::chrono::steady_clock::now();
  auto tensor = [&](int32_t id) -> Tensor* {
    const auto i = static_cast<size_t>(id);
    return i < n_nodes ? nodes[i] : graph.leafs()[i - n_nodes];
  };
  // The memory domains the split touches: its device's, and where every
  // source it reads in place and every node's base live.
  std::vector<size_t> domains(1, dev);
  auto touch = [&](const Tensor* t) {
    const size_t x = r.order.domain(t);
    if (std::find(domains.begin(), domains.end(), x) == domains.end()) domains.push_back(x);
  };
  std::vector<char> swapped(s.nodes.size() * LOOM_MAX_SRC, 0);
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
  for (size_t x : domains) {
    Status st = r.order.stream_after_domain(dev, x);
    if (!st.ok()) {
      const int32_t f = r.order.failed_split();
      r.fail(f >= 0 ? f : split, st, "compute");
      return false;
    }
  }
  std::vector<const std::vector<unsigned char>*> fetched;
  if (!read_together(graph, si, split, &fetched)) return false;
  for (size_t k = 0; k < s.copies.size(); ++k) {
    const sched::Copy& cp = plan.copies[static_cast<size_t>(s.copies[k])];
    if (!copy_in(cp, tensor(cp.src_id), dev, split, fetched[k])) return false;
  }
  // The swaps stay until every stream is synchronized in finish(): an
  // asynchronous stream may read the nodes' sources when it runs.
  for (const sched::SrcSwap& w : s.swaps) {
    Tensor* n = nodes[static_cast<size_t>(w.node)];
    r.saved.emplace_back(&n->src[w.slot], n->src[w.slot]);
    n->src[w.slot] = plan.copies[static_cast<size_t>(w.copy)].tensor;
  }
  std::vector<loom_tensor_t*> abi_nodes;
  for (int32_t i : s.nodes) abi_nodes.push_back(nodes[static_cast<size_t>(i)]);
  loom_graph_t g;
  std::memset(&g, 0, sizeof g);
  g.struct_size = sizeof(loom_graph_t);
  g.n_nodes = static_cast<int32_t>(abi_nodes.size());
  g.nodes = abi_nodes.data();
  // Each split is its own graph for the plugin: mix the split index in.
  g.fingerprint = plan.fingerprint ^ ((si + 1) * 0x9e3779b97f4a7c15ull);
  const auto c0 = std::chrono::steady_clock::now();
  Status st = streams_[dev].compute(g);
  if (profile_) {
    auto ns = [](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    };
    stats_.split_times.push_back(
        {dev, abi_nodes.empty() ? std::string() : std::string(abi_nodes.back()->name), ns(c0),
         ns(std::chrono::steady_clock::now())});
  }
  if (st.ok()) st = r.order.issued(dev, split, domains, next_event(dev));
  if (!st.ok()) {
    r.fail(split, st, "compute");
    return false;
  }
  ++stats_.splits;
  if (profile_) {
    stats_.split_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  if (check_) {
    st = poison_dead(graph, si, r.order);
    if (!st.ok()) {
      const int32_t f = r.order.failed_split();
      r.fail(f >= 0 ? f : split, st, f >= 0 ? "compute" : "check mode");
      return false;
    }
  }
  return true;
}

Status Scheduler::finish() {
  if (!run_) return Status();
  std::unique_ptr<sched::Run> run = std::move(run_);
  sched::Run& r = *run;
  // Drain every stream (on error too: queued work still reads the swapped
  // sources and the staging slots). A failed stream names its first split
  // whose event reports the failure, else its first unfinished split.
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (r.order.issued_on(d).empty() && !async_copy_[d]) continue;
    const int32_t pending = r.order.first_pending(d);
    Status st = streams_[d].synchronize();
    if (st.ok()) continue;
    int32_t at = pending;
    for (int32_t s : r.order.issued_on(d)) {
      Event* ev = s >= pending && pending >= 0 ? r.order.event_of(s) : nullptr;
      if (ev && !ev->synchronize().ok()) {
        at = s;
        break;
      }
    }
    if (at < 0) at = r.failing() ? r.failed : 0;
    r.fail(at, st, "compute");
  }
  r.order.all_done();
  for (auto& slots : slots_) {
    for (Scheduler::Slot& slot : slots) slot.busy = false;
  }
  for (auto it = r.saved.rbegin(); it != r.saved.rend(); ++it) *it->first = it->second;
  if (!r.failing()) return Status();
  const sched::Run::SplitInfo& s = r.splits[static_cast<size_t>(r.failed)];
  if (s.local < 0) {  // an input queued by set_input
    return Status(r.status.code(), "[sched.compute] on device '" + devices_[s.device]->name() + "' (" + r.what +
                                       "): " + r.status.message());
  }
  // Split numbers are per graph; with several graphs in the run, name which.
  return Status(r.status.code(),
                "[sched.compute] " + (r.graphs > 1 ? "graph " + std::to_string(s.graph) + " of the run, " : "") +
                    "split " + std::to_string(s.local) + " on device '" +
                    devices_[s.device]->name() + "' (nodes " + std::to_string(s.first) + ".." +
                    std::to_string(s.last) + ", " + r.what + "): " + r.status.message());
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
