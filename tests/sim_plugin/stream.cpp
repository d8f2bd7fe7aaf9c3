// Streams and events of the simulated devices. compute runs the reference
// kernels node by node; LOOM_SIM_FAIL_AT=<node name> (read at each compute)
// makes the node of that name fail with a status naming it.
//
// Synchronous by default: compute runs before it returns, no events, no
// queued copies. With LOOM_SIM_ASYNC=1 (read at init) each stream has a
// worker thread and a FIFO: compute, set/get_tensor_async, record_event and
// wait_event enqueue and return; synchronize waits for the queue to drain
// and returns (and clears) the first error of the queued work. After an
// error the stream skips queued computes and copies until synchronize, but
// still signals events (so waiting streams never hang); an event recorded
// after failed work returns that error from its synchronize.
// LOOM_SIM_JITTER_US=N sleeps 0..N microseconds before each work item so
// races show up in tests.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/glue.h"
#include "kernels.h"
#include "sim.h"
#include "sim_trace.h"

namespace loom::sim {
namespace {

using loom::common::guarded;
using loom::common::make_status;

bool is_no_op(int32_t op) { return op == LOOM_OP_NONE || common::is_view_op(op); }

// Every tensor the node touches must live in this device's buffers.
bool in_device_memory(Device& dev, const loom_tensor_t* t) {
  return t->buffer && dev.raw()->iface->supports_buffer_type(dev.raw(), t->buffer->buffer_type);
}

struct Failure {
  loom_status_code_t code = LOOM_STATUS_OK;
  std::string message;
};

// loom.sim.trace counters: compute work items running now, the most at
// once, those that started while another ran, and all of them.
std::atomic<uint64_t> g_running{0}, g_max_running{0}, g_overlapped{0}, g_computes{0};

struct RunningScope {
  RunningScope() {
    const uint64_t before = g_running.fetch_add(1);
    ++g_computes;
    if (before > 0) ++g_overlapped;
    uint64_t m = g_max_running.load();
    while (before + 1 > m && !g_max_running.compare_exchange_weak(m, before + 1)) {
    }
  }
  ~RunningScope() { g_running.fetch_sub(1); }
};

// LOOM_SIM_PROFILE=1 (read at each compute): per op, the nodes run, the
// time in their kernels, their time with the LOOM_SIM_GBPS_<i> /
// LOOM_SIM_DELAY_US_<i> wait, and their bytes (node_bytes), logged through
// the host (category "sim", level info) by profile_report() at plugin
// shutdown. A measuring aid.
struct OpProfile {
  uint64_t nodes = 0;
  int64_t kernel_ns = 0, total_ns = 0;
  uint64_t bytes = 0;
};
std::mutex g_profile_m;
std::vector<OpProfile> g_profile(LOOM_OP_COUNT);

// v2: busy intervals of compute work items, while recording is on.
constexpr size_t kMaxIntervals = 65536;
std::atomic<bool> g_recording{false};
std::mutex g_intervals_m;
std::vector<loom_sim_trace_interval_t> g_intervals;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record_interval(size_t device, int64_t begin_ns, const char* last_node) {
  if (!g_recording.load()) return;
  loom_sim_trace_interval_t iv{};
  iv.device = static_cast<uint32_t>(device);
  iv.begin_ns = begin_ns;
  iv.end_ns = now_ns();
  std::snprintf(iv.last_node, sizeof iv.last_node, "%s", last_node ? last_node : "");
  std::lock_guard<std::mutex> lock(g_intervals_m);
  if (g_intervals.size() < kMaxIntervals) g_intervals.push_back(iv);
}

uint64_t trace_max_concurrent() { return g_max_running.load(); }
uint64_t trace_overlapped() { return g_overlapped.load(); }
uint64_t trace_computes() { return g_computes.load(); }
void trace_reset() {
  g_max_running = 0;
  g_overlapped = 0;
  g_computes = 0;
  std::lock_guard<std::mutex> lock(g_intervals_m);
  g_intervals.clear();
}
void trace_set_recording(int on) { g_recording = on != 0; }
size_t trace_intervals(loom_sim_trace_interval_t* out, size_t max) {
  std::lock_guard<std::mutex> lock(g_intervals_m);
  if (out != nullptr) std::copy_n(g_intervals.begin(), std::min(max, g_intervals.size()), out);
  return g_intervals.size();
}
const loom_sim_ext_trace_t kTraceExt = {sizeof(loom_sim_ext_trace_t), trace_max_concurrent, trace_overlapped,
                                        trace_computes, trace_reset, trace_set_recording, trace_intervals};

// Run nodes in order; the first failure stops. LOOM_SIM_DELAY_US_<i> sleeps
// that long per computed node (a fixed per-op cost for pipelining benches).
Failure run_nodes(Device& dev, const std::vector<const loom_tensor_t*>& nodes,
                  const std::string& fail_at, bool profile) {
  RunningScope running;
  const int64_t begin_ns = now_ns();
  const char* last_node = nullptr;
  const std::string& name = dev.config().name;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const loom_tensor_t* node = nodes[i];
    if (!node)
      return {LOOM_STATUS_INVALID_ARGUMENT,
              "[sim.compute] " + name + ": node " + std::to_string(i) + " is null"};
    if (is_no_op(node->op)) continue;
    if (!fail_at.empty() && fail_at == node->name) {
      return {LOOM_STATUS_INTERNAL,
              "[sim.compute] " + name + ": injected failure at node '" + node->name + "'"};
    }
    if (!node_supported(dev, node)) {
      return {LOOM_STATUS_UNIMPLEMENTED, "[sim.compute] " + name + ": op " + op_name(node->op) +
                                             " of node '" + node->name +
                                             "' is not supported here"};
    }
    for (int k = -1; k < LOOM_MAX_SRC; ++k) {
      const loom_tensor_t* t = k < 0 ? node : node->src[k];
      if (t && !in_device_memory(dev, t)) {
        return {LOOM_STATUS_INVALID_ARGUMENT, "[sim.compute] " + name + ": tensor '" + t->name +
                                                  "' of node '" + node->name +
                                                  "' is not in this device's memory"};
      }
    }
    const auto start = std::chrono::steady_clock::now();
    if (dev.config().delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(dev.config().delay_us));
    const auto t0 = std::chrono::steady_clock::now();
    std::string err = run_kernel(node);
    if (!err.empty()) return {LOOM_STATUS_INTERNAL, "[sim.compute] " + name + ": " + err};
    const auto t1 = std::chrono::steady_clock::now();
    // LOOM_SIM_GBPS_<i>: the node takes at least the time its bytes take at
    // that bandwidth (a fast device's memory; the reference kernel's own
    // time counts towards it).
    if (dev.config().gbps > 0) {
      const auto want = t0 + std::chrono::nanoseconds(static_cast<int64_t>(
                                 static_cast<double>(node_bytes(node)) / dev.config().gbps));
      std::this_thread::sleep_until(want);
    }
    last_node = node->name;
    if (profile) {
      const auto t2 = std::chrono::steady_clock::now();
      std::lock_guard<std::mutex> lock(g_profile_m);
      OpProfile& p = g_profile[static_cast<size_t>(node->op)];
      ++p.nodes;
      p.kernel_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
      p.total_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - start).count();
      p.bytes += node_bytes(node);
    }
  }
  record_interval(dev.index(), begin_ns, last_node);
  return {};
}

// Polls ready() for up to spin_us microseconds; whether it became true.
// LOOM_SIM_SPIN_US: a thread that waits for the other side polls that long
// before it blocks on a condition variable (whose wake-up can cost tens of
// microseconds in a VM), as a real device's runtime spins on a fence.
template <typename F>
bool spin_until(unsigned spin_us, F&& ready) {
  if (spin_us == 0) return ready();
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
    }
    if (std::chrono::steady_clock::now() >= until) return ready();
    std::this_thread::yield();  // a busy machine: let other runnable threads have the core
  }
}

// An event: records count up; a marker in a stream's queue signals one.
struct EventState {
  std::mutex m;
  std::condition_variable cv;
  uint64_t recorded = 0;
  std::atomic<uint64_t> signaled{0};  // written under m; read without it while spinning
  std::string failure;  // the stream's first error before the last signal, "" none
};

struct SimEvent {
  loom_event_t raw;
  std::shared_ptr<EventState> state;  // shared with queued markers and waits
};

// A work item gets the stream's first error so far ("" none); returns its
// own error or "".
using Work = std::function<std::string(const std::string& failure)>;

struct Stream {
  loom_stream_t raw;
  bool async = false;
  unsigned jitter_us = 0;
  unsigned spin_us = 0;
  std::mutex m;
  std::condition_variable cv;
  std::deque<Work> queue;
  std::atomic<size_t> queued{0};  // queue.size(), written under m; read without it while spinning
  std::atomic<bool> idle{true};   // queue empty and not busy, likewise
  bool busy = false;
  bool stop = false;
  std::string error;  // first error since the last synchronize
  std::thread worker;

  void enqueue(Work w) {
    {
      std::lock_guard<std::mutex> lock(m);
      queue.push_back(std::move(w));
      queued.store(queue.size());
      idle.store(false);
    }
    cv.notify_all();
  }

  void run() {
    std::mt19937 rng(static_cast<uint32_t>(std::hash<std::thread::id>()(std::this_thread::get_id())));
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      if (queue.empty() && !stop && spin_us > 0) {
        lock.unlock();
        spin_until(spin_us, [&] { return queued.load() > 0; });
        lock.lock();
      }
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;  // stop requested and drained
      Work w = std::move(queue.front());
      queue.pop_front();
      queued.store(queue.size());
      busy = true;
      const std::string failure = error;
      lock.unlock();
      if (jitter_us > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(
            std::uniform_int_distribution<unsigned>(0, jitter_us)(rng)));
      }
      std::string err;
      try {
        err = w(failure);
      } catch (const std::exception& e) {
        err = std::string("[sim.stream] exception: ") + e.what();
      }
      lock.lock();
      if (!err.empty() && error.empty()) error = std::move(err);
      busy = false;
      idle.store(queue.empty());
      cv.notify_all();
    }
  }
};

Stream* sim_stream(loom_stream_t* s) { return static_cast<Stream*>(s->context); }

void stream_destroy(loom_stream_t* s) {
  Stream* st = sim_stream(s);
  if (st->worker.joinable()) {
    {
      std::lock_guard<std::mutex> lock(st->m);
      st->stop = true;
    }
    st->cv.notify_all();
    st->worker.join();
  }
  delete st;
}

loom_status_t* stream_compute(loom_stream_t* s, const loom_graph_t* g) {
  return guarded("sim.compute", [&]() -> loom_status_t* {
    Stream* st = sim_stream(s);
    Device& dev = *Device::from(s->device);
    const std::string& name = dev.config().name;
    if (!g)
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[sim.compute] " + name + ": graph is null");
    const char* env = std::getenv("LOOM_SIM_FAIL_AT");
    std::string fail_at = env ? env : "";
    const char* prof_env = std::getenv("LOOM_SIM_PROFILE");  // read here, not on the worker thread
    const bool profile = prof_env && std::string(prof_env) == "1";
    // The node list is copied: the graph struct need only live for this call.
    std::vector<const loom_tensor_t*> nodes(g->nodes, g->nodes + g->n_nodes);
    if (!st->async) {
      Failure f = run_nodes(dev, nodes, fail_at, profile);
      return f.code == LOOM_STATUS_OK ? nullptr : make_status(f.code, f.message);
    }
    Device* d = &dev;
    st->enqueue([d, nodes = std::move(nodes), fail_at, profile](const std::string& failure) -> std::string {
      if (!failure.empty()) return "";  // work after a failure is skipped until synchronize
      return run_nodes(*d, nodes, fail_at, profile).message;
    });
    return nullptr;
  });
}

loom_status_t* stream_synchronize(loom_stream_t* s) {
  return guarded("sim.synchronize", [&]() -> loom_status_t* {
    Stream* st = sim_stream(s);
    if (!st->async) return nullptr;
    spin_until(st->spin_us, [&] { return st->idle.load(); });
    std::unique_lock<std::mutex> lock(st->m);
    st->cv.wait(lock, [&] { return st->queue.empty() && !st->busy; });
    std::string err = std::exchange(st->error, std::string());
    lock.unlock();
    return err.empty() ? nullptr : make_status(LOOM_STATUS_INTERNAL, err);
  });
}

// Host address range [t->data + offset, + size) inside t's buffer of this
// device, or nullptr (*why set).
char* device_range(loom_stream_t* s, const loom_tensor_t* t, size_t offset, size_t size,
                   std::string* why) {
  Device& dev = *Device::from(s->device);
  if (!t || !t->data || !t->buffer) {
    *why = "tensor has no data";
    return nullptr;
  }
  if (t->buffer->buffer_type != dev.buffer_type()) {
    *why = std::string("tensor '") + t->name + "' is not in " + dev.config().name + "'s memory";
    return nullptr;
  }
  loom_buffer_t* b = t->buffer;
  const auto base = reinterpret_cast<uintptr_t>(b->iface->base(b));
  const auto start = reinterpret_cast<uintptr_t>(t->data);
  if (start < base || offset > b->size || size > b->size - offset ||
      start - base > b->size - offset - size) {
    *why = std::string("tensor '") + t->name + "': range at offset " + std::to_string(offset) +
           " size " + std::to_string(size) + " is outside its buffer";
    return nullptr;
  }
  return data_ptr(t) + offset;
}

loom_status_t* stream_set_tensor_async(loom_stream_t* s, loom_tensor_t* t, const void* data,
                                       size_t offset, size_t size) {
  return guarded("sim.set_tensor_async", [&]() -> loom_status_t* {
    std::string why;
    char* dst = device_range(s, t, offset, size, &why);
    if (!dst) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[sim.set_tensor_async] " + why);
    sim_stream(s)->enqueue([dst, data, size](const std::string& failure) -> std::string {
      if (failure.empty() && size) std::memcpy(dst, data, size);
      return "";
    });
    return nullptr;
  });
}

loom_status_t* stream_get_tensor_async(loom_stream_t* s, const loom_tensor_t* t, void* data,
                                       size_t offset, size_t size) {
  return guarded("sim.get_tensor_async", [&]() -> loom_status_t* {
    std::string why;
    char* src = device_range(s, t, offset, size, &why);
    if (!src) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[sim.get_tensor_async] " + why);
    sim_stream(s)->enqueue([src, data, size](const std::string& failure) -> std::string {
      if (failure.empty() && size) std::memcpy(data, src, size);
      return "";
    });
    return nullptr;
  });
}

loom_status_t* stream_record_event(loom_stream_t* s, loom_event_t* e) {
  return guarded("sim.record_event", [&]() -> loom_status_t* {
    if (!e) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[sim.record_event] event is null");
    std::shared_ptr<EventState> ev = static_cast<SimEvent*>(e->context)->state;
    uint64_t target;
    {
      std::lock_guard<std::mutex> lock(ev->m);
      target = ++ev->recorded;
    }
    sim_stream(s)->enqueue([ev, target](const std::string& failure) -> std::string {
      {
        std::lock_guard<std::mutex> lock(ev->m);
        if (target > ev->signaled) {
          ev->signaled = target;
          ev->failure = failure;
        }
      }
      ev->cv.notify_all();
      return "";
    });
    return nullptr;
  });
}

loom_status_t* stream_wait_event(loom_stream_t* s, loom_event_t* e) {
  return guarded("sim.wait_event", [&]() -> loom_status_t* {
    if (!e) return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[sim.wait_event] event is null");
    std::shared_ptr<EventState> ev = static_cast<SimEvent*>(e->context)->state;
    uint64_t target;
    {
      std::lock_guard<std::mutex> lock(ev->m);
      target = ev->recorded;  // the latest record at the time of the call
    }
    const unsigned spin_us = sim_stream(s)->spin_us;
    sim_stream(s)->enqueue([ev, target, spin_us](const std::string&) -> std::string {
      spin_until(spin_us, [&] { return ev->signaled.load() >= target; });
      std::unique_lock<std::mutex> lock(ev->m);
      ev->cv.wait(lock, [&] { return ev->signaled >= target; });
      return "";
    });
    return nullptr;
  });
}

const loom_stream_iface_t kStreamIface = {
    sizeof(loom_stream_iface_t),
    stream_destroy,
    stream_compute,
    stream_synchronize,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

const loom_stream_iface_t kAsyncStreamIface = {
    sizeof(loom_stream_iface_t), stream_destroy,          stream_compute,
    stream_synchronize,          stream_set_tensor_async, stream_get_tensor_async,
    stream_record_event,         stream_wait_event,
};

void event_destroy(loom_event_t* e) { delete static_cast<SimEvent*>(e->context); }

loom_status_t* event_synchronize(loom_event_t* e) {
  return guarded("sim.event_synchronize", [&]() -> loom_status_t* {
    EventState& ev = *static_cast<SimEvent*>(e->context)->state;
    uint64_t target;
    {
      std::lock_guard<std::mutex> lock(ev.m);
      target = ev.recorded;
    }
    spin_until(Device::from(e->device)->config().spin_us, [&] { return ev.signaled.load() >= target; });
    std::unique_lock<std::mutex> lock(ev.m);
    ev.cv.wait(lock, [&] { return ev.signaled >= target; });
    return ev.failure.empty() ? nullptr : make_status(LOOM_STATUS_INTERNAL, ev.failure);
  });
}

const loom_event_iface_t kEventIface = {sizeof(loom_event_iface_t), event_destroy,
                                        event_synchronize};

}  // namespace

loom_status_t* stream_create(loom_device_t* device, loom_stream_t** out_stream) {
  return guarded("sim.stream_create", [&]() -> loom_status_t* {
    const DeviceConfig& c = Device::from(device)->config();
    auto s = std::make_unique<Stream>();
    s->async = c.async;
    s->jitter_us = c.jitter_us;
    s->spin_us = c.spin_us;
    s->raw = loom_stream_t{sizeof(loom_stream_t), c.async ? &kAsyncStreamIface : &kStreamIface,
                           device, s.get()};
    if (s->async) s->worker = std::thread([st = s.get()] { st->run(); });
    *out_stream = &s.release()->raw;
    return nullptr;
  });
}

loom_status_t* event_create(loom_device_t* device, loom_event_t** out_event) {
  return guarded("sim.event_create", [&]() -> loom_status_t* {
    auto* e = new SimEvent{};
    e->state = std::make_shared<EventState>();
    e->raw = loom_event_t{sizeof(loom_event_t), &kEventIface, device, e};
    *out_event = &e->raw;
    return nullptr;
  });
}

const void* trace_extension() { return &kTraceExt; }

void profile_report() {
  std::lock_guard<std::mutex> lock(g_profile_m);
  std::string text;
  for (size_t op = 0; op < g_profile.size(); ++op) {
    const OpProfile& p = g_profile[op];
    if (p.nodes == 0) continue;
    char line[160];
    std::snprintf(line, sizeof line, "\n  %-22s %8llu %10.3f %10.3f %10.3f %8.2f", op_name(static_cast<int32_t>(op)),
                  static_cast<unsigned long long>(p.nodes), p.kernel_ns / 1e6, p.total_ns / 1e6, p.bytes / 1e6,
                  p.kernel_ns > 0 ? static_cast<double>(p.bytes) / static_cast<double>(p.kernel_ns) : 0.0);
    text += line;
  }
  if (!text.empty()) {
    common::plugin_log(LOOM_LOG_LEVEL_INFO, "sim",
                       "profile: op, nodes, kernel ms, with waits ms, MB, kernel GB/s" + text);
  }
  g_profile.assign(LOOM_OP_COUNT, OpProfile{});
}

bool node_supported(const Device& dev, const loom_tensor_t* node) {
  if (node->op < 0 || node->op >= LOOM_OP_COUNT) return false;
  if (is_no_op(node->op)) return true;
  return dev.config().ops[static_cast<size_t>(node->op)] && kernel_exists(node);
}

}  // namespace loom::sim
