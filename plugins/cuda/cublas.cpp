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
  const char* dl_err = lib ? nullptr : dlerror();  // read once: dlerror clears itself
  const std::string err = dl_err ? dl_err : "dlopen failed";
#ifdef LOOM_CUDA_TOOLKIT_LIB_DIR
  // The toolkit the plugin was built with, when its folder is not on the
  // loader's path (a default /usr/local/cuda install).
  if (!lib && !(env && *env)) {
    const std::string alt = std::string(LOOM_CUDA_TOOLKIT_LIB_DIR) + "/" + file;
    lib = dlopen(alt.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  }
#endif
  if (!lib) return error = file + " not found: " + err;
  if (!sym(lib, "cublasCreate_v2", &create) || !sym(lib, "cublasDestroy_v2", &destroy) ||
      !sym(lib, "cublasSetStream_v2", &set_stream) || !sym(lib, "cublasSetMathMode", &set_math_mode) ||
      !sym(lib, "cublasGetStatusString", &status_string) || !sym(lib, "cublasSgemm_v2", &sgemm)) {
    sgemm = nullptr;
    return error = file + " lacks a cuBLAS entry loom uses";
  }
  if (!sym(lib, "cublasGemmEx", &gemm_ex)) gemm_ex = nullptr;  // SGEMM for every prefill then
  return error = "";
}

}  // namespace loom::cuda
