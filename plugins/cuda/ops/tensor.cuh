// A tensor as kernels receive it (by value): data, type, extents and byte
// strides, with the 4-d index helpers every kernel uses.
#pragma once

#include "hd.cuh"
#include "loom/plugin.h"

namespace loom::cuda {

struct TArg {
  uint8_t* data;
  int32_t type;
  int64_t ne[4];
  int64_t nb[4];

  LOOM_HD int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  LOOM_HD int64_t nrows() const { return ne[1] * ne[2] * ne[3]; }
  // Byte offset of element (i0, i1, i2, i3) of a plain type.
  LOOM_HD int64_t offset(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
    return i0 * nb[0] + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
  }
  // Start of row r (rows counted over dims 1..3 in order).
  LOOM_HD uint8_t* row(int64_t r) const {
    const int64_t i1 = r % ne[1], i2 = (r / ne[1]) % ne[2], i3 = r / (ne[1] * ne[2]);
    return data + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
  }
  // Logical element e (row-major, i0 fastest) split into its 4 indices.
  LOOM_HD void index(int64_t e, int64_t* i) const {
    i[0] = e % ne[0];
    e /= ne[0];
    i[1] = e % ne[1];
    e /= ne[1];
    i[2] = e % ne[2];
    i[3] = e / ne[2];
  }
};

// Element (i0, i1, i2) of an I32 / I64 index tensor (GET_ROWS, SET_ROWS).
LOOM_HD int64_t load_row_index(const TArg& idx, int64_t i0, int64_t i1, int64_t i2) {
  const uint8_t* p = idx.data + idx.offset(i0, i1, i2, 0);
  return idx.type == LOOM_TYPE_I64 ? *reinterpret_cast<const int64_t*>(p) : *reinterpret_cast<const int32_t*>(p);
}

inline TArg targ(const loom_tensor_t* t) {
  TArg a;
  a.data = static_cast<uint8_t*>(t->data);
  a.type = t->type;
  for (int d = 0; d < 4; ++d) {
    a.ne[d] = t->ne[d];
    a.nb[d] = static_cast<int64_t>(t->nb[d]);
  }
  return a;
}

}  // namespace loom::cuda
