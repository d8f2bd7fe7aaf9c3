// The NVIDIA driver, opened at run time: libcuda.so.1 is never linked, so
// the plugin loads on machines without it. probe_driver() says whether the
// CUDA runtime linked into the plugin can work here, and if not, why, in
// the words `loom devices` shows. Thread-safe (no state).
#pragma once

#include <string>

namespace loom::cuda {

struct DriverProbe {
  bool ok = false;
  std::string reason;   // why not, when !ok
  int driver_version = 0;  // e.g. 13000 for CUDA 13.0 (0 when unknown)
  int device_count = 0;
};

// Opens libcuda.so.1 (LOOM_CUDA_DRIVER names another file, for tests;
// ignored under secure execution), calls cuInit, compares the driver's CUDA
// version with the runtime's and counts devices. The library stays loaded.
DriverProbe probe_driver();

// "13.0" from 13000.
std::string cuda_version_string(int v);

}  // namespace loom::cuda
