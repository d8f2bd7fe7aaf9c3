// Scheduler: creation, pins, the plan cache (reuse by fingerprint), device
// compute buffers and applying a plan's offsets to a graph's tensors.
// Execution is in scheduler_exec.cpp; the planning steps in
// scheduler_{placement,splits,memory}.cpp.
#include "loom/sched/scheduler.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "loom/runtime/allocator.hpp"
#include "loom/runtime/log.hpp"
#include "runtime/env.hpp"
#include "loom/registry/plugin_calls.hpp"
#include "sched/scheduler_plan.hpp"
#include "sched/scheduler_sync.hpp"

namespace loom {
namespace {

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}


}  // namespace

Status sched::Builder::build() {
  LOOM_RETURN_IF_ERROR(place());
  LOOM_RETURN_IF_ERROR(build_splits());
  return plan_memory();
}

Scheduler::Scheduler(std::vector<registry::Device*> devices) : devices_(std::move(devices)) {
  debug_ = env_flag("LOOM_SCHED_DEBUG", false);
  check_ = env_flag("LOOM_SCHED_CHECK", false);
  pipelining_ = static_cast<int>(env_int("LOOM_SCHED_PIPELINING", 1, 64, 1));
  queued_copies_ = env_flag("LOOM_SCHED_QUEUED_COPIES", true);
}

Scheduler::~Scheduler() {
  // Work still in flight reads the compute buffers released below.
  if (run_) (void)finish();
}

StatusOr<std::unique_ptr<Scheduler>> Scheduler::create(std::vector<registry::Device*> devices) {
  if (devices.empty()) return invalid_argument("[sched.create] no devices given");
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i])
      return invalid_argument("[sched.create] device " + std::to_string(i) + " is null");
    for (size_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) {
        return invalid_argument("[sched.create] device '" + devices[i]->name() +
                                "' is listed twice (at " + std::to_string(j) + " and " +
                                std::to_string(i) + ")");
      }
    }
  }
  std::unique_ptr<Scheduler> s(new Scheduler(std::move(devices)));
  s->buffers_.resize(s->devices_.size());
  for (registry::Device* d : s->devices_) {
    auto stream = d->create_stream();
    if (!stream.ok())
      return stream.status().with_context("sched.create: stream of '" + d->name() + "'");
    s->streams_.push_back(std::move(stream).value());
    // Events only where the device says so and the stream has the entries.
    const uint32_t caps = d->info().caps;
    const Stream& st = s->streams_.back();
    s->async_.push_back((caps & LOOM_DEVICE_CAP_ASYNC) != 0);
    s->async_copy_.push_back((caps & LOOM_DEVICE_CAP_ASYNC) != 0 && st.has_set_async());
    s->ordered_copy_.push_back((caps & LOOM_DEVICE_CAP_ASYNC) != 0 && (caps & LOOM_DEVICE_CAP_ORDERED_COPY) != 0);
    s->use_events_.push_back((caps & LOOM_DEVICE_CAP_EVENTS) != 0 && st.has_events() &&
                             d->has_events());
  }
  s->events_.resize(s->devices_.size());
  s->slots_.resize(s->devices_.size());
  return s;
}

Status Scheduler::pin(const Tensor* t, registry::Device* device) {
  if (!t) return invalid_argument("[sched.pin] tensor is null");
  if (t->name[0] == '\0')
    return invalid_argument("[sched.pin] tensor " + t->describe() +
                            " has no name; pins are by name");
  return pin(std::string(t->name), device);
}

Status Scheduler::pin(const std::string& node_name, registry::Device* device) {
  if (node_name.empty()) return invalid_argument("[sched.pin] empty node name");
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (devices_[d] == device) {
      pins_[node_name] = d;
      return Status();
    }
  }
  return invalid_argument("[sched.pin] device '" + (device ? device->name() : std::string("null")) +
                          "' is not one of the scheduler's devices");
}

void Scheduler::set_offload(bool on) {
  if (on != offload_ && run_) {
    Status st = finish();  // the work in flight uses the plan dropped here
    if (!st.ok()) LOOM_LOG_WARN("sched", st.to_string());
  }
  if (on != offload_) drop_plans();
  offload_ = on;
}

bool Scheduler::owns_buffer(const loom_buffer_t* b) const {
  if (!b) return false;
  for (const Buffer& buf : buffers_) {
    if (buf.raw() == b) return true;
  }
  for (const Buffer& r : retired_) {
    if (r.raw() == b) return true;
  }
  return false;
}

void Scheduler::drop_plans() {
  plan_.reset();
  kept_plans_.clear();
}

StatusOr<sched::Plan*> Scheduler::plan_for(const Graph& graph) {
  auto owns = [this](const loom_buffer_t* b) { return owns_buffer(b); };
  const uint64_t fp = sched::fingerprint(graph, pins_, owns);
  if (plan_ && plan_->fingerprint == fp) return plan_.get();
  // Work in flight still uses the current plan's copies: finish it first.
  if (run_) LOOM_RETURN_IF_ERROR(finish());
  const std::string from = plan_ ? hex(plan_->fingerprint) + " -> " : std::string();
  // The current plan is kept; a kept one of this fingerprint comes back.
  if (plan_) kept_plans_.push_back(std::move(plan_));
  for (auto it = kept_plans_.begin(); it != kept_plans_.end(); ++it) {
    if ((*it)->fingerprint != fp) continue;
    plan_ = std::move(*it);
    kept_plans_.erase(it);
    LOOM_LOG_DEBUG("sched", "plan kept: fingerprint " + from + hex(fp));
    return plan_.get();
  }
  if (log_enabled(LogLevel::kDebug, "sched")) {
    log(LogLevel::kDebug, "sched",
        from.empty() ? "plan: first graph, fingerprint " + hex(fp)
                     : "re-plan: fingerprint " + from + hex(fp) + " (nodes " + std::to_string(graph.nodes().size()) +
                           ", leafs " + std::to_string(graph.leafs().size()) + ")");
  }
  if (kept_plans_.size() > kKeptPlans) kept_plans_.erase(kept_plans_.begin());
  auto plan = std::make_unique<sched::Plan>();
  plan->fingerprint = fp;
  plan->n_nodes = static_cast<int32_t>(graph.nodes().size());
  plan->n_leafs = static_cast<int32_t>(graph.leafs().size());
  sched::Builder builder(graph, devices_, pins_, owns, plan.get());
  builder.set_offload(offload_);
  LOOM_RETURN_IF_ERROR(builder.build());
  plan_ = std::move(plan);
  ++plans_built_;
  if (debug_) std::fprintf(stderr, "%s", sched::describe_plan(*plan_, graph, devices_).c_str());
  return plan_.get();
}

Status Scheduler::ensure_buffers(const sched::Plan& plan) {
  for (size_t d = 0; d < devices_.size(); ++d) {
    const size_t need = plan.buffer_size[d];
    if (need == 0 || (buffers_[d] && buffers_[d].size() >= need)) continue;
    size_t size = need;
    if (buffers_[d]) {
      size = std::max(need, 2 * buffers_[d].size());
      retired_.push_back(std::move(buffers_[d]));
    }
    auto buf = devices_[d]->alloc_buffer(size);
    if (!buf.ok()) {
      return buf.status().with_context("sched.alloc: compute buffer of " + std::to_string(size) +
                                       " bytes on '" + devices_[d]->name() + "'");
    }
    buffers_[d] = std::move(buf).value();
    ++buffer_allocations_;
    LOOM_LOG_DEBUG("sched", "compute buffer on " + devices_[d]->name() + ": " +
                                std::to_string(size) + " bytes");
  }
  return Status();
}

Status Scheduler::apply(Graph& graph) {
  const sched::Plan& plan = *plan_;
  const auto& nodes = graph.nodes();
  const auto& leafs = graph.leafs();
  if (nodes.size() != static_cast<size_t>(plan.n_nodes) ||
      leafs.size() != static_cast<size_t>(plan.n_leafs)) {
    return internal_error("[sched.apply] plan has " + std::to_string(plan.n_nodes) +
                          " nodes, graph " + std::to_string(nodes.size()));
  }
  auto place = [&](Tensor* t, size_t d, size_t offset) -> Status {
    loom_buffer_t* b = buffers_[d].raw();
    if (!b)
      return internal_error("[sched.apply] no compute buffer on '" + devices_[d]->name() + "'");
    void* data = static_cast<char*>(buffers_[d].base()) + offset;
    // The plan's own tensors (copy destinations) are shared by every graph
    // of a pipelined run: when already in place they are left untouched, as
    // a device may still be reading them for the previous graph.
    if (t->data == data && t->buffer == b) return Status();
    t->data = data;
    t->buffer = b;
    t->placed_by = placement_;
    Status st = registry::buffer_init_tensor(b, t);
    return st.ok() ? st : st.with_context("sched.apply");
  };
  for (size_t id = 0; id < plan.mem_device.size(); ++id) {
    const int32_t d = plan.mem_device[id];
    if (d < 0) continue;
    Tensor* t = id < nodes.size() ? nodes[id] : leafs[id - nodes.size()];
    LOOM_RETURN_IF_ERROR(place(t, static_cast<size_t>(d), plan.offset[id]));
  }
  for (const sched::Copy& c : plan.copies)
    LOOM_RETURN_IF_ERROR(place(c.tensor, c.device, c.offset));
  for (Tensor* t : nodes) {
    if (!t->view_src || !t->base()->data) continue;
    LOOM_RETURN_IF_ERROR(update_view(t));
    if (owns_buffer(t->buffer)) LOOM_RETURN_IF_ERROR(registry::buffer_init_tensor(t->buffer, t));
  }
  return Status();
}

Status Scheduler::reserve(Graph& graph) {
  forget_gone_placements(graph);
  LOOM_ASSIGN_OR_RETURN(sched::Plan * plan, plan_for(graph));
  return ensure_buffers(*plan);
}

Status Scheduler::allocate(Graph& graph) {
  forget_gone_placements(graph);
  LOOM_ASSIGN_OR_RETURN(sched::Plan * plan, plan_for(graph));
  LOOM_RETURN_IF_ERROR(ensure_buffers(*plan));
  return apply(graph);
}

std::vector<SchedSplit> Scheduler::splits() const {
  std::vector<SchedSplit> out;
  if (!plan_) return out;
  for (const sched::Split& s : plan_->splits) {
    SchedSplit o;
    o.device = s.device;
    o.nodes = s.nodes;
    o.first_node = s.nodes.front();
    o.last_node = s.nodes.back();
    for (int32_t c : s.copies) {
      const sched::Copy& cp = plan_->copies[static_cast<size_t>(c)];
      std::string name = cp.tensor->name;
      o.inputs.push_back(name.substr(0, name.rfind('@')) + " (" + std::to_string(cp.bytes) +
                         " bytes)");
    }
    out.push_back(std::move(o));
  }
  return out;
}

size_t Scheduler::copy_count() const { return plan_ ? plan_->copies.size() : 0; }

int Scheduler::device_of(size_t node_index) const {
  if (!plan_ || node_index >= plan_->node_device.size()) return -1;
  return plan_->node_device[node_index];
}

size_t Scheduler::compute_buffer_size(size_t device) const {
  return device < buffers_.size() ? buffers_[device].size() : 0;
}

std::string Scheduler::describe(const Graph& graph) const {
  return plan_ ? sched::describe_plan(*plan_, graph, devices_) : "(no plan)\n";
}

std::string Scheduler::to_dot(const Graph& graph) const {
  return render(graph, PlanDetail::kNodes, PlanFormat::kDot);
}

std::string Scheduler::render(const Graph& graph, PlanDetail detail, PlanFormat format) const {
  const bool dot = format == PlanFormat::kDot;
  if (!plan_) return dot ? "digraph loom_plan {}\n" : "(no plan)\n";
  std::vector<size_t> allocated;
  for (size_t d = 0; d < devices_.size(); ++d) allocated.push_back(compute_buffer_size(d));
  if (detail == PlanDetail::kNodes) {
    return dot ? sched::plan_to_dot(*plan_, graph, devices_, allocated) : sched::describe_plan(*plan_, graph, devices_);
  }
  return dot ? sched::splits_to_dot(*plan_, graph, devices_, allocated)
             : sched::describe_splits(*plan_, graph, devices_, allocated);
}

}  // namespace loom
