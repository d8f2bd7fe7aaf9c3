// The "cpu_weights" buffer type (loom.weight_layout): Q8_0 / Q4_0 matrices
// stored with rows interleaved in groups of 8 for the int8 GEMV/GEMM tiles
// (ops/matmul_int8.cpp). set_tensor / get_tensor take and give GGUF's bytes.
//
// Layout ("x8"): for each group g of 8 rows and each block index i, one
// superblock of 8 * block bytes at ((g * nblk) + i) * 8 * block bytes:
//   8 scales (f16; row 8g + j at 2 * j), then the quants in chunks of 32
//   bytes: chunk t holds bytes 4t .. 4t+3 of the block's qs for rows
//   8g + 0 .. 8g + 7 (Q4_0: 4 chunks, Q8_0: 8).
// So one 32-byte load gives 4 consecutive quant bytes of 8 rows — the
// operand of an 8-lane integer dot against 4 broadcast activation bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_buffer.h"
#include "loom/plugin.h"

namespace loom::cpu {

constexpr int kWeightGroupRows = 8;

// The layout's hooks for the shared host buffer type.
const common::HostLayout* weight_layout();
// The config of the device's "cpu_weights" buffer type.
common::HostBufferConfig weight_buffer_config();

// nullptr when t can be stored in the layout (Q8_0 / Q4_0, 2-D, dense, rows
// a multiple of 8, not a view), else why not.
const char* weight_layout_unsupported(const loom_tensor_t* t);

// Whether the loader should copy float weight t (F32 / F16 / BF16, 2-D,
// dense, at least kFloatWeightCopyMin bytes) into the device's own host
// buffers: their large allocations have transparent huge pages, and the
// decode GEMV streams such memory 15-25% faster than the model file's
// 4 KiB mapping (s768 F16: 150 -> 186 tokens/s). Smaller matrices stay in
// the mapping (zero-copy).
constexpr size_t kFloatWeightCopyMin = size_t{1} << 20;
bool float_weight_copied(const loom_tensor_t* t);

// The device's cpu_weights buffer type, registered once by the device.
void set_weight_buffer_type(const loom_buffer_type_t* bt);
// Whether t lives in a cpu_weights buffer (its bytes are in the x8 layout).
bool is_repacked(const loom_tensor_t* t);

// Row `row` of a repacked tensor as canonical blocks (ne[0] / 32 blocks).
void repacked_row(const loom_tensor_t* t, int64_t row, void* out);

// Whether the loom.weight_layout extension offers the type: a build with the
// int8 kernels, and LOOM_CPU_REPACK not "0".
bool weight_layout_enabled();

}  // namespace loom::cpu
