#version 450
// CPY and CONT: elements matched in row-major logical order (shapes may
// differ when the counts agree). p[1] selects the unit of work:
//   0: one element, same plain type (bytes copied exactly)
//   1: one block, same quantized type (any, quant.glsl) and row length
//      (bytes copied)
//   2: one element, converted through f32 (dequantizes quantized sources of
//      every block type, quant.glsl)
//   3: one destination block, quantized from 32 f32 values
#include "common.glsl"
#include "quant.glsl"

// Logical flat index -> byte offset of tensor k's element (or block start
// and in-block position for quantized tensors: i0 counts elements).
void locate(uint k, uint fi, out uint row, out uint i0) {
  uint ne0 = pc.t[k].ne[0];
  i0 = fi % ne0;
  row = row_offset(k, fi / ne0);
}

void copy_bytes(uint dst, uint src, uint n) {
  if (((dst | src | n) & 3u) == 0u) {
    for (uint b = 0u; b < n; b += 4u) st_u32(dst + b, ld_a_u32(src + b));
  } else {
    for (uint b = 0u; b < n; b += 2u) st_u16(dst + b, ld_a_u16(src + b));
  }
}

void main() {
  uint mode = pc.p[1];
  uint i = flat_index();
  uint td = type_d();
  uint ta = type_a();
  uint drow, di0, arow, ai0;
  if (mode == 0u) {
    if (i >= nelems(0)) return;
    locate(0, i, drow, di0);
    locate(1, i, arow, ai0);
    uint esize = td == TYPE_I64 ? 8u : (td == TYPE_F32 || td == TYPE_I32) ? 4u : 2u;
    copy_bytes(drow + di0 * pc.t[0].nb[0], arow + ai0 * pc.t[1].nb[0], esize);
  } else if (mode == 1u) {
    uint qk = block_elems(td);
    if (i >= nelems(0) / qk) return;
    locate(0, i * qk, drow, di0);
    locate(1, i * qk, arow, ai0);
    copy_bytes(drow + (di0 / qk) * pc.t[0].nb[0], arow + (ai0 / qk) * pc.t[1].nb[0], block_bytes(td));
  } else if (mode == 2u) {
    if (i >= nelems(0)) return;
    locate(0, i, drow, di0);
    locate(1, i, arow, ai0);
    st_elem(td, drow + di0 * pc.t[0].nb[0], ld_a_row_elem(ta, arow, ai0, pc.t[1].nb[0]));
  } else {
    uint nblk = nelems(0) / 32u;
    if (i >= nblk) return;
    float x[32];
    for (uint j = 0u; j < 32u; ++j) {
      locate(1, i * 32u + j, arow, ai0);
      x[j] = ld_a_elem(ta, arow + ai0 * pc.t[1].nb[0]);  // a float source (op_check)
    }
    locate(0, i * 32u, drow, di0);
    st_block(td, drow + (di0 / 32u) * pc.t[0].nb[0], x);
  }
}
