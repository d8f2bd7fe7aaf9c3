// Internal to the scheduler: the ordering of one compute()'s work across
// device streams (docs/scheduler.md, "Execution and concurrency model").
//
// Memory is tracked by domain: the memory of one device's buffer type (its
// compute buffer and any application buffer of that type), plus one domain
// for everything else (host data without a buffer, buffers of types no
// scheduler device owns). For each domain and device it keeps the last
// split of that device that touched the domain. Work that touches a domain
// is ordered after every other device's last touch of it: on the stream
// with wait_event when both devices have events, else by a host wait (event
// synchronize, or the producer's stream synchronize). Host access to a
// domain (a staged get, a synchronous set, poisoning) waits for every
// device's last touch first.
#pragma once

#include <climits>
#include <cstdint>
#include <list>
#include <string>
#include <utility>
#include <vector>

#include "loom/registry/buffer.hpp"
#include "loom/sched/scheduler.hpp"

namespace loom::sched {

class Ordering {
 public:
  // streams/events/use_events/async per device; stats is updated.
  // buffer_types: each device's own buffer type, which names its domain.
  // Split ids run on across the graphs of one run (add_splits), in issue
  // order: on each device they increase with the work queued.
  Ordering(std::vector<Stream>& streams, std::vector<loom_buffer_type_t*> buffer_types,
           const std::vector<bool>& use_events, const std::vector<bool>& async, SchedStats& stats);
  // Room for n more split ids; returns the first.
  int32_t add_splits(size_t n);

  // The domain of t's memory (its view base's buffer).
  size_t domain(const loom_tensor_t* t) const;

  size_t n_domains() const { return last_touch_.size(); }
  size_t other_domain() const { return last_touch_.size() - 1; }

  // Make device d's stream wait for every other device's last touch of
  // domain x (stream wait when possible, else host wait).
  Status stream_after_domain(size_t d, size_t x);
  // Block the host until every device's last touch of domain x is done.
  Status host_after_domain(size_t x);
  // Split si was issued on device d (compute returned OK) touching domains
  // xs; record its event when d has one.
  Status issued(size_t d, int32_t si, const std::vector<size_t>& xs, Event* event);
  // The first split of device d issued but not known to be done, -1 none.
  int32_t first_pending(size_t d) const;
  // After a failed host wait: the split whose work failed (-1 unknown) and
  // its device.
  int32_t failed_split() const { return failed_split_; }
  size_t failed_device() const { return failed_device_; }
  // Splits of device d issued in this compute, in order.
  const std::vector<int32_t>& issued_on(size_t d) const { return issued_[d]; }
  Event* event_of(int32_t si) const { return events_[static_cast<size_t>(si)]; }
  // Every device's work done (the caller synchronized all streams).
  void all_done();

 private:
  Status host_wait(size_t e, int32_t split);

  std::vector<Stream>& streams_;
  std::vector<loom_buffer_type_t*> buffer_types_;
  const std::vector<bool>& use_events_;
  const std::vector<bool>& async_;
  SchedStats& stats_;
  std::vector<std::vector<int32_t>> last_touch_;  // [domain][device] -> split, -1 none
  std::vector<std::vector<int32_t>> waited_;      // [d][e]: d's stream waits for e's split
  std::vector<int32_t> done_upto_;                // [device]: splits <= are done
  std::vector<std::vector<int32_t>> issued_;      // [device] -> splits
  std::vector<Event*> events_;                    // [split] -> recorded event or null
  int32_t failed_split_ = -1;
  size_t failed_device_ = 0;
};

}  // namespace loom::sched

namespace loom::sched {

// The work issued since the last Scheduler::finish() (one graph for
// compute(), several for submit()): its ordering, the events and staging
// slots handed out, the source swaps to undo at the end, the first failure
// and, per split id, where it came from (for the error message).
struct Run {
  Run(std::vector<Stream>& streams, std::vector<loom_buffer_type_t*> buffer_types,
      const std::vector<bool>& use_events, const std::vector<bool>& async, SchedStats& stats)
      : order(streams, std::move(buffer_types), use_events, async, stats),
        next_event(streams.size(), 0),
        next_slot(streams.size(), 0) {}

  Ordering order;
  std::vector<size_t> next_event, next_slot;  // per device
  std::vector<std::pair<loom_tensor_t**, loom_tensor_t*>> saved;  // swaps, in order
  // Bytes queued copies read from: inputs queued by set_input and sources
  // read together before a split, alive until finish() (a list: each
  // element's memory stays put while more are added).
  std::list<std::vector<unsigned char>> staged;
  // A split id names a split, or a queued read of a copy's source on the
  // source's stream (then device is the source's, local the reading split).
  struct SplitInfo {
    size_t device = 0;
    int32_t first = 0, last = 0;  // node range
    size_t graph = 0;             // graph of the run (0 = first submitted)
    int32_t local = 0;            // split index in its graph's plan; -1: an input written by set_input
  };
  std::vector<SplitInfo> splits;  // per split id
  size_t graphs = 0;
  // The first error, by split id (async errors surface late).
  int32_t failed = INT32_MAX;
  Status status;
  std::string what;
  void fail(int32_t split, const Status& st, const std::string& w) {
    if (split < failed) {
      failed = split;
      status = st;
      what = w;
    }
  }
  bool failing() const { return failed != INT32_MAX; }
};

}  // namespace loom::sched
