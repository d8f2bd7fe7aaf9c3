// Multi-device scheduler: places every node of a graph on one of an ordered
// list of devices, cuts the graph into splits (maximal runs of nodes on one
// device), plans the copies of split inputs that cross devices, plans one
// compute buffer per device, and issues the splits in order on the devices'
// streams (asynchronous devices overlap, ordered by events). Rules and the
// execution and concurrency model are in docs/scheduler.md.
//
// Usage: create with the devices (most preferred first), optionally pin
// nodes, then allocate(graph) -> set inputs with tensor_set -> compute(graph)
// -> read outputs with tensor_get. Plans are cached by a structural
// fingerprint: a graph built the same way again reuses the plan (no
// placement, no memory planning), only re-applying offsets to its tensors.
//
// Not thread-safe. Devices must outlive the scheduler; the scheduler owns
// its streams and compute buffers (released in its destructor, after which
// tensors it placed must not be used).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/registry/buffer.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/registry/registry.hpp"

namespace loom {

namespace sched {
struct Plan;      // internal (sched/scheduler_plan.hpp)
class Ordering;  // internal (sched/scheduler_sync.hpp)
struct Run;      // internal (sched/scheduler_sync.hpp)
struct Copy;     // internal (sched/scheduler_plan.hpp)
}

// One split of the current plan, for inspection and tests.
struct SchedSplit {
  size_t device = 0;       // index into Scheduler::devices()
  int32_t first_node = 0;  // graph node indices of its first and last compute node
  int32_t last_node = 0;
  std::vector<int32_t> nodes;  // graph node indices it runs (views excluded)
  // Tensors copied in before it runs: "name (N bytes)".
  std::vector<std::string> inputs;
};

// Counters of the last compute().
struct SchedStats {
  size_t splits = 0;
  size_t copies = 0;
  size_t bytes_copied = 0;
  // Bytes per link, keyed "from->to" (device or buffer type names).
  std::map<std::string, size_t> bytes_per_link;
  // Wall time of each split on the host, microseconds: copies in + issuing
  // the compute (+ its run on a synchronous device); filled only with
  // set_profile(true).
  std::vector<double> split_us;
  // Also with set_profile(true), per split: its device (index in
  // devices()), its last node's name, and when its device's compute call
  // began and returned (std::chrono::steady_clock, ns since its epoch):
  // the run itself on a synchronous device (the cpu), the queuing on an
  // asynchronous one.
  struct SplitTime {
    size_t device = 0;
    std::string last_node;
    int64_t begin_ns = 0, end_ns = 0;
  };
  std::vector<SplitTime> split_times;
  // How the splits were ordered (docs/scheduler.md, "Execution and
  // concurrency model"): events recorded after splits, waits of one stream
  // on another's event (no host involved), host waits on an event, host
  // synchronizes of a stream during the compute (the final ones not
  // counted), and input copies queued with set_tensor_async.
  size_t events_recorded = 0;
  size_t events_waited = 0;
  size_t event_syncs = 0;
  size_t stream_syncs = 0;
  size_t async_copies = 0;
  // Inputs written by set_input as queued copies on their device's stream
  // (a device with queued copies: the write goes with the device's next
  // work; the mpi plugin sends it inside its next run request).
  size_t queued_inputs = 0;
  // Copy sources read together before a split: per source device, the
  // reads of a split's copies queued on its stream and waited for once
  // (one batched request to a remote device instead of one per copy).
  size_t batched_reads = 0;
  // Copies into an asynchronous device done by its buffer's copy_tensor
  // straight from another device's buffer of the same plugin (the mpi
  // plugin: rank to rank, no bytes through the host).
  size_t direct_copies = 0;
  // Of those, the ones the plugin orders on both streams (CAP_ORDERED_COPY):
  // the host waited for neither device.
  size_t ordered_copies = 0;
};

// How much of a plan Scheduler::render shows: one entry per split (its
// device, the layers or node range it covers, node count, the weights it
// reads, the device's compute memory, and the data copied or read between
// splits), or every node, views included, with op, type and shape.
enum class PlanDetail { kSplits, kNodes };
// Text lines, or Graphviz DOT (splits: a box each and labelled edges;
// nodes: a cluster per device holding its weights and a cluster per split).
enum class PlanFormat { kText, kDot };

class Scheduler {
 public:
  // devices: non-empty, no nulls or duplicates; order = preference.
  static StatusOr<std::unique_ptr<Scheduler>> create(std::vector<registry::Device*> devices);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Force nodes to run on device (one of devices()). A pin is kept by node
  // NAME, so it holds for every node of that name in any graph computed
  // later (a rebuilt graph included) until clear_pins(); never by pointer,
  // which would dangle once a graph's context dies. Pins are part of the
  // fingerprint. pin(t, d) pins t's name (t must be named).
  Status pin(const Tensor* t, registry::Device* device);
  Status pin(const std::string& node_name, registry::Device* device);
  void clear_pins() { pins_.clear(); }

  // Plan the worst-case graph and size every device's compute buffer for it
  // once; later graphs that fit reuse the buffers.
  Status reserve(Graph& graph);
  // Plan (or reuse the plan) and place every tensor without memory. Inputs
  // may be written after this.
  Status allocate(Graph& graph);
  // allocate() when the graph is not placed, then issue every split on its
  // device's stream (ordered by events or host waits, docs/scheduler.md) and
  // return when every stream is synchronized. A device error names the
  // split and device (the lowest failing split); the scheduler stays usable.
  // compute() is submit() then finish().
  Status compute(Graph& graph);

  // Pipelined execution of several graphs (e.g. the micro-batches of a
  // prompt): submit() plans and issues a graph's splits like compute() but
  // returns without waiting for the devices, so the next submit()'s splits
  // queue behind them and device k runs graph i while device k-1 already
  // runs graph i+1. The graphs of one run are ordered as if they were one
  // long graph (docs/scheduler.md, "Pipelined submission"); they must be
  // distinct Graph objects, alive and unchanged until finish(). A graph
  // whose plan differs from the one in flight first finishes the work in
  // flight. A failure stops issuing, drains every stream and is returned
  // (by submit() when it is seen there, else by finish()).
  Status submit(Graph& graph);
  // Wait for everything submitted; the first error (lowest split, earliest
  // graph) of the run. OK when nothing is in flight.
  Status finish();
  bool in_flight() const { return run_ != nullptr; }
  // Write an input tensor of a graph about to be submitted (allocated by
  // allocate() or an earlier submit of the same plan). In the memory of a
  // device whose stream takes queued copies (CAP_ASYNC and
  // set_tensor_async): the bytes are staged (the caller may reuse `data` at
  // once) and queued on that stream, ordered after other devices' work on
  // that memory; the work is then in flight (finish() waits for it, and a
  // failure comes back from the next submit or finish). Elsewhere: once the
  // work in flight that touches its memory is done, tensor_set.
  Status set_input(Tensor* t, const void* data, size_t bytes);

  // Check mode (also LOOM_SCHED_CHECK=1): after each split, overwrite with
  // NaN bytes (0xFF) the memory of every tensor whose last reader has run
  // and that no live tensor shares, once the work touching that memory has
  // finished, so a plan that frees too early shows up as wrong results
  // instead of passing by luck. Slow (adds host waits); for tests.
  void set_check(bool on) { check_ = on; }
  // Time each split into last_stats().split_us.
  void set_profile(bool on) { profile_ = on; }
  // Pipelining (also LOOM_SCHED_PIPELINING, default 1): the number of input
  // copies that may be in flight per asynchronous destination device at
  // once, each with its own host staging buffer; a further copy into that
  // device first waits for the oldest one. n >= 1, else INVALID_ARGUMENT.
  // Changing it drops the cached plan (the next compute re-plans); not while
  // a run is in flight (INVALID_ARGUMENT, finish() first).
  Status set_pipelining(int n);
  int pipelining() const { return pipelining_; }
  // Cost-based offload (default on): a node that reads weights may run on an
  // earlier device than the weights' owner when its estimated time there,
  // weight copies included, is lower. Changing it drops the cached plans.
  void set_offload(bool on);

  const std::vector<registry::Device*>& devices() const { return devices_; }
  // Plans built so far (a reused plan does not count).
  size_t plans_built() const { return plans_built_; }
  // Plans kept besides the current one: a graph whose fingerprint matches
  // one of them takes it back instead of planning again (steps of a server
  // alternate between a few shapes); the least recently used goes first.
  static constexpr size_t kKeptPlans = 32;
  // Compute buffers allocated so far (first ones and every growth), summed
  // over the devices: after a worst-case reserve() it stays put.
  size_t buffer_allocations() const { return buffer_allocations_; }
  // The current plan's splits and copies (empty before the first plan).
  std::vector<SchedSplit> splits() const;
  size_t copy_count() const;
  // Device index of graph node i in the current plan, -1 when unknown.
  int device_of(size_t node_index) const;
  const SchedStats& last_stats() const { return stats_; }
  size_t compute_buffer_size(size_t device) const;

  // Human-readable plan (what LOOM_SCHED_DEBUG=1 prints) and Graphviz DOT
  // (one cluster per device, copies as edges between clusters), for the
  // current plan applied to `graph`.
  std::string describe(const Graph& graph) const;
  std::string to_dot(const Graph& graph) const;  // render(graph, kNodes, kDot)
  // The current plan applied to `graph` at a level of detail, in a format
  // (describe() is the node-level text).
  std::string render(const Graph& graph, PlanDetail detail, PlanFormat format) const;

 private:
  explicit Scheduler(std::vector<registry::Device*> devices);
  // The plan for graph (cached or new) and whether it was rebuilt.
  StatusOr<sched::Plan*> plan_for(const Graph& graph);
  Status apply(Graph& graph);
  Status ensure_buffers(const sched::Plan& plan);
  bool owns_buffer(const loom_buffer_t* b) const;

  std::vector<registry::Device*> devices_;
  std::vector<Stream> streams_;
  std::vector<Buffer> buffers_;                   // one compute buffer per device (may be empty)
  std::unordered_map<std::string, size_t> pins_;  // node name -> device
  std::unique_ptr<sched::Plan> plan_;  // the current plan (of the last graph)
  // Earlier plans, oldest first, each taken back when a graph of its
  // fingerprint comes again (a server's steps alternate between a few
  // shapes): at most kKeptPlans.
  std::vector<std::unique_ptr<sched::Plan>> kept_plans_;
  void drop_plans();
  size_t plans_built_ = 0;
  size_t buffer_allocations_ = 0;
  SchedStats stats_;
  // Grown-out compute buffers, kept alive: tensors of earlier graphs may still
  // point there, and a freed buffer's address could come back as an
  // application buffer. Growth is geometric, so they total less than the
  // current buffers.
  std::vector<Buffer> retired_;
  // Lives as long as the scheduler (and so every buffer above): the token
  // of the tensors it places (Tensor::placed_by).
  std::shared_ptr<const int> placement_ = std::make_shared<const int>(0);
  std::vector<unsigned char> staging_;  // host staging for synchronous copies and poison
  // Per device: whether its stream takes queued copies (CAP_ASYNC and
  // set_tensor_async) and whether it has events (CAP_EVENTS and record/wait).
  // async_: CAP_ASYNC (compute may return before the work is done).
  // ordered_copy_: CAP_ORDERED_COPY (copies between two such devices of one
  // plugin are ordered by the plugin on both streams).
  std::vector<bool> async_, async_copy_, use_events_, ordered_copy_;
  // Per device: events recorded after its splits (k-th split of a compute
  // -> events_[d][k]; a deque: the ordering keeps pointers to them while
  // more are made), and pipelining_ staging slots for queued copies, each
  // with the event recorded after the copy that used it last.
  std::vector<std::deque<Event>> events_;
  struct Slot {
    std::vector<unsigned char> bytes;
    Event done;
    bool busy = false;
  };
  std::vector<std::vector<Slot>> slots_;
  int pipelining_ = 1;
  bool debug_ = false;
  bool check_ = false;
  bool profile_ = false;
  bool offload_ = true;
  // LOOM_SCHED_QUEUED_COPIES (default 1): copies between two devices with
  // events and queued reads/writes go stream to stream, the host not waiting.
  bool queued_copies_ = true;
  std::unique_ptr<sched::Run> run_;  // work submitted since the last finish(), or null
  Status poison_dead(const Graph& graph, size_t split, sched::Ordering& order);
  // One split of graph (plan split si) onto its device's stream; false when
  // it failed (recorded in run_).
  bool issue_split(Graph& graph, size_t si);
  // fetched: the source's bytes already read (read_together), or nullptr.
  bool copy_in(const sched::Copy& cp, const Tensor* src, size_t dev, int32_t split,
               const std::vector<unsigned char>* fetched = nullptr);
  // Read the sources of split si's copies that come from devices with
  // queued reads, at least two per device, together: queued on the source's
  // stream, then one wait per device. (*fetched)[k]: copy k's bytes (in the
  // run's staged memory, alive until finish()), nullptr when it was left to
  // copy_in.
  bool read_together(Graph& graph, size_t si, int32_t split,
                     std::vector<const std::vector<unsigned char>*>* fetched);
  // Whether copy_in first offers the copy of src into dst (on device dev,
  // src on device x) to dst's buffer's copy_tensor: dev is asynchronous and
  // the copy does not go stream to stream, and both tensors live in buffers
  // of one plugin (one buffer iface) that has copy_tensor. (A synchronous dev
  // tries copy_tensor anyway, copy_bytes.)
  bool direct_copy(const Tensor* src, const Tensor* dst, size_t x, size_t dev) const;
  // The run in flight, made when there is none (stats reset).
  sched::Run& begin_run();
  Status queue_input(Tensor* t, size_t d, const void* data, size_t bytes);
  // The next event of device d in the current run (made on first use), or
  // nullptr when d has none.
  Event* next_event(size_t d);
  // Work of device e on its own memory on behalf of split `reader` (a read
  // of its results, a copy's end): a split id of its own, recorded with
  // reader's nodes, issued on e with event ev (nullptr: a stream
  // synchronize stands for it).
  Status issue_for_reader(size_t e, int32_t reader, Event* ev);
  // A fully queued copy (source stream reads, destination stream waits and
  // writes; the host does not wait) when both devices allow it.
  bool queued_copy(const sched::Copy& cp, const Tensor* src, size_t x, size_t dev, int32_t split, Status* st);
};

}  // namespace loom
