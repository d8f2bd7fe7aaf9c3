// Launch shape shared by the row kernels and the host test that replays
// their reductions: a block of kRowThreads threads per row; thread t folds
// elements t, t + kRowThreads, ...; the partial results then combine in a
// halving tree (p[i] = combine(p[i], p[i + s]) for s = kRowThreads/2 .. 1),
// the order tree_reduce below writes out.
#pragma once

#include "hd.cuh"

// A kernel launch: LOOM_LAUNCH(grid, block, shared bytes, stream, kernel)(args)
// is kernel<<<grid, block, shared, stream>>>(args) under nvcc. Compiled as
// host C++ with tests/cuda/emu/emu.h force-included (LOOM_CUDA_EMU), the
// grid runs on the host instead (the emulated plugin the CPU-only tests
// run). The kernel comes last: a template-id's commas stay in __VA_ARGS__.
// LOOM_DYNAMIC_SHARED(T, name): the launch's dynamic shared memory as T*;
// LOOM_DYNAMIC_SHARED_ALIGNED(T, name, A) on A bytes (wmma tiles need 32;
// CUDA promises only T's own alignment otherwise).
#if defined(LOOM_CUDA_EMU)
#define LOOM_LAUNCH(grid, block, shared, stream, ...) \
  ::loom::cuda::emu::launcher(grid, block, shared, stream, #__VA_ARGS__, __VA_ARGS__)
#define LOOM_DYNAMIC_SHARED(T, name) T* name = static_cast<T*>(::loom::cuda::emu::dynamic_shared())
#define LOOM_DYNAMIC_SHARED_ALIGNED(T, name, A) LOOM_DYNAMIC_SHARED(T, name)
#else
#define LOOM_LAUNCH(grid, block, shared, stream, ...) __VA_ARGS__<<<grid, block, shared, stream>>>
#define LOOM_DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#define LOOM_DYNAMIC_SHARED_ALIGNED(T, name, A) extern __shared__ __align__(A) T name[]
#endif

namespace loom::cuda {

constexpr int kRowThreads = 256;
constexpr int kElemThreads = 256;  // one thread per element kernels
constexpr int kWarp = 32;

// Thread `tid` of `threads`: fold elements tid, tid + threads, ... of a row
// of n into acc with step(acc, i).
template <typename T, typename Step>
LOOM_HD T strided_fold(int64_t n, int tid, int threads, T acc, Step step) {
  for (int64_t i = tid; i < n; i += threads) acc = step(acc, i);
  return acc;
}

// The kernels' reduction order, run sequentially (host test, and the
// device's reference of what the shared-memory tree computes).
template <typename T, typename Combine>
LOOM_HD T tree_reduce(T* p, int n, Combine combine) {
  for (int s = n / 2; s > 0; s /= 2) {
    for (int i = 0; i < s; ++i) p[i] = combine(p[i], p[i + s]);
  }
  return p[0];
}

}  // namespace loom::cuda
