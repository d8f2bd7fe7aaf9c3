/* A stand-in for the NVIDIA driver's libcuda.so.1 with just the entries
 * the cuda plugin's probe calls, answering from the environment:
 * LOOM_FAKE_CUDA_VERSION (driver CUDA version, e.g. 12020), and
 * LOOM_FAKE_CUDA_INIT (cuInit's CUresult, 100 = no device) and
 * LOOM_FAKE_CUDA_DEVICES (cuDeviceGetCount, default 0). Test only. */
#include <stdlib.h>

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

int cuInit(unsigned int flags) {
  (void)flags;
  return env_int("LOOM_FAKE_CUDA_INIT", 100);
}

int cuDriverGetVersion(int *version) {
  *version = env_int("LOOM_FAKE_CUDA_VERSION", 13000);
  return 0;
}

int cuDeviceGetCount(int *count) {
  *count = env_int("LOOM_FAKE_CUDA_DEVICES", 0);
  return 0;
}
