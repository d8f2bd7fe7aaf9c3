#include "driver.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdlib>

namespace loom::cuda {
namespace {

// The driver API entries used before the runtime is touched (cuda.h's
// signatures; CUresult is an int, 0 = success, 100 = no device).
using CuInit = int (*)(unsigned int);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
constexpr int kCudaErrorNoDevice = 100;

}  // namespace

std::string cuda_version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

DriverProbe probe_driver() {
  DriverProbe p;
  const char* env = secure_getenv("LOOM_CUDA_DRIVER");
  const std::string file = (env && *env) ? env : "libcuda.so.1";
  void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    const char* err = dlerror();
    std::string text = err ? err : "dlopen failed";
    // dlerror repeats the file name first: keep only what follows it.
    if (text.compare(0, file.size() + 2, file + ": ") == 0) text.erase(0, file.size() + 2);
    p.reason = "no CUDA driver (" + file + " not found: " + text + ")";
    return p;
  }
  auto cu_init = reinterpret_cast<CuInit>(dlsym(lib, "cuInit"));
  auto cu_version = reinterpret_cast<CuDriverGetVersion>(dlsym(lib, "cuDriverGetVersion"));
  auto cu_count = reinterpret_cast<CuDeviceGetCount>(dlsym(lib, "cuDeviceGetCount"));
  if (!cu_init || !cu_version || !cu_count) {
    p.reason = "no CUDA driver (" + file + " lacks cuInit / cuDriverGetVersion / cuDeviceGetCount)";
    return p;
  }
  if (cu_version(&p.driver_version) != 0) p.driver_version = 0;
  // A driver of the runtime's major runs it (CUDA minor version
  // compatibility); an older major does not.
  if (p.driver_version != 0 && p.driver_version / 1000 < CUDART_VERSION / 1000) {
    p.reason = "driver supports CUDA " + cuda_version_string(p.driver_version) + ", plugin needs " +
               std::to_string(CUDART_VERSION / 1000) + ".x (built with CUDA " + cuda_version_string(CUDART_VERSION) +
               "; update the NVIDIA driver)";
    return p;
  }
  const int r = cu_init(0);
  if (r == kCudaErrorNoDevice) {
    p.reason = "no CUDA devices (driver " + cuda_version_string(p.driver_version) + ")";
    return p;
  }
  if (r != 0) {
    p.reason = "cuInit failed with CUresult " + std::to_string(r) + " (driver " +
               cuda_version_string(p.driver_version) + ")";
    return p;
  }
  if (cu_count(&p.device_count) != 0 || p.device_count <= 0) {
    p.reason = "no CUDA devices (driver " + cuda_version_string(p.driver_version) + ")";
    p.device_count = 0;
    return p;
  }
  p.ok = true;
  return p;
}

}  // namespace loom::cuda
