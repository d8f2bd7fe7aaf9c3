#include "device.h"

#include <sys/sysinfo.h>

#include <fstream>
#include <string>

#include "common/glue.h"
#include "ops/ops.h"

namespace loom::cpu {

namespace {

constexpr int32_t kMaxThreads = 4096;

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    // x86 says "model name", some ARM kernels only "Processor" or "Hardware".
    if (line.rfind("model name", 0) == 0 || line.rfind("Processor", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = trim(line.substr(colon + 1));
        if (!v.empty()) return v;
      }
    }
  }
  return "CPU";
}

// Total and available bytes from /proc/meminfo, else sysinfo (free only).
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

Device::Device(const Ifaces& ifaces)
    : buffer_type_(&handle_, ifaces.buffer_type),
      description_(cpu_model_name()),
      n_threads_(common::default_thread_count()) {
  handle_.struct_size = sizeof(handle_);
  handle_.iface = ifaces.device;
  handle_.context = this;
}

loom_status_t* Device::get_props(loom_device_props_t* p) const {
  if (p == nullptr) return common::make_status(LOOM_STATUS_INVALID_ARGUMENT, "[cpu.get_props] out_props is null");
  const size_t size = p->struct_size;
  uint64_t total = 0;
  uint64_t avail = 0;
  host_memory(&total, &avail);
#define LOOM_CPU_SET(field, value) \
  if (size >= LOOM_STRUCT_END(loom_device_props_t, field)) p->field = (value)
  LOOM_CPU_SET(name, "cpu");
  LOOM_CPU_SET(description, description_.c_str());
  LOOM_CPU_SET(type, LOOM_DEVICE_TYPE_CPU);
  LOOM_CPU_SET(memory_total, total);
  LOOM_CPU_SET(memory_free, avail);
  LOOM_CPU_SET(has_uuid, false);
  LOOM_CPU_SET(caps, LOOM_DEVICE_CAP_HOST_BUFFER | LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR);
#undef LOOM_CPU_SET
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
                               "[cpu.set_threads] n_threads must be in [1, " + std::to_string(kMaxThreads) +
                                   "], got " + std::to_string(n_threads));
  }
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
  for (int32_t i = 0; i < graph->n_nodes; ++i) {
    if (loom_status_t* st = run_node(*pool_, graph->nodes[i])) return st;
  }
  return nullptr;
}

}  // namespace loom::cpu
