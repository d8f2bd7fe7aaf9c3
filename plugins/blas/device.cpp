#include "device.h"

#include <cstdlib>
#include <string>
#include <thread>

#include <cblas.h>

#include "common/glue.h"
#include "common/host_info.h"

namespace loom::blas {

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64" or so.
std::string openblas_description() {
  const char* cfg = openblas_get_config();
  std::string s = cfg != nullptr ? trim(cfg) : std::string();
  if (s.empty()) return "OpenBLAS";
  if (s.rfind("OpenBLAS", 0) != 0) s = "OpenBLAS " + s;
  return s;
}

}  // namespace

int default_blas_threads() { return common::thread_count_from_env("LOOM_BLAS_THREADS"); }

Device::Device(const loom_device_iface_t* iface)
    : buffer_type_(&handle_, buffer_config()),
      description_(openblas_description()),
      n_threads_(default_blas_threads()) {
  handle_.struct_size = sizeof(handle_);
  handle_.iface = iface;
  handle_.context = this;
}

loom_status_t* Device::get_props(loom_device_props_t* p) const {
  if (p == nullptr)
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT, "[blas.get_props] out_props is null");
  common::write_device_props(
      common::host_device_props("blas", description_.c_str(), LOOM_DEVICE_TYPE_ACCEL), p);
  return nullptr;
}

bool Device::supports_buffer_type(const loom_buffer_type_t* bt) const {
  return common::is_host_buffer_type(bt);
}

loom_status_t* Device::set_threads(int32_t n_threads) {
  if (loom_status_t* st = common::check_thread_count("blas", n_threads)) return st;
  std::lock_guard<std::mutex> lock(mu_);
  n_threads_ = n_threads;
  return nullptr;
}

int32_t Device::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_threads_;
}

loom_status_t* Device::compute(const loom_graph_t* graph, Scratch& scratch) {
  if (graph == nullptr || (graph->n_nodes > 0 && graph->nodes == nullptr) || graph->n_nodes < 0) {
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT,
                               "[blas.compute] graph is null or has no nodes array");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (applied_threads_ != n_threads_) {
    // Process-wide in OpenBLAS; set only here, under the device lock.
    openblas_set_num_threads(n_threads_);
    applied_threads_ = n_threads_;
  }
  if (!pool_) {
    pool_ = std::make_unique<common::ThreadPool>(n_threads_);
  } else if (pool_->size() != n_threads_) {
    pool_->resize(n_threads_);
  }
  Workspace ws{pool_.get(), &scratch};
  for (int32_t i = 0; i < graph->n_nodes; ++i) {
    if (loom_status_t* st = run_node(ws, graph->nodes[i])) return st;
  }
  return nullptr;
}

}  // namespace loom::blas
