// The "cuda<N>_weights" buffer type (loom.weight_layout): Q8_0 and Q4_0
// matrices with every block's quants apart from its scale, so the decode
// GEMV (ops/gemv_split.cu) loads a whole block's quants as 16-byte words
// (GGUF's 18- and 34-byte blocks are only 2-byte aligned: their quants load
// as 16-bit halves, the load-bound profile of issue 28).
//
// Layout ("split"), for a matrix of n blocks (row by row, as GGUF orders
// them): block i's quants at i * Q (Q = 16 bytes for Q4_0, 32 for Q8_0;
// the same bytes as in the block), then every block's f16 scale d, block
// i's at n * Q + 2 * i. Same size as the canonical tensor; set_tensor and
// get_tensor take and give GGUF's bytes in whole blocks, exactly. Only a
// whole 2-D matrix is stored so (not a view, not a stack of experts), and
// only MUL_MAT reads it, as src0 (ops/support.cpp declines other readers).
// LOOM_CUDA_REPACK=0: not offered (every weight in GGUF's blocks).
//
// Plain C++ (no CUDA headers): the host test compiles it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/plugin.h"

namespace loom::cuda {

// A split type's block: elements, canonical bytes (d first, then the
// quants) and quant bytes.
struct SplitShape {
  int elems;
  int block_bytes;
  int quant_bytes;
};

// The shape of `type` in the split layout; false for types it does not hold.
bool split_shape(int32_t type, SplitShape* out);

// nullptr when t can be stored in the layout, else why not.
const char* weight_layout_unsupported(const loom_tensor_t* t);

// Whether the device offers the layout (LOOM_CUDA_REPACK not "0").
bool weight_layout_enabled();

// The weights buffer type's interface (buffer.cpp registers it once), so
// that is_split can tell its tensors without the CUDA runtime.
void set_weights_type_iface(const loom_buffer_type_iface_t* iface);
// Whether t's bytes are in the split layout (t lives in a weights buffer).
bool is_split(const loom_tensor_t* t);

// Canonical blocks (count of them) to their quants (count * quant_bytes)
// and scales (count * 2), and back.
void split_blocks(const SplitShape& s, const uint8_t* canonical, size_t count, uint8_t* quants,
                  uint8_t* scales);
void join_blocks(const SplitShape& s, const uint8_t* quants, const uint8_t* scales, size_t count,
                 uint8_t* canonical);

// Blocks of a tensor in the layout (its elements / elems).
size_t split_block_count(const loom_tensor_t* t, const SplitShape& s);

}  // namespace loom::cuda
