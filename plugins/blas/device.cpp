#include "device.h"

#include <sys/sysinfo.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <cblas.h>

#include "common/glue.h"

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

// Total and available bytes from /proc/meminfo, else sysinfo.
void host_memory(uint64_t* total, uint64_t* avail) {
  *total = 0;
  *avail = 0;
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemTotal:") *total = kb * 1024;
    if (key == "MemAvailable:") *avail = kb * 1024;
  }
  struct sysinfo si {};
  if ((*total == 0 || *avail == 0) && sysinfo(&si) == 0) {
    if (*total == 0) *total = static_cast<uint64_t>(si.totalram) * si.mem_unit;
    if (*avail == 0) *avail = static_cast<uint64_t>(si.freeram) * si.mem_unit;
  }
}

}  // namespace

int default_blas_threads() {
  if (const char* env = std::getenv("LOOM_BLAS_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1 && n <= Device::kMaxThreads)
      return static_cast<int>(n);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

Device::Device(const Ifaces& ifaces)
    : buffer_type_(&handle_, ifaces.buffer_type),
      description_(openblas_description()),
      n_threads_(default_blas_threads()) {
  handle_.struct_size = sizeof(handle_);
  handle_.iface = ifaces.device;
  handle_.context = this;
}

loom_status_t* Device::get_props(loom_device_props_t* p) const {
  if (p == nullptr)
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT, "[blas.get_props] out_props is null");
  const size_t size = p->struct_size;
  uint64_t total = 0;
  uint64_t avail = 0;
  host_memory(&total, &avail);
#define LOOM_BLAS_SET(field, value) \
  if (size >= LOOM_STRUCT_END(loom_device_props_t, field)) p->field = (value)
  LOOM_BLAS_SET(name, "blas");
  LOOM_BLAS_SET(description, description_.c_str());
  LOOM_BLAS_SET(type, LOOM_DEVICE_TYPE_ACCEL);
  LOOM_BLAS_SET(memory_total, total);
  LOOM_BLAS_SET(memory_free, avail);
  LOOM_BLAS_SET(has_uuid, false);
  LOOM_BLAS_SET(caps, LOOM_DEVICE_CAP_HOST_BUFFER | LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR);
#undef LOOM_BLAS_SET
  if (size >= LOOM_STRUCT_END(loom_device_props_t, pci_bus_id)) p->pci_bus_id[0] = '\0';
  if (size >= LOOM_STRUCT_END(loom_device_props_t, uuid)) {
    for (uint8_t& b : p->uuid) b = 0;
  }
  return nullptr;
}

bool Device::supports_buffer_type(const loom_buffer_type_t* bt) const {
  if (bt == nullptr || bt->iface == nullptr || bt->iface->is_host == nullptr) return false;
  return bt->iface->is_host(const_cast<loom_buffer_type_t*>(bt));
}

loom_status_t* Device::set_threads(int32_t n_threads) {
  if (n_threads < 1 || n_threads > kMaxThreads) {
    return common::make_status(LOOM_STATUS_INVALID_ARGUMENT,
                               "[blas.set_threads] n_threads must be in [1, " +
                                   std::to_string(kMaxThreads) + "], got " +
                                   std::to_string(n_threads));
  }
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
