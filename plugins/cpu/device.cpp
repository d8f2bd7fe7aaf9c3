#include "device.h"

#include <string>

#include "common/glue.h"
#include "common/host_info.h"
#include "ops/ops.h"
#include "weight_layout.h"

namespace loom::cpu {

Device::Device(const loom_device_iface_t* iface)
    : buffer_type_(&handle_, buffer_config()),
      weight_type_(&handle_, weight_buffer_config()),
      description_(common::cpu_model_name()),
      n_threads_(common::default_thread_count()) {
  handle_.struct_size = sizeof(handle_);
  handle_.iface = iface;
  handle_.context = this;
  set_weight_buffer_type(weight_type_.handle());
}

loom_status_t* Device::get_props(loom_device_props_t* p) const {
  if (p == nullptr) return common::make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cpu.get_props] out_props is null");
  common::write_device_props(
      common::host_device_props("cpu", description_.c_str(), LOOM_DEVICE_TYPE_CPU), p);
  return nullptr;
}

bool Device::supports_buffer_type(const loom_buffer_type_t* bt) const {
  return common::is_host_buffer_type(bt) || (bt != nullptr && bt->context == &weight_type_);
}

loom_status_t* Device::set_threads(int32_t n_threads) {
  if (loom_status_t* st = common::check_thread_count("cpu", n_threads)) return st;
  std::lock_guard<std::mutex> lock(mu_);
  n_threads_ = n_threads;
  return nullptr;
}

int32_t Device::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_threads_;
}

loom_status_t* Device::compute(const loom_graph_t* graph) {
  if (graph == nullptr || (graph->n_nodes > 0 && graph->nodes == nullptr) || graph->n_nodes < 0) {
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cpu.compute] graph is null or has no nodes array");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!pool_) {
    pool_ = std::make_unique<common::ThreadPool>(n_threads_);
  } else if (pool_->size() != n_threads_) {
    pool_->resize(n_threads_);
  }
  const bool timed = profile_.on();  // a clock read per node only when profiling
  const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  for (int32_t i = 0; i < graph->n_nodes; ++i) {
    const auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    if (loom_status_t* st = run_node(*pool_, scratch_, graph->nodes[i])) return st;
    if (timed) profile_.add(graph->nodes[i], std::chrono::steady_clock::now() - t0);
  }
  if (timed) profile_.computed(graph, std::chrono::steady_clock::now() - start);
  return nullptr;
}

}  // namespace loom::cpu
