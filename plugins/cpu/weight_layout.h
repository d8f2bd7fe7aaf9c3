// The "cpu_weights" buffer type (loom.weight_layout): Q8_0 / Q4_0 / Q4_1 /
// Q5_0 / Q5_1 / IQ4_NL / Q4_K / Q5_K / Q6_K matrices stored with rows interleaved in groups of 8 for the integer
// GEMV/GEMM kernels (ops/matmul_x8.cpp, ops/matmul_kquant_x8.cpp).
// set_tensor / get_tensor take and give GGUF's bytes, exactly.
//
// Layout ("x8"): for each group g of 8 rows and each block index i, one
// superblock of 8 * block bytes at ((g * nblk) + i) * 8 * block bytes. A
// block's fields are cut into units (2 or 4 bytes); unit u of a field for
// row 8g + j lies at field_start + u * stride + j * unit_bytes (stride
// 8 * unit_bytes unless said), so one 32-byte
// load gives a 4-byte unit of 8 rows — the operand of an 8-lane integer dot
// against 4 broadcast activation bytes. Fields (canonical offset -> start):
//   Q4_0 / Q8_0  d (one 2-byte unit) at 0; qs in 4-byte units at 16
//                (Q4_0: 4 units, Q8_0: 8). IQ4_NL: Q4_0's (the same block).
//   Q4_1         d (2-byte unit) at 0, m (2-byte unit) at 16; qs in 4
//                4-byte units at 32.
//   Q5_0         d at 0; qh (one 4-byte unit: bit i is quant i's fifth
//                bit) at 16; qs in 4 4-byte units at 48.
//   Q5_1         d at 0, m at 16; qh at 32; qs in 4 4-byte units at 64.
//   Q4_K         d|dmin (one 4-byte unit) at 0; the 12 packed scale bytes
//                as 3 units (words u0, u1, u2: the kernel unpacks 8 rows'
//                6-bit scales and mins at once) at 32; qs, 32 units, at
//                128, unit 8g + t (qs bytes 32g + 4t ..) at 128 + 32 (4t + g).
//   Q5_K         Q4_K's fields at the same places, then qh in 8 units
//                at 1152 (unit t: qh bytes 4t .. +3 of the 8 rows).
//   Q6_K         the 6-bit quants u = q + 32 re-cut (ql / qh -> planes A,
//                B, C of 64 bytes a row): byte b = 32h + l of A, B, C holds
//                u(128h + l), u(128h + 32 + l), u(128h + 64 + l) in bits
//                0..5 and bits 0-1, 2-3, 4-5 of u(128h + 96 + l) in bits
//                6-7, so 3 loads give 4 vectors of quants in 11 bit ops
//                (ql / qh: 17). d (2-byte unit) at 0; the 16 int8 scales, 4
//                units, at 16; unit k of A, B, C at 144 + 96k, + 32, + 64.
// Each superblock is read front to back by the decode kernels: interleaved
// streams within it halved the rate from memory (Q6_K: 16 -> ~28 GB/s).
// Same size as the canonical tensor; get_tensor inverts it exactly.
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

// nullptr when t can be stored in the layout (Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / Q4_K /
// Q5_K / Q6_K, 2-D or a stack of matrices [K, M, E] (each then repacked
// on its own), dense, rows a multiple of 8, not a view), else why not.
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

// Row `row` of a repacked tensor as canonical blocks (ne[0] / block_size).
void repacked_row(const loom_tensor_t* t, int64_t row, void* out);

// Whether the loom.weight_layout extension offers the type: a build with the
// int8 kernels, and LOOM_CPU_REPACK not "0".
bool weight_layout_enabled();

}  // namespace loom::cpu
