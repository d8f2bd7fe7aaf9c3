// MUL_MAT with repacked Q8_0 / Q4_0 A (groups of 8 rows, weight_layout.h)
// on AMX tiles (Intel Sapphire Rapids and later: TDPBSSD, signed int8 x
// signed int8 into int32), for 16 columns of B at a time, in products
// over 32 or more columns (kMinCols). Per block of 32
// elements, one tile product gives the exact integer dots of 16 columns x 8
// rows:
//   A tile: the 16 columns' 8-bit activations (ActBlock.qs), 16 rows x 32 bytes,
//           read in place from the act buffer (row stride: a column's blocks);
//   B tile: the group's 8 rows of quants as signed bytes in the layout TDPBSSD
//           wants (row kk = quants 4kk .. 4kk+3 of each of the 8 rows): the
//           repacked Q8_0 superblock is exactly that (read in place), Q4_0's
//           nibbles minus 8 are unpacked once per group;
//   C tile: 16 x 8 int32, stored and scaled as the AVX path scales its
//           integer sums (v = sum * d_b, acc = fma(d_a, v, acc)), so both
//           paths give the same bits.
// Columns past the last whole 16 stay on the AVX path (matmul_x8.cpp).
// Used when CPUID reports AMX-TILE and AMX-INT8 and Linux grants the tile
// state (arch_prctl ARCH_REQ_XCOMP_PERM); LOOM_CPU_AMX=0 turns it off.
#include "ops/matmul.h"
#include "weight_layout.h"

#if LOOM_CPU_INT8_DOT && defined(__AVX512F__) && defined(__x86_64__) && defined(__linux__)

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "common/env.h"
#include "common/glue.h"
#include "ops/x8_groups.h"

namespace loom::cpu {
namespace {

constexpr int kBlock = 32;
constexpr int kTileCols = 16;  // columns of B per tile product
constexpr int kPairRows = 2 * kWeightGroupRows;
// Products over fewer columns stay on the AVX-512 kernels: per block of 32
// a tile product here pays a tile store and 16 rescales, so at 16 columns
// it only ties the VNNI kernels on hot weights (loom_ops_bench q4_0_serve
// K 768 x M 2048: 76.5 against 76.2 us) and loses inside a model, where
// it also slows the ops around it (2-core Sapphire Rapids VM,
// loom_seq_step_bench s768-q4_0, 16 sequences: step 7.8-8.7 ms against
// 7.3-7.7 without AMX; 32 sequences 12.1-12.3 against 12.4-13.3, 64
// sequences 23.7-25.3 against 27.7-27.8). With the tiles configured once
// per node, 16 sequences still ran slower on tiles: 7.0-8.1 ms against
// 6.8-7.2 (three alternations).
constexpr int64_t kMinCols = 32;

// The tile configuration (palette 1), two sets for two blocks in flight:
// tiles 0 / 3 C (16 columns x 16 rows, int32), 1 / 4 A (16 x 32 bytes),
// 2 / 5 B (8 x 64 bytes).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

TileConfig make_config() {
  TileConfig c;
  for (int s = 0; s < 6; s += 3) {
    c.rows[s] = kTileCols, c.colsb[s] = kPairRows * 4;
    c.rows[s + 1] = kTileCols, c.colsb[s + 1] = kBlock;
    c.rows[s + 2] = kBlock / 4, c.colsb[s + 2] = kPairRows * 4;
  }
  return c;
}

bool amx_granted() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  const bool tile = (d >> 24) & 1u, int8 = (d >> 25) & 1u;
  if (!tile || !int8) return false;
  constexpr long kReqXcompPerm = 0x1023, kXfeatureTileData = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureTileData) == 0;
}

// One group's quants of one repacked superblock as 32-byte halves of
// TDPBSSD's B rows (row kk: quants 4kk .. 4kk+3 of each of 8 rows), at out
// + 64 kk. Q8_0: the 8 chunks as stored. Q4_0: rows 0..3 the low nibbles
// (quants 4t .. 4t+3), rows 4..7 the high nibbles (16 + 4t ..), minus 8.
template <bool kQ8>
inline void b_half(const uint8_t* sb, int8_t* out) {
  if (kQ8) {
    for (int t = 0; t < 8; ++t) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 64 * t),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 16 + 32 * t)));
    }
    return;
  }
  const __m256i low4 = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
  for (int t = 0; t < 4; ++t) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 16 + 32 * t));
    const __m256i lo = _mm256_sub_epi8(_mm256_and_si256(v, low4), eight);
    const __m256i hi = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(v, 4), low4), eight);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 64 * t), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 64 * (t + 4)), hi);
  }
}

// A pair of groups (the second may be absent: zeros) as B tiles, 512 bytes
// a block, and their 16 rows' scales, 16 floats a block.
struct PairTiles {
  std::vector<int8_t> b;
  std::vector<float> d;
};

template <bool kQ8>
void make_pair(const uint8_t* ga, const uint8_t* gb, int64_t nblk, PairTiles* t) {
  constexpr size_t sb_bytes = 8 * (kQ8 ? sizeof(loom_block_q8_0_t) : sizeof(loom_block_q4_0_t));
  // Every byte is written below (no zero fill first: at 16 columns the
  // pair's tiles are rebuilt for little arithmetic, so each pass counts).
  t->b.resize(static_cast<size_t>(nblk) * 512);
  t->d.resize(static_cast<size_t>(nblk) * 16);
  for (int64_t i = 0; i < nblk; ++i) {
    const size_t off = static_cast<size_t>(i) * sb_bytes;
    // Two interleaved streams (and the next pair's): the hardware
    // prefetcher alone does not follow them (x8_groups.h).
    prefetch_pair<sb_bytes>(ga, ga + static_cast<size_t>(nblk) * sb_bytes, i, nblk);
    b_half<kQ8>(ga + off, t->b.data() + i * 512);
    _mm256_storeu_ps(t->d.data() + i * 16, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ga + off))));
    if (gb == nullptr) {  // no second group: its rows are zeros
      int8_t* half = t->b.data() + i * 512 + 32;
      for (int r = 0; r < 8; ++r) _mm256_storeu_si256(reinterpret_cast<__m256i*>(half + 64 * r), _mm256_setzero_si256());
      _mm256_storeu_ps(t->d.data() + i * 16 + 8, _mm256_setzero_ps());
      continue;
    }
    b_half<kQ8>(gb + off, t->b.data() + i * 512 + 32);
    _mm256_storeu_ps(t->d.data() + i * 16 + 8,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + off))));
  }
}

// The scaled sums of one block (its C tile stored in cbuf) into acc, as
// the AVX path scales its integer sums: v = sum * d_b, acc = fma(d_a, v, acc).
inline void scale_block(const int32_t (*cbuf)[kPairRows], const float* da, const ActBlock* y, int64_t nblk,
                        __m512* acc) {
  const __m512 d = _mm512_loadu_ps(da);
  for (int c = 0; c < kTileCols; ++c) {
    const __m512 v = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_load_si512(cbuf[c])), _mm512_set1_ps(y[c * nblk].d));
    acc[c] = _mm512_fmadd_ps(d, v, acc[c]);
  }
}

// The tile product of block i into tile set 0 (C 0, A 1, B 2) or 1 (3, 4,
// 5), and a set's C stored. Tile numbers are literal in the instructions.
#define LOOM_AMX_TARGET __attribute__((target("amx-tile,amx-int8"), always_inline)) inline
LOOM_AMX_TARGET void product0(const int8_t* b, const int8_t* a, size_t astride) {
  _tile_loadd(2, b, 64);
  _tile_loadd(1, a, astride);
  _tile_zero(0);
  _tile_dpbssd(0, 1, 2);
}
LOOM_AMX_TARGET void product1(const int8_t* b, const int8_t* a, size_t astride) {
  _tile_loadd(5, b, 64);
  _tile_loadd(4, a, astride);
  _tile_zero(3);
  _tile_dpbssd(3, 4, 5);
}
LOOM_AMX_TARGET void store0(int32_t (*c)[kPairRows]) { _tile_stored(0, c, 64); }
LOOM_AMX_TARGET void store1(int32_t (*c)[kPairRows]) { _tile_stored(3, c, 64); }
#undef LOOM_AMX_TARGET

// Columns [n0, n0 + 16) x the pair's 16 rows: one tile product per block,
// in two tile sets, software-pipelined: while block i's product runs, block
// i - 1's C is stored and block i - 2's (stored an iteration earlier, so
// the loads do not wait on the tile store) is scaled.
__attribute__((target("amx-tile,amx-int8"))) void tile_cols(const loom_tensor_t* dst, const PairTiles& t, bool two,
                                                            int64_t nblk, const ActBlock* act, int64_t n0,
                                                            int64_t m0) {
  __m512 acc[kTileCols];
  for (int c = 0; c < kTileCols; ++c) acc[c] = _mm512_setzero_ps();
  alignas(64) int32_t cbuf[2][kTileCols][kPairRows];
  const size_t astride = static_cast<size_t>(nblk) * sizeof(ActBlock);
  const ActBlock* y = act + n0 * nblk;
  const int8_t* bq = t.b.data();
  const float* da = t.d.data();
  auto scale = [&](int64_t j) { scale_block(cbuf[j % 2], da + j * 16, y + j, nblk, acc); };
  for (int64_t i = 0; i < nblk; ++i) {
    if (i % 2 == 0) {
      product0(bq + i * 512, y[i].qs, astride);
      if (i >= 1) store1(cbuf[1]);
    } else {
      product1(bq + i * 512, y[i].qs, astride);
      store0(cbuf[0]);
    }
    if (i >= 2) scale(i - 2);
  }
  if (nblk % 2 == 1) {
    store0(cbuf[0]);
  } else {
    store1(cbuf[1]);
  }
  if (nblk >= 2) scale(nblk - 2);
  scale(nblk - 1);
  for (int c = 0; c < kTileCols; ++c) {
    store_group(dst, n0 + c, m0, _mm512_maskz_extractf32x8_ps(0xFF, acc[c], 0));
    if (two) store_group(dst, n0 + c, m0 + kWeightGroupRows, _mm512_maskz_extractf32x8_ps(0xFF, acc[c], 1));
  }
}

__attribute__((target("amx-tile"))) void tiles_on(const TileConfig& c) { _tile_loadconfig(&c); }
__attribute__((target("amx-tile"))) void tiles_off() { _tile_release(); }

thread_local bool t_tiles_on = false;  // this thread's tiles are configured

}  // namespace

bool amx_usable() {
  static const bool ok = common::plugin_env_flag("LOOM_CPU_AMX", true) && amx_granted();
  return ok;
}

bool amx_takes(int32_t type, int64_t n_len) {
  return n_len >= kMinCols && (type == LOOM_TYPE_Q8_0 || type == LOOM_TYPE_Q4_0) && amx_usable();
}

int64_t amx_columns(const loom_tensor_t* dst, const uint8_t* ga, const uint8_t* gb, int64_t nblk, const ActBlock* act,
                    int64_t n_len, int64_t m0) {
  const int32_t type = dst->src[0]->type;
  if (!amx_takes(type, n_len)) return 0;
  static const TileConfig config = make_config();
  static const bool logged = [] {
    common::plugin_log(LOOM_LOG_LEVEL_INFO, "cpu", "MUL_MAT of Q8_0 / Q4_0 weights over 32+ columns on AMX tiles (LOOM_CPU_AMX=0: off)");
    return true;
  }();
  (void)logged;
  const bool q8 = type == LOOM_TYPE_Q8_0;
  thread_local PairTiles tiles;
  if (q8) {
    make_pair<true>(ga, gb, nblk, &tiles);
  } else {
    make_pair<false>(ga, gb, nblk, &tiles);
  }
  if (!t_tiles_on) {
    tiles_on(config);
    t_tiles_on = true;
  }
  int64_t n = 0;
  for (; n + kTileCols <= n_len; n += kTileCols) tile_cols(dst, tiles, gb != nullptr, nblk, act, n, m0);
  return n;
}

void amx_release() {
  if (!t_tiles_on) return;
  tiles_off();
  t_tiles_on = false;
}

}  // namespace loom::cpu

#else

namespace loom::cpu {
bool amx_usable() { return false; }
bool amx_takes(int32_t, int64_t) { return false; }
int64_t amx_columns(const loom_tensor_t*, const uint8_t*, const uint8_t*, int64_t, const ActBlock*, int64_t, int64_t) {
  return 0;
}
void amx_release() {}
}  // namespace loom::cpu

#endif
