// B's 8-bit blocks (act_quant.cuh) kept for the next MUL_MAT of the same
// graph that reads the same B: the Q, K and V projections (and gate / up)
// of a layer share their input, so it is quantized once. One entry per
// compute call. It is valid while the B bytes it came from are unchanged —
// every launched node's result is checked against them (note_write) — and
// while the buffer holding the blocks has not been reallocated (the
// scratch's generation). Plain C++: the host test checks the rules.
#pragma once

#include <cstdint>

#include "loom/plugin.h"

namespace loom::cuda {

// B's 8-bit blocks in device memory.
struct ActQ8 {
  const int8_t* qs;
  const float* d;
};

// [lo, hi): the bytes a tensor's elements span (through its strides).
struct ByteSpan {
  uintptr_t lo, hi;
};
ByteSpan tensor_span(const loom_tensor_t* t);
bool spans_overlap(ByteSpan a, ByteSpan b);

class ActCache {
 public:
  // The cached blocks when `b` (a MUL_MAT's src1) is the B they came from,
  // rounded in blocks of `block`, in the buffer of `generation`.
  bool find(const loom_tensor_t* b, int block, uint64_t generation, ActQ8* out) const;
  void store(const loom_tensor_t* b, int block, uint64_t generation, ActQ8 act);
  // A node wrote `written`: forget the entry if it overlaps the cached B.
  void note_write(const loom_tensor_t* written);
  void clear() { valid_ = false; }

 private:
  bool valid_ = false;
  const void* data_ = nullptr;
  int64_t ne_[4] = {};
  uint64_t nb_[4] = {};
  int32_t type_ = 0;
  int block_ = 0;
  uint64_t generation_ = 0;
  ByteSpan span_{};
  ActQ8 act_{};
};

}  // namespace loom::cuda
