// The grid runner behind emu.h: blocks in order (x fastest, then y, z), a
// block's threads as fibers on the calling host thread. Fibers run in order
// until each finishes or waits at a barrier (__syncthreads, or its warp's
// meeting point for a shuffle or vote); the last to arrive releases the
// others and goes on. A thread that has returned counts as arrived, as on a
// GPU. A block whose live threads all wait at different barriers (a
// __syncthreads some threads never reach) is a deadlock: reported on
// stderr, then the process aborts, as a hung kernel would lose the device.
//
// Fibers switch through a small x86-64 routine (callee-saved registers, the
// stack pointer, MXCSR and the x87 control word); other hosts use ucontext.
// Stacks: one pool per host thread, 256 KiB a fiber, mapped on demand.
#include "emu.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define LOOM_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_EMU_ASAN 1
#endif
#endif
#if defined(LOOM_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace loom::fake_cudart {
// tests/cuda/fake_runtime/fake_cudart.cpp: runs work on a stream now, or
// records it when the stream is capturing; a bad launch sets the error
// cudaGetLastError returns.
void submit(cudaStream_t stream, std::function<void()> work, bool kernel);
void set_error(cudaError_t e);
}  // namespace loom::fake_cudart

#if defined(__x86_64__)
extern "C" void loom_emu_switch(void** save_sp, void* to_sp);
extern "C" void loom_emu_entry();
asm(R"(
  .text
  .globl loom_emu_switch
  .type loom_emu_switch,@function
loom_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size loom_emu_switch, .-loom_emu_switch

  .globl loom_emu_entry
  .type loom_emu_entry,@function
loom_emu_entry:
  movq %rbx, %rdi
  call loom_emu_fiber_main
  ud2
  .size loom_emu_entry, .-loom_emu_entry
)");
#endif

namespace loom::cuda::emu {
namespace {

constexpr size_t kStack = 256 * 1024;
constexpr int kMaxThreads = 1024;

enum class State { kReady, kBlockWait, kWarpWait, kDone };

struct Fiber {
  ThreadState ts;
  State state = State::kReady;
  int index = 0;
  char* stack = nullptr;
#if defined(__x86_64__)
  void* sp = nullptr;
#else
  ucontext_t ctx;
#endif
};

struct Warp {
  int live = 0, arrived = 0;
  unsigned char slot[32][16];
  int pred[32];
};

struct Block {
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  int live = 0, arrived = 0;
  const std::function<void()>* body = nullptr;
  std::vector<unsigned char> shared;
  Fiber* current = nullptr;
#if defined(__x86_64__)
  void* sched_sp = nullptr;
#else
  ucontext_t sched_ctx;
#endif
#if defined(LOOM_EMU_ASAN)
  const void* sched_stack = nullptr;
  size_t sched_stack_size = 0;
#endif
};

thread_local Block* t_block = nullptr;
thread_local char* t_stacks = nullptr;  // kMaxThreads stacks

char* stacks() {
  if (t_stacks == nullptr) {
    void* p = mmap(nullptr, kStack * kMaxThreads, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "cuda emu: no memory for %d fiber stacks\n", kMaxThreads);
      std::abort();
    }
    t_stacks = static_cast<char*>(p);
  }
  return t_stacks;
}

// Fiber -> scheduler.
void to_scheduler(Fiber* f) {
  Block* b = t_block;
#if defined(LOOM_EMU_ASAN)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(f->state == State::kDone ? nullptr : &fake, b->sched_stack, b->sched_stack_size);
#endif
#if defined(__x86_64__)
  loom_emu_switch(&f->sp, b->sched_sp);
#else
  swapcontext(&f->ctx, &b->sched_ctx);
#endif
#if defined(LOOM_EMU_ASAN)
  __sanitizer_finish_switch_fiber(fake, &b->sched_stack, &b->sched_stack_size);
#endif
}

// Scheduler -> fiber.
void to_fiber(Block* b, Fiber* f) {
  b->current = f;
#if defined(LOOM_EMU_ASAN)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f->stack, kStack);
#endif
#if defined(__x86_64__)
  loom_emu_switch(&b->sched_sp, f->sp);
#else
  swapcontext(&b->sched_ctx, &f->ctx);
#endif
#if defined(LOOM_EMU_ASAN)
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  b->current = nullptr;
}

void release_warp(Block* b, int w) {
  Warp& wp = b->warps[static_cast<size_t>(w)];
  wp.arrived = 0;
  const int n = static_cast<int>(b->fibers.size());
  for (int i = w * 32; i < std::min(n, w * 32 + 32); ++i) {
    if (b->fibers[static_cast<size_t>(i)].state == State::kWarpWait) b->fibers[static_cast<size_t>(i)].state = State::kReady;
  }
}

void release_block(Block* b) {
  b->arrived = 0;
  for (Fiber& f : b->fibers) {
    if (f.state == State::kBlockWait) f.state = State::kReady;
  }
}

// The calling fiber waits at its warp's meeting point.
void warp_wait(Fiber* f) {
  Block* b = t_block;
  Warp& wp = b->warps[static_cast<size_t>(f->index / 32)];
  if (++wp.arrived == wp.live) {
    release_warp(b, f->index / 32);
    return;
  }
  f->state = State::kWarpWait;
  to_scheduler(f);
}

}  // namespace

extern "C" void loom_emu_fiber_main(Fiber* f) {
#if defined(LOOM_EMU_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &t_block->sched_stack, &t_block->sched_stack_size);
#endif
  Block* b = t_block;
  (*b->body)();
  f->state = State::kDone;
  --b->live;
  Warp& wp = b->warps[static_cast<size_t>(f->index / 32)];
  if (--wp.live > 0 && wp.arrived == wp.live) release_warp(b, f->index / 32);
  if (b->live > 0 && b->arrived == b->live) release_block(b);
  to_scheduler(f);
  std::abort();  // a finished fiber is never resumed
}

#if !defined(__x86_64__)
namespace {
void ucontext_entry(unsigned hi, unsigned lo) {
  loom_emu_fiber_main(reinterpret_cast<Fiber*>((static_cast<uintptr_t>(hi) << 32) | lo));
}
}  // namespace
#endif

const ThreadState& cur() {
  Block* b = t_block;
  if (b == nullptr || b->current == nullptr) {
    std::fprintf(stderr, "cuda emu: threadIdx read outside a kernel\n");
    std::abort();
  }
  return b->current->ts;
}

void syncthreads() {
  Block* b = t_block;
  Fiber* f = b->current;
  if (++b->arrived == b->live) {
    release_block(b);
    return;
  }
  f->state = State::kBlockWait;
  to_scheduler(f);
}

void exchange(unsigned mask, const void* in, void* out, size_t bytes, int src, int mode, int width) {
  Block* b = t_block;
  Fiber* f = b->current;
  Warp& wp = b->warps[static_cast<size_t>(f->index / 32)];
  const int lane = f->index % 32;
  if (((mask >> lane) & 1u) == 0) {
    std::fprintf(stderr, "cuda emu: a shuffle by lane %d outside its mask 0x%08x\n", lane, mask);
    std::abort();
  }
  std::memcpy(wp.slot[lane], in, bytes);
  warp_wait(f);
  const int base = lane / width * width, sub = lane % width;
  int from = lane;
  if (mode == 0) from = base + (src % width + width) % width;
  if (mode == 1) from = base + ((sub ^ src) < width ? (sub ^ src) : sub);
  if (mode == 2) from = sub + src < width ? lane + src : lane;
  const int thread = f->index / 32 * 32 + from;  // the source lane's thread in the block
  if (thread >= static_cast<int>(b->fibers.size()) || b->fibers[static_cast<size_t>(thread)].state == State::kDone) {
    from = lane;  // an exited lane's value is undefined; take one's own
  }
  std::memcpy(out, wp.slot[from], bytes);
  warp_wait(f);  // nobody writes a slot before every lane has read
}

int vote(unsigned mask, int pred, bool all) {
  Block* b = t_block;
  Fiber* f = b->current;
  Warp& wp = b->warps[static_cast<size_t>(f->index / 32)];
  const int lane = f->index % 32;
  wp.pred[lane] = pred != 0;
  warp_wait(f);
  int r = all ? 1 : 0;
  const int n = static_cast<int>(b->fibers.size());
  for (int i = 0; i < 32; ++i) {
    const int t = f->index / 32 * 32 + i;
    if (((mask >> i) & 1u) == 0 || t >= n || b->fibers[static_cast<size_t>(t)].state == State::kDone) continue;
    if (all) {
      r &= wp.pred[i];
    } else {
      r |= wp.pred[i];
    }
  }
  warp_wait(f);
  return r;
}

// Aligned as on a GPU (wmma tiles need 32 bytes; the window starts on 128).
void* dynamic_shared() {
  const auto p = reinterpret_cast<uintptr_t>(t_block->shared.data());
  return reinterpret_cast<void*>((p + 127) & ~static_cast<uintptr_t>(127));
}

namespace {

void run_block(Block& b, const uint3& block_idx, const dim3& grid, const dim3& block) {
  const int n = static_cast<int>(block.x * block.y * block.z);
  char* pool = stacks();
  b.live = n;
  b.arrived = 0;
  for (int w = 0; w < (n + 31) / 32; ++w) {
    b.warps[static_cast<size_t>(w)].live = std::min(32, n - w * 32);
    b.warps[static_cast<size_t>(w)].arrived = 0;
  }
  for (int i = 0; i < n; ++i) {
    Fiber& f = b.fibers[static_cast<size_t>(i)];
    f.index = i;
    f.state = State::kReady;
    f.ts.thread_idx = uint3{static_cast<unsigned>(i) % block.x, static_cast<unsigned>(i) / block.x % block.y,
                            static_cast<unsigned>(i) / (block.x * block.y)};
    f.ts.block_idx = block_idx;
    f.ts.block_dim = block;
    f.ts.grid_dim = grid;
    f.stack = pool + static_cast<size_t>(i) * kStack;
#if defined(LOOM_EMU_ASAN)
    // A fiber that finished left its frames' redzones poisoned (it never
    // returned through them): clean before the stack is used again.
    ASAN_UNPOISON_MEMORY_REGION(f.stack, kStack);
#endif
#if defined(__x86_64__)
    // The first switch pops MXCSR / control word, r15..r12, rbx (the
    // fiber), rbp, then returns into loom_emu_entry with a 16-byte aligned
    // stack.
    auto* top = reinterpret_cast<uint64_t*>(f.stack + kStack - 16);
    uint64_t* sp = top - 8;
    uint32_t csr = 0x1F80;
    uint16_t cw = 0x037F;
    std::memcpy(&sp[0], &csr, 4);
    std::memcpy(reinterpret_cast<char*>(&sp[0]) + 4, &cw, 2);
    sp[1] = sp[2] = sp[3] = sp[4] = 0;
    sp[5] = reinterpret_cast<uint64_t>(&f);
    sp[6] = 0;
    sp[7] = reinterpret_cast<uint64_t>(&loom_emu_entry);
    f.sp = sp;
#else
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = nullptr;
    const auto p = reinterpret_cast<uintptr_t>(&f);
    makecontext(&f.ctx, reinterpret_cast<void (*)()>(&ucontext_entry), 2, static_cast<unsigned>(p >> 32),
                static_cast<unsigned>(p));
#endif
  }
  for (;;) {
    bool ran = false;
    for (int i = 0; i < n; ++i) {
      Fiber& f = b.fibers[static_cast<size_t>(i)];
      if (f.state != State::kReady) continue;
      ran = true;
      to_fiber(&b, &f);
    }
    if (b.live == 0) return;
    if (!ran) {
      int block_wait = 0, warp_wait_n = 0;
      for (const Fiber& f : b.fibers) {
        block_wait += f.state == State::kBlockWait;
        warp_wait_n += f.state == State::kWarpWait;
      }
      std::fprintf(stderr,
                   "cuda emu: deadlock in block (%u, %u, %u): %d threads at __syncthreads, %d at a warp barrier, "
                   "%d returned\n",
                   block_idx.x, block_idx.y, block_idx.z, block_wait, warp_wait_n, n - b.live);
      std::abort();
    }
  }
}

void run_grid(dim3 grid, dim3 block, size_t shared, const std::function<void()>& body) {
  Block b;
  const int n = static_cast<int>(block.x * block.y * block.z);
  b.fibers.resize(static_cast<size_t>(n));
  b.warps.resize(static_cast<size_t>((n + 31) / 32));
  b.body = &body;
  b.shared.assign(shared + 128, 0);
  Block* outer = t_block;
  t_block = &b;
  // LOOM_CUDA_EMU_ORDER=reverse: the last block first (a GPU runs blocks
  // in any order; a kernel whose blocks depend on each other's order shows).
  static const bool reverse = [] {
    const char* e = std::getenv("LOOM_CUDA_EMU_ORDER");
    return e != nullptr && std::strcmp(e, "reverse") == 0;
  }();
  const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
  for (unsigned long long k = 0; k < blocks; ++k) {
    const unsigned long long l = reverse ? blocks - 1 - k : k;
    const unsigned x = static_cast<unsigned>(l % grid.x), y = static_cast<unsigned>(l / grid.x % grid.y),
                   z = static_cast<unsigned>(l / (1ull * grid.x * grid.y));
    run_block(b, uint3{x, y, z}, grid, block);
  }
  t_block = outer;
}

}  // namespace

void launch(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, const char* name, std::function<void()> body) {
  static const bool trace = [] {
    const char* e = std::getenv("LOOM_CUDA_EMU_TRACE");
    return e != nullptr && std::strcmp(e, "1") == 0;
  }();
  if (trace) {
    std::fprintf(stderr, "cuda emu: %s grid (%u, %u, %u) block (%u, %u, %u) shared %zu\n", name, grid.x, grid.y,
                 grid.z, block.x, block.y, block.z, shared);
  }
  // The limits of compute capability 9.0 that a launch can break. Dynamic
  // shared memory past 48 KiB needs cudaFuncSetAttribute's opt-in, which
  // the plugin never makes: 48 KiB is its limit.
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (threads == 0 || threads > kMaxThreads || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      grid.y > 65535 || grid.z > 65535 || shared > 48 * 1024) {
    std::fprintf(stderr, "cuda emu: invalid launch of %s: grid (%u, %u, %u), block (%u, %u, %u), %zu bytes shared\n",
                 name, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared);
    loom::fake_cudart::set_error(cudaErrorInvalidConfiguration);
    return;
  }
  loom::fake_cudart::submit(
      stream, [grid, block, shared, body = std::move(body)]() { run_grid(grid, block, shared, body); }, true);
}

}  // namespace loom::cuda::emu
