// cuBLAS opened at run time (never linked): a missing or broken library is
// a reason the device lacks the prefill GEMM path, not a load failure; the
// hand-written kernels then run every MUL_MAT. One Cublas per plugin,
// immutable after open(); the entries are thread-safe as cuBLAS's are (one
// handle per stream).
#pragma once

#include <cublas_api.h>

#include <string>

namespace loom::cuda {

struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  // Optional: the F16-input GEMM on tensor cores (nullptr: SGEMM only).
  // (cublasGemmEx is overloaded in C++: the exported one takes a
  // cublasComputeType_t.)
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                    const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx gemm_ex = nullptr;

  // "" when loaded, else why not. LOOM_CUDA_CUBLAS names another file (or
  // "off": do without); ignored under secure execution.
  std::string open();
  bool ok() const { return sgemm != nullptr; }
  std::string error;  // what open() returned
};

}  // namespace loom::cuda
