// The host emulation of CUDA kernels (emu.h, emu.cpp) that runs the cuda
// plugin's kernels in the CPU-only tests: block barriers, the warp
// shuffles and votes (lanes of warps behind an exited warp included: the
// first version read their partners from the wrong warp), lanes that
// return early, grid and block indices, dynamic shared memory and a bad
// launch reported through cudaGetLastError's error.
#include "emu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace loom::fake_cudart {
// The fake runtime's entry points emu.cpp calls (here: no streams, no
// capture; the error cudaGetLastError would return).
cudaError_t test_error = cudaSuccess;
void submit(cudaStream_t, std::function<void()> work, bool) { work(); }
void set_error(cudaError_t e) { test_error = e; }
}  // namespace loom::fake_cudart

namespace {

template <typename... P, typename... A>
void run(dim3 grid, dim3 block, size_t shared, void (*kernel)(P...), A... args) {
  loom::cuda::emu::launcher(grid, block, shared, nullptr, "test kernel", kernel)(args...);
}

// Each warp m of a block sums its lanes' values with __shfl_down_sync; warps
// whose `active` is 0 return at once (lane 0 writes 0).
__global__ void warp_sums(float* out, const int* active) {
  const int lane = threadIdx.x % 32;
  const int m = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (!active[m]) {
    if (lane == 0) out[m] = 0.0f;
    return;
  }
  float v = lane < 6 ? static_cast<float>(m * 100 + lane) : 0.0f;
  for (int s = 16; s > 0; s /= 2) v += __shfl_down_sync(0xFFFFFFFFu, v, s);
  if (lane == 0) out[m] = v;
}

TEST(CudaEmu, WarpShufflesAfterAnExitedWarp) {
  std::vector<float> out(40, -1.0f);
  std::vector<int> active(40);
  for (int i = 0; i < 40; ++i) active[static_cast<size_t>(i)] = i % 3 != 0;  // warp 0 of block 0 returns at once
  run(dim3(10), dim3(128), 0, warp_sums, out.data(), static_cast<const int*>(active.data()));
  for (int m = 0; m < 40; ++m) {
    const float want = active[static_cast<size_t>(m)] ? static_cast<float>(6 * m * 100 + 15) : 0.0f;
    EXPECT_EQ(out[static_cast<size_t>(m)], want) << "warp " << m;
  }
}

// Block sum through shared memory and __syncthreads (the reduce kernels'
// halving tree), every thread writing the total it reads back.
__global__ void block_sum(int* out) {
  __shared__ int sh[256];
  sh[threadIdx.x] = static_cast<int>(threadIdx.x + blockIdx.x);
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  const int total = sh[0];
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = total;
}

TEST(CudaEmu, BlockBarriersOrderSharedMemory) {
  std::vector<int> out(3 * 256, -1);
  run(dim3(3), dim3(256), 0, block_sum, out.data());
  for (int b = 0; b < 3; ++b) {
    for (int t = 0; t < 256; ++t) EXPECT_EQ(out[static_cast<size_t>(b * 256 + t)], 255 * 128 + 256 * b) << b << " " << t;
  }
}

// xor butterfly, a broadcast from lane 5, and the votes.
__global__ void warp_ops(int* out) {
  const int lane = threadIdx.x % 32;
  int v = lane;
  for (int s = 16; s > 0; s /= 2) v = std::max(v, __shfl_xor_sync(0xFFFFFFFFu, v, s));
  out[threadIdx.x * 4 + 0] = v;
  out[threadIdx.x * 4 + 1] = __shfl_sync(0xFFFFFFFFu, lane * 10, 5);
  out[threadIdx.x * 4 + 2] = __any_sync(0xFFFFFFFFu, lane == 31 && threadIdx.x < 32);
  out[threadIdx.x * 4 + 3] = __all_sync(0xFFFFFFFFu, lane < 40);
}

TEST(CudaEmu, XorBroadcastAndVotes) {
  std::vector<int> out(64 * 4, -1);
  run(dim3(1), dim3(64), 0, warp_ops, out.data());
  for (int t = 0; t < 64; ++t) {
    EXPECT_EQ(out[static_cast<size_t>(t * 4 + 0)], 31) << t;
    EXPECT_EQ(out[static_cast<size_t>(t * 4 + 1)], 50) << t;
    EXPECT_EQ(out[static_cast<size_t>(t * 4 + 2)], t < 32 ? 1 : 0) << t;
    EXPECT_EQ(out[static_cast<size_t>(t * 4 + 3)], 1) << t;
  }
}

// Indices of a 3-D grid of 2-D blocks, and dynamic shared memory.
__global__ void indices(int* out) {
  int* sh = static_cast<int*>(loom::cuda::emu::dynamic_shared());  // extern __shared__ int sh[]
  const int t = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  sh[t] = t;
  __syncthreads();
  const int b = static_cast<int>((blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x);
  out[b * blockDim.x * blockDim.y + t] = b * 1000 + sh[blockDim.x * blockDim.y - 1 - t];
}

TEST(CudaEmu, GridBlockIndicesAndDynamicSharedMemory) {
  const dim3 grid(2, 3, 2), block(4, 8);
  std::vector<int> out(12 * 32, -1);
  run(grid, block, 32 * sizeof(int), indices, out.data());
  for (int b = 0; b < 12; ++b) {
    for (int t = 0; t < 32; ++t) EXPECT_EQ(out[static_cast<size_t>(b * 32 + t)], b * 1000 + 31 - t) << b << " " << t;
  }
}

__global__ void nothing(int*) {}

TEST(CudaEmu, ABadLaunchIsAnErrorNotARun) {
  loom::fake_cudart::test_error = cudaSuccess;
  run(dim3(1, 70000), dim3(32), 0, nothing, static_cast<int*>(nullptr));
  EXPECT_EQ(loom::fake_cudart::test_error, cudaErrorInvalidConfiguration) << "grid.y over 65535";
  loom::fake_cudart::test_error = cudaSuccess;
  run(dim3(1), dim3(2048), 0, nothing, static_cast<int*>(nullptr));
  EXPECT_EQ(loom::fake_cudart::test_error, cudaErrorInvalidConfiguration) << "2048 threads a block";
}

// A __syncthreads some threads never reach hangs a GPU; here it is
// reported and the process aborts.
__global__ void divergent_barrier(int*) {
  if (threadIdx.x < 16) __syncthreads();
  __shfl_sync(0xFFFFFFFFu, 0, 0);
}

TEST(CudaEmuDeathTest, ABarrierSomeThreadsNeverReachIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(run(dim3(1), dim3(32), 0, divergent_barrier, static_cast<int*>(nullptr)), "deadlock in block");
}

}  // namespace
