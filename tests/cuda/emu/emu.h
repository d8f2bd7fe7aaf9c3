// The cuda plugin's kernels on the host: this header is force-included
// (-include) into every plugins/cuda/ops/*.cu when they are compiled by the
// host compiler as C++ (tests/CMakeLists.txt, the emulated plugin in
// emu_cuda_plugin/). It gives the CUDA kernel language what the kernels use:
// the qualifiers, threadIdx / blockIdx / blockDim / gridDim, __syncthreads,
// the warp shuffles and votes, atomics, __dp4a, nvcuda::wmma (below), and
// LOOM_LAUNCH (launch.cuh)
// running a grid here (emu.cpp): blocks one after another, each block's
// threads as fibers on the calling thread, switched at every barrier, so
// block barriers and warp-wide exchanges behave as on a GPU (a warp's lanes
// meet at each shuffle). "Device" memory is host memory (the fake runtime's),
// so a kernel that reads or writes outside its tensors does so in the host's
// heap, where the sanitizers see it.
//
// Not emulated: timing, concurrency between blocks (they run in order),
// the memory model (no races can show), launch bounds. Test only.
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __noinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
// A block's threads are fibers of one host thread, and blocks run one at a
// time on it: a static per host thread is what the block shares.
#define __shared__ static thread_local

namespace loom::cuda::emu {

struct ThreadState {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};

// The emulated thread running now on this host thread.
const ThreadState& cur();

void syncthreads();
// Lanes of the caller's warp in `mask` meet; each puts `bytes` of `in` and
// gets lane `src`'s (mode 0), lane lane ^ src's (1), lane lane + src's (2,
// its own when past the warp's width).
void exchange(unsigned mask, const void* in, void* out, size_t bytes, int src, int mode, int width);
// Lanes in `mask` meet; returns the OR (any) or AND (all) of their preds.
int vote(unsigned mask, int pred, bool all);
// The launch's dynamic shared memory.
void* dynamic_shared();

// Runs body for every thread of the grid (or records it when `stream` is
// capturing: the fake runtime's graphs replay it).
// `name`: the kernel's, for LOOM_CUDA_EMU_TRACE=1 (every launch on stderr)
// and the messages.
void launch(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, const char* name, std::function<void()> body);

template <typename... P>
struct Launcher {
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
  const char* name;
  void (*fn)(P...);

  template <typename... A>
  void operator()(A&&... a) const {
    // Kernel parameters are values, converted to the kernel's types at the
    // launch as under nvcc.
    std::tuple<std::decay_t<P>...> args(std::forward<A>(a)...);
    auto f = fn;
    launch(grid, block, shared, stream, name, [f, args]() { std::apply(f, args); });
  }
};

template <typename... P>
Launcher<P...> launcher(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, const char* name,
                        void (*fn)(P...)) {
  return Launcher<P...>{grid, block, shared, stream, name, fn};
}

template <typename T>
T shuffle(unsigned mask, T v, int src, int mode, int width) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 16, "shuffle of a small trivially copyable value");
  T out;
  exchange(mask, &v, &out, sizeof(T), src, mode, width);
  return out;
}

}  // namespace loom::cuda::emu

#define threadIdx (::loom::cuda::emu::cur().thread_idx)
#define blockIdx (::loom::cuda::emu::cur().block_idx)
#define blockDim (::loom::cuda::emu::cur().block_dim)
#define gridDim (::loom::cuda::emu::cur().grid_dim)
#define warpSize 32

inline void __syncthreads() { ::loom::cuda::emu::syncthreads(); }
inline void __threadfence() {}  // blocks run one after another: every write is seen
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) { (void)::loom::cuda::emu::vote(mask, 0, false); }

template <typename T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return ::loom::cuda::emu::shuffle(mask, v, src, 0, width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return ::loom::cuda::emu::shuffle(mask, v, lane_mask, 1, width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::loom::cuda::emu::shuffle(mask, v, static_cast<int>(delta), 2, width);
}
inline int __any_sync(unsigned mask, int pred) { return ::loom::cuda::emu::vote(mask, pred, false); }
inline int __all_sync(unsigned mask, int pred) { return ::loom::cuda::emu::vote(mask, pred, true); }

// Blocks run one at a time and a block's threads only switch at barriers,
// so a read-modify-write is never interleaved.
template <typename T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
template <typename T>
T atomicCAS(T* p, T compare, T v) {
  const T old = *p;
  if (old == compare) *p = v;
  return old;
}
template <typename T>
T atomicMax(T* p, T v) {
  const T old = *p;
  if (v > old) *p = v;
  return old;
}

// cuda_runtime.h's overload for a kernel function.
template <typename... P>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, void (*fn)(P...)) {
  return cudaFuncGetAttributes(attr, reinterpret_cast<const void*>(fn));
}

inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i) {
    c += static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i)) * static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i));
  }
  return c;
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline int __float2int_rn(float x) { return static_cast<int>(std::nearbyint(x)); }
inline float __expf(float x) { return std::exp(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

// nvcuda::wmma (mma.h) for the kernels that use tensor cores. A fragment's
// element-to-lane mapping is unspecified in CUDA, so the kernels only load,
// fill, multiply and store whole fragments; here every lane holds the whole
// tile (in float) and does the whole product itself, so no lane waits for
// another. As on a GPU, a kernel must __syncwarp() between lanes writing
// shared memory and a load_matrix_sync that reads it (and between a
// store_matrix_sync and lanes reading or rewriting what it stored): every
// lane's store writes the whole tile, so a missing barrier shows here as a
// lane's later write overwritten or a tile loaded before it was written.
// Elements convert to float with static_cast (the kernel's half type says
// how); products and sums are f32, in k order.
namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static constexpr int kRows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int kCols = std::is_same_v<Use, matrix_a> ? K : N;
  static constexpr int num_elements = kRows * kCols;
  float x[kRows * kCols];  // row-major tile
};

// mma.h's rule for the pointer and the leading dimension: a tile starts
// on 32 bytes and ldm is a multiple of 16 bytes. A GPU faults or misreads
// otherwise; here the process stops with the reason.
inline void check_tile(const void* p, unsigned ldm, size_t elem) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0 || (ldm * elem) % 16 != 0) {
    std::fprintf(stderr, "cuda emu: wmma tile at %p with ldm %u (%zu-byte elements): needs 32-byte alignment and ldm a multiple of 16 bytes\n",
                 p, ldm, elem);
    std::abort();
  }
}

template <typename Use, int M, int N, int K, typename T, typename L>
void fill_fragment(fragment<Use, M, N, K, T, L>& f, float v) {
  for (float& e : f.x) e = v;
}

// matrix_a / matrix_b: the layout is the fragment's.
template <typename Use, int M, int N, int K, typename T, typename L, typename P>
void load_matrix_sync(fragment<Use, M, N, K, T, L>& f, const P* p, unsigned ldm) {
  using Fr = fragment<Use, M, N, K, T, L>;
  static_assert(!std::is_void_v<L>, "a matrix_a / matrix_b fragment has a layout");
  check_tile(p, ldm, sizeof(P));
  for (int r = 0; r < Fr::kRows; ++r)
    for (int c = 0; c < Fr::kCols; ++c)
      f.x[r * Fr::kCols + c] = static_cast<float>(std::is_same_v<L, row_major> ? p[r * ldm + c] : p[c * ldm + r]);
}

// The accumulator: the layout is the call's.
template <int M, int N, int K, typename T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const T* p, unsigned ldm, layout_t l) {
  check_tile(p, ldm, sizeof(T));
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) f.x[r * N + c] = static_cast<float>(l == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]);
}

template <int M, int N, int K, typename T>
void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t l) {
  check_tile(p, ldm, sizeof(T));
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) (l == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = static_cast<T>(f.x[r * N + c]);
}

template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB, typename TC>
void mma_sync(fragment<accumulator, M, N, K, TC>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
              const fragment<matrix_b, M, N, K, TB, LB>& b, const fragment<accumulator, M, N, K, TC>& c) {
  float out[M * N];
  for (int r = 0; r < M; ++r)
    for (int n = 0; n < N; ++n) {
      float s = c.x[r * N + n];
      for (int k = 0; k < K; ++k) s += a.x[r * K + k] * b.x[k * N + n];
      out[r * N + n] = s;
    }
  std::memcpy(d.x, out, sizeof out);
}

}  // namespace nvcuda::wmma
