// Where the GEMV kernels' warps work, as plain __host__ __device__ math so
// the host test walks a whole grid and checks that every result is written
// exactly once: the launches (rows of A in blocks of kGemvWarps, groups of
// kGemvMaxCols columns of B, batch matrices; split where the grid's y / z
// exceed their limit) and each warp's row, columns and batch.
#pragma once

#include "hd.cuh"

namespace loom::cuda {

constexpr int kGemvWarps = 4;
constexpr int64_t kGemvMaxCols = 8;
constexpr int64_t kGridYZLimit = 65535;

// One launch: its grid and the column / batch offsets it starts at.
struct GemvLaunch {
  int64_t gx, gy, gz, n0, z0;
};

// fn(launch) for every launch of an M x N product over `mats` batch
// matrices; returns the first non-null fn result.
template <typename R, typename Fn>
R for_gemv_launches(int64_t m, int64_t n, int64_t mats, Fn fn, int64_t limit = kGridYZLimit) {
  const int64_t rows = (m + kGemvWarps - 1) / kGemvWarps, groups = (n + kGemvMaxCols - 1) / kGemvMaxCols;
  for (int64_t z0 = 0; z0 < mats; z0 += limit) {
    for (int64_t g0 = 0; g0 < groups; g0 += limit) {
      const GemvLaunch l{rows, groups - g0 < limit ? groups - g0 : limit, mats - z0 < limit ? mats - z0 : limit,
                         g0 * kGemvMaxCols, z0};
      if (R r = fn(l)) return r;
    }
  }
  return R{};
}

// Warp `warp` of block (bx, by, bz) of a launch at (n0, z0): row m of A,
// columns c0 .. c0 + ncols of B (ncols <= nc, the kernel's column count),
// batch z = i2 + b2 * i3. false past the last row.
struct GemvCell {
  int64_t m, c0, z, i2, i3;
  int ncols;
};
LOOM_HD bool gemv_cell(int64_t bx, int64_t by, int64_t bz, int warp, int64_t m_rows, int64_t n_cols, int64_t b2,
                       int64_t n0, int64_t z0, int nc, GemvCell* c) {
  c->m = bx * kGemvWarps + warp;
  if (c->m >= m_rows) return false;
  c->z = z0 + bz;
  c->i2 = c->z % b2;
  c->i3 = c->z / b2;
  c->c0 = n0 + by * kGemvMaxCols;
  const int64_t left = n_cols - c->c0;
  c->ncols = static_cast<int>(left < nc ? left : nc);
  return true;
}

// Products that share B launched as one grid (the Q, K and V projections,
// gate and up): member g owns the x blocks [first[g], first[g + 1]), each
// block its kGemvWarps rows of that member's A.
constexpr int kGemvGroupMax = 3;

// first[0 .. count] from each member's row count.
LOOM_HD void gemv_group_first(const int64_t* rows, int count, int64_t* first) {
  first[0] = 0;
  for (int g = 0; g < count; ++g) first[g + 1] = first[g] + (rows[g] + kGemvWarps - 1) / kGemvWarps;
}

// The member owning x block bx, and bx within it.
LOOM_HD int gemv_member(const int64_t* first, int count, int64_t bx, int64_t* local) {
  int g = 0;
  while (g + 1 < count && bx >= first[g + 1]) ++g;
  *local = bx - first[g];
  return g;
}

// The kernels' column count for N columns: the smallest of 1, 2, 4, 8
// holding min(N, kGemvMaxCols).
LOOM_HD int gemv_nc(int64_t n) { return n == 1 ? 1 : n == 2 ? 2 : n <= 4 ? 4 : 8; }

}  // namespace loom::cuda
