#version 450
// GET_ROWS (p[1] = 0): dst[:, i, j, l] = src0[:, idx[i, j, l], j, l] as
// float, one invocation per destination element. SET_ROWS (p[1] = 1):
// dst[:, idx[i, j, l], j, l] = rows[:, i, j, l], one invocation per element
// (float destination) or per block (quantized destination). Bindings: GET:
// A = src0, B = I32 indices; SET: A = F32 rows, B = I32/I64 indices.
// An index out of range skips the write and is reported (p[2]: node id).
#include "common.glsl"
#include "quant.glsl"

// Index (i, j, l) of B; false (and reported) when outside [0, limit).
bool load_index(uint i, uint j, uint l, uint limit, out uint idx) {
  uint off = offset4(2, i, j, l, 0u);
  uint lo = ld_b_u32(off);
  uint hi = type_b() == TYPE_I64 ? ld_b_u32(off + 4u) : ((lo & 0x80000000u) != 0u ? 0xFFFFFFFFu : 0u);
  idx = lo;
  if (hi != 0u || lo >= limit) {
    report_bad_index(pc.p[2], lo, hi, limit);
    return false;
  }
  return true;
}

void main() {
  uint i = flat_index();
  uint td = type_d();
  uint ta = type_a();
  if (pc.p[1] == 0u) {
    if (i >= nelems(0)) return;
    uint i0 = i % pc.t[0].ne[0];
    uint r = i / pc.t[0].ne[0];
    uint ii = r % pc.t[0].ne[1];
    uint j = (r / pc.t[0].ne[1]) % pc.t[0].ne[2];
    uint l = r / (pc.t[0].ne[1] * pc.t[0].ne[2]);
    uint idx;
    if (!load_index(ii, j, l, pc.t[1].ne[1], idx)) return;
    uint arow = offset4(1, 0u, idx, j, l);
    st_elem(td, offset4(0, i0, ii, j, l), ld_a_row_elem(ta, arow, i0, pc.t[1].nb[0]));
    return;
  }
  // SET_ROWS: work units over the rows tensor (A).
  bool q = is_quant(td);
  uint unit = q ? 32u : 1u;
  uint n0 = pc.t[1].ne[0];
  uint per_row = n0 / unit;
  uint r = i / per_row;
  if (r >= nrows(1)) return;
  uint i0 = (i % per_row) * unit;
  uint ii = r % pc.t[1].ne[1];
  uint j = (r / pc.t[1].ne[1]) % pc.t[1].ne[2];
  uint l = r / (pc.t[1].ne[1] * pc.t[1].ne[2]);
  uint idx;
  if (!load_index(ii, j, l, pc.t[0].ne[1], idx)) return;
  uint arow = offset4(1, 0u, ii, j, l);
  uint drow = offset4(0, 0u, idx, j, l);
  if (!q) {
    st_elem(td, drow + i0 * pc.t[0].nb[0], ld_a_elem(ta, arow + i0 * pc.t[1].nb[0]));
    return;
  }
  float x[32];
  for (uint k = 0u; k < 32u; ++k) x[k] = ld_a_elem(ta, arow + (i0 + k) * pc.t[1].nb[0]);
  st_block(td, drow + (i0 / 32u) * pc.t[0].nb[0], x);
}
