// Scheduler execution, ordering: which waits one split's work needs so that
// no device reads memory before its producer finished or overwrites memory
// another device may still read (scheduler_sync.hpp; docs/scheduler.md,
// "Execution and concurrency model").
#include "sched/scheduler_sync.hpp"

#include <algorithm>
#include <utility>

namespace loom::sched {

Ordering::Ordering(std::vector<Stream>& streams, std::vector<loom_buffer_type_t*> buffer_types,
                   const std::vector<bool>& use_events, const std::vector<bool>& async,
                   SchedStats& stats)
    : streams_(streams),
      buffer_types_(std::move(buffer_types)),
      use_events_(use_events),
      async_(async),
      stats_(stats) {
  const size_t n = streams.size();
  last_touch_.assign(n + 1, std::vector<int32_t>(n, -1));
  waited_.assign(n, std::vector<int32_t>(n, -1));
  done_upto_.assign(n, -1);
  issued_.assign(n, {});
}

int32_t Ordering::add_splits(size_t n) {
  const auto first = static_cast<int32_t>(events_.size());
  events_.resize(events_.size() + n, nullptr);
  return first;
}

size_t Ordering::domain(const loom_tensor_t* t) const {
  while (t->view_src) t = t->view_src;
  if (!t->buffer) return other_domain();
  for (size_t d = 0; d < buffer_types_.size(); ++d) {
    if (buffer_types_[d] == t->buffer->buffer_type) return d;
  }
  return other_domain();
}

Status Ordering::host_wait(size_t e, int32_t split) {
  if (split <= done_upto_[e]) return Status();
  Event* ev = events_[static_cast<size_t>(split)];
  Status st;
  if (ev) {
    st = ev->synchronize();
    ++stats_.event_syncs;
    if (st.ok()) done_upto_[e] = std::max(done_upto_[e], split);
  } else {
    st = streams_[e].synchronize();
    ++stats_.stream_syncs;
    if (st.ok() && !issued_[e].empty()) done_upto_[e] = issued_[e].back();
  }
  if (!st.ok()) {
    // With events, the failed split is the first pending one whose event
    // reports the failure; otherwise the first pending one.
    failed_device_ = e;
    failed_split_ = first_pending(e);
    for (int32_t s : issued_[e]) {
      if (s <= done_upto_[e] || s > split) continue;
      Event* pe = events_[static_cast<size_t>(s)];
      if (pe && !pe->synchronize().ok()) {
        failed_split_ = s;
        break;
      }
    }
  }
  return st;
}

Status Ordering::stream_after_domain(size_t d, size_t x) {
  for (size_t e = 0; e < streams_.size(); ++e) {
    const int32_t s = last_touch_[x][e];
    if (e == d || s < 0 || s <= done_upto_[e] || s <= waited_[d][e]) continue;
    Event* ev = events_[static_cast<size_t>(s)];
    if (ev && use_events_[d]) {
      LOOM_RETURN_IF_ERROR(streams_[d].wait_event(ev->raw()));
      waited_[d][e] = s;
      ++stats_.events_waited;
    } else {
      LOOM_RETURN_IF_ERROR(host_wait(e, s));
    }
  }
  return Status();
}

Status Ordering::host_after_domain(size_t x) {
  for (size_t e = 0; e < streams_.size(); ++e) {
    const int32_t s = last_touch_[x][e];
    if (s >= 0) LOOM_RETURN_IF_ERROR(host_wait(e, s));
  }
  return Status();
}

Status Ordering::issued(size_t d, int32_t si, const std::vector<size_t>& xs, Event* event) {
  issued_[d].push_back(si);
  for (size_t x : xs) last_touch_[x][d] = si;
  if (!async_[d]) {
    done_upto_[d] = si;  // a synchronous stream finished before compute returned
    return Status();
  }
  if (event) {
    LOOM_RETURN_IF_ERROR(streams_[d].record_event(event->raw()));
    events_[static_cast<size_t>(si)] = event;
    ++stats_.events_recorded;
  }
  return Status();
}

int32_t Ordering::first_pending(size_t d) const {
  for (int32_t s : issued_[d]) {
    if (s > done_upto_[d]) return s;
  }
  return -1;
}

void Ordering::all_done() {
  for (size_t d = 0; d < issued_.size(); ++d) {
    if (!issued_[d].empty()) done_upto_[d] = issued_[d].back();
  }
}

}  // namespace loom::sched
