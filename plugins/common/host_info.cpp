#include "common/host_info.h"

#include <sys/sysinfo.h>

#include <fstream>

namespace loom::common {

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

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

loom_device_props_t host_device_props(const char* name, const char* description, int32_t type) {
  loom_device_props_t p{};
  p.struct_size = sizeof p;
  p.name = name;
  p.description = description;
  p.type = type;
  host_memory(&p.memory_total, &p.memory_free);
  p.has_uuid = false;
  p.caps = LOOM_DEVICE_CAP_HOST_BUFFER | LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR;
  return p;
}

}  // namespace loom::common
