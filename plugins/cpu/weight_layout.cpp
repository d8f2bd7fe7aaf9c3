#include "weight_layout.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "common/env.h"
#include "common/type_traits.h"
#include "ops/ops.h"

namespace loom::cpu {
namespace {

std::atomic<const loom_buffer_type_t*> g_weight_type{nullptr};

size_t block_bytes(int32_t type) { return common::type_traits(type).type_size; }
int64_t blocks_per_row(const loom_tensor_t* t) { return t->ne[0] / common::type_traits(t->type).block_size; }

// One field of a block as the layout stores it: `count` units of `unit`
// bytes at `src` in the canonical block go to `dst` in the superblock, unit
// u of row (lane) j at dst + u * stride + j * unit (stride 0: 8 * unit,
// the units one after another).
struct Field {
  uint16_t src, dst, unit, count, stride = 0;
  size_t at(size_t u, size_t lane) const {
    return dst + u * (stride != 0 ? stride : kWeightGroupRows * unit) + lane * unit;
  }
};
// transform: canonical block -> the block the fields cut (same size), and
// back; nullptr when the fields cut the canonical block as it is.
using BlockFn = void (*)(const uint8_t* in, uint8_t* out);
struct Fields {
  const Field* f;
  int n;
  BlockFn encode = nullptr, decode = nullptr;
};
constexpr Field kQ4_0[] = {{0, 0, 2, 1}, {2, 16, 4, 4}};
constexpr Field kQ8_0[] = {{0, 0, 2, 1}, {2, 16, 4, 8}};
// Q4_1: d and m as two 2-byte fields (8 rows each), then Q4_0's quant units.
constexpr Field kQ4_1[] = {{0, 0, 2, 1}, {2, 16, 2, 1}, {4, 32, 4, 4}};
// Q5_0: d; qh as one 4-byte unit (bit i: quant i's fifth bit); Q4_0's
// quant units. Q5_1: d, m, then Q5_0's qh and quant units.
constexpr Field kQ5_0[] = {{0, 0, 2, 1}, {2, 16, 4, 1}, {6, 48, 4, 4}};
constexpr Field kQ5_1[] = {{0, 0, 2, 1}, {2, 16, 2, 1}, {4, 32, 4, 1}, {8, 64, 4, 4}};
// d|dmin as one 4-byte unit; the 12 scale bytes as 3 units (words u0 u1 u2
// of 8 rows, one vector each); qs in 32 units of 4 bytes, unit 8g + t
// (bytes 32g + 4t ..) stored as the (4t + g)-th: in the order the decode
// kernel reads them (the 4 pairs of sub-blocks side by side).
constexpr Field kQ4_K[] = {{0, 0, 4, 1},          {4, 32, 4, 3},          {16, 128, 4, 8, 128},
                           {48, 160, 4, 8, 128}, {80, 192, 4, 8, 128}, {112, 224, 4, 8, 128}};
// Q5_K: Q4_K's fields (its qs 32 bytes further on in the block), then qh in
// 8 units of 4 bytes at 1152 (unit t: qh bytes 4t .. +3).
constexpr Field kQ5_K[] = {{0, 0, 4, 1},           {4, 32, 4, 3},           {48, 128, 4, 8, 128},
                           {80, 160, 4, 8, 128},  {112, 192, 4, 8, 128}, {144, 224, 4, 8, 128},
                           {16, 1152, 4, 8}};
// Q6_K: d; the 16 int8 scales in 4 units; the 6-bit quants re-cut into
// planes A, B, C (64 bytes each, 16 units; see weight_layout.h), unit k of
// A, B, C side by side (96 bytes a step, read in order).
constexpr Field kQ6_K[] = {{208, 0, 2, 1},        {192, 16, 4, 4},        {0, 144, 4, 16, 96},
                           {64, 176, 4, 16, 96}, {128, 208, 4, 16, 96}};

// Q6_K quant e of a block (0..255) as the unsigned 6 bits u = q + 32.
inline uint8_t q6_get(const uint8_t* ql, const uint8_t* qh, int e) {
  const int h = e / 128, p = (e % 128) / 32, l = e % 32;
  const uint8_t lo = ql[64 * h + 32 * (p & 1) + l];
  const uint8_t nib = p < 2 ? lo & 0x0F : lo >> 4;
  return static_cast<uint8_t>(nib | (((qh[32 * h + l] >> (2 * p)) & 3) << 4));
}

// Canonical (ql, qh, scales, d) -> (A, B, C, scales, d): for byte b = 32h + l
// of each plane, A = u(128h + l), B = u(128h + 32 + l), C = u(128h + 64 + l)
// in bits 0..5, and u(128h + 96 + l)'s bits 0-1, 2-3, 4-5 in bits 6-7 of A,
// B, C.
void q6k_encode(const uint8_t* in, uint8_t* out) {
  const uint8_t* ql = in;
  const uint8_t* qh = in + 128;
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int b = 32 * h + l;
      const uint8_t u3 = q6_get(ql, qh, 128 * h + 96 + l);
      for (int p = 0; p < 3; ++p) {
        out[64 * p + b] = static_cast<uint8_t>(q6_get(ql, qh, 128 * h + 32 * p + l) | (((u3 >> (2 * p)) & 3) << 6));
      }
    }
  }
  std::memcpy(out + 192, in + 192, 18);
}

void q6k_decode(const uint8_t* in, uint8_t* out) {
  uint8_t* ql = out;
  uint8_t* qh = out + 128;
  std::memset(out, 0, 192);
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int b = 32 * h + l;
      uint8_t u[4];
      u[3] = 0;
      for (int p = 0; p < 3; ++p) {
        u[p] = in[64 * p + b] & 0x3F;
        u[3] = static_cast<uint8_t>(u[3] | ((in[64 * p + b] >> 6) << (2 * p)));
      }
      for (int p = 0; p < 4; ++p) {
        uint8_t& lo = ql[64 * h + 32 * (p & 1) + l];
        lo = static_cast<uint8_t>(lo | (p < 2 ? (u[p] & 0x0F) : (u[p] & 0x0F) << 4));
        qh[32 * h + l] = static_cast<uint8_t>(qh[32 * h + l] | ((u[p] >> 4) << (2 * p)));
      }
    }
  }
  std::memcpy(out + 192, in + 192, 18);
}

Fields fields_of(int32_t type) {
  switch (type) {
    case LOOM_TYPE_Q4_0:
    case LOOM_TYPE_IQ4_NL: return {kQ4_0, 2};  // the same block: d, 16 bytes of nibbles
    case LOOM_TYPE_Q8_0: return {kQ8_0, 2};
    case LOOM_TYPE_Q4_1: return {kQ4_1, 3};
    case LOOM_TYPE_Q5_0: return {kQ5_0, 3};
    case LOOM_TYPE_Q5_1: return {kQ5_1, 4};
    case LOOM_TYPE_Q4_K: return {kQ4_K, 6};
    case LOOM_TYPE_Q5_K: return {kQ5_K, 7};
    case LOOM_TYPE_Q6_K: return {kQ6_K, 5, q6k_encode, q6k_decode};
    default: return {nullptr, 0};
  }
}

// Byte offset, within a repacked tensor, of canonical block `b` (row-major
// over (row, block index)): its superblock and its row within the group.
struct Place {
  size_t super;  // the superblock's first byte
  size_t lane;   // row within the group
};
Place place_of(size_t b, int64_t nblk, size_t bs) {
  const auto row = static_cast<int64_t>(b) / nblk;
  const auto i = static_cast<int64_t>(b) % nblk;
  const int64_t g = row / kWeightGroupRows;
  return {static_cast<size_t>(g * nblk + i) * bs * kWeightGroupRows, static_cast<size_t>(row % kWeightGroupRows)};
}

// One canonical block <-> its scattered place in the superblock.
void scatter_block(const uint8_t* blk, uint8_t* base, Place p, Fields fs) {
  uint8_t* sb = base + p.super;
  uint8_t tmp[256];
  if (fs.encode != nullptr) {
    fs.encode(blk, tmp);
    blk = tmp;
  }
  for (int k = 0; k < fs.n; ++k) {
    const Field& f = fs.f[k];
    for (size_t u = 0; u < f.count; ++u) {
      std::memcpy(sb + f.at(u, p.lane), blk + f.src + u * f.unit, f.unit);
    }
  }
}
void gather_block(const uint8_t* base, Place p, Fields fs, uint8_t* out) {
  const uint8_t* sb = base + p.super;
  uint8_t tmp[256];
  uint8_t* blk = fs.decode != nullptr ? tmp : out;
  for (int k = 0; k < fs.n; ++k) {
    const Field& f = fs.f[k];
    for (size_t u = 0; u < f.count; ++u) {
      std::memcpy(blk + f.src + u * f.unit, sb + f.at(u, p.lane), f.unit);
    }
  }
  if (fs.decode != nullptr) fs.decode(tmp, out);
}

void store(const loom_tensor_t* t, const void* src, size_t offset, size_t size) {
  const size_t bs = block_bytes(t->type);
  const int64_t nblk = blocks_per_row(t);
  const Fields fs = fields_of(t->type);
  auto* base = static_cast<uint8_t*>(t->data);
  const auto* in = static_cast<const uint8_t*>(src);
  for (size_t b = offset / bs; b < (offset + size) / bs; ++b, in += bs) scatter_block(in, base, place_of(b, nblk, bs), fs);
}

void load(const loom_tensor_t* t, void* dst, size_t offset, size_t size) {
  const size_t bs = block_bytes(t->type);
  const int64_t nblk = blocks_per_row(t);
  const Fields fs = fields_of(t->type);
  const auto* base = static_cast<const uint8_t*>(t->data);
  auto* out = static_cast<uint8_t*>(dst);
  for (size_t b = offset / bs; b < (offset + size) / bs; ++b, out += bs) gather_block(base, place_of(b, nblk, bs), fs, out);
}

const common::HostLayout kLayout = {weight_layout_unsupported, store, load};

}  // namespace

const common::HostLayout* weight_layout() { return &kLayout; }

common::HostBufferConfig weight_buffer_config() {
  common::HostBufferConfig c{"cpu_weights", "cpu", 64, false};
  c.layout = &kLayout;
  return c;
}

const char* weight_layout_unsupported(const loom_tensor_t* t) {
  if (t == nullptr) return "null tensor";
  if (fields_of(t->type).n == 0) return "only Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K, Q5_K and Q6_K matrices are repacked";
  if (t->view_src != nullptr) return "a view";
  // A stack of matrices [K, M, E] (a mixture's experts) is one matrix of M E
  // rows: with M a multiple of 8 no group straddles two of them, so matrix e
  // is a repacked matrix of its own at e * nb[2] (MUL_MAT_ID reads it so).
  if (t->ne[3] != 1) return "more than 3 dimensions";
  if (t->ne[1] % kWeightGroupRows != 0) return "rows not a multiple of 8";
  const size_t bs = block_bytes(t->type);
  const int64_t nblk = blocks_per_row(t);
  if (t->ne[0] % common::type_traits(t->type).block_size != 0 || t->nb[0] != bs || t->nb[1] != bs * static_cast<size_t>(nblk) ||
      t->nb[2] != t->nb[1] * static_cast<size_t>(t->ne[1])) {
    return "not dense";
  }
  return nullptr;
}

bool float_weight_copied(const loom_tensor_t* t) {
  if (t == nullptr || !common::type_traits(t->type).is_float || t->view_src != nullptr) return false;
  if (t->ne[2] != 1 || t->ne[3] != 1) return false;
  const size_t es = common::type_traits(t->type).type_size;
  if (t->nb[0] != es || t->nb[1] != es * static_cast<size_t>(t->ne[0])) return false;
  return es * static_cast<size_t>(t->ne[0] * t->ne[1]) >= kFloatWeightCopyMin;
}

void set_weight_buffer_type(const loom_buffer_type_t* bt) { g_weight_type.store(bt); }

bool is_repacked(const loom_tensor_t* t) {
  const loom_buffer_type_t* wt = g_weight_type.load(std::memory_order_relaxed);
  return wt != nullptr && t->buffer != nullptr && t->buffer->buffer_type == wt;
}

void repacked_row(const loom_tensor_t* t, int64_t row, void* out) {
  const size_t bs = block_bytes(t->type);
  const int64_t nblk = blocks_per_row(t);
  const Fields fs = fields_of(t->type);
  const auto* base = static_cast<const uint8_t*>(t->data);
  auto* o = static_cast<uint8_t*>(out);
  for (int64_t i = 0; i < nblk; ++i) {
    gather_block(base, place_of(static_cast<size_t>(row * nblk + i), nblk, bs), fs, o + static_cast<size_t>(i) * bs);
  }
}

bool weight_layout_enabled() {
  static const bool on = [] {
    return int8_dot_built() && common::plugin_env_flag("LOOM_CPU_REPACK", true);
  }();
  return on;
}

}  // namespace loom::cpu
