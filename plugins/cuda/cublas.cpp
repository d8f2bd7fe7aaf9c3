#include "cublas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

namespace loom::cuda {
namespace {

template <typename F>
bool sym(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

}  // namespace

std::string Cublas::open() {
  const char* env = secure_getenv("LOOM_CUDA_CUBLAS");
  const std::string file = (env && *env) ? env : "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  if (file == "off") return error = "cuBLAS turned off (LOOM_CUDA_CUBLAS=off)";
  void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    const char* err = dlerror();
    return error = file + " not found: " + (err ? err : "dlopen failed");
  }
  if (!sym(lib, "cublasCreate_v2", &create) || !sym(lib, "cublasDestroy_v2", &destroy) ||
      !sym(lib, "cublasSetStream_v2", &set_stream) || !sym(lib, "cublasSetMathMode", &set_math_mode) ||
      !sym(lib, "cublasGetStatusString", &status_string) || !sym(lib, "cublasSgemm_v2", &sgemm)) {
    sgemm = nullptr;
    return error = file + " lacks a cuBLAS entry loom uses";
  }
  return error = "";
}

}  // namespace loom::cuda
