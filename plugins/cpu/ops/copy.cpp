// CPY and CONT: copy src0 into dst, elements matched in row-major logical
// order (the shapes may differ when the element counts agree). Same plain
// type: bytes are copied exactly (I32, I64, NaN payloads); same quantized
// type with equal rows: blocks copied; otherwise through f32 (dequantize /
// convert / quantize per destination row).
#include <cstring>
#include <vector>

#include "common/type_traits.h"
#include "ops/ops.h"

namespace loom::cpu {

namespace {

// Walks a tensor's elements in row-major logical order from a flat index.
struct FlatCursor {
  const loom_tensor_t* t;
  int64_t i0 = 0;
  int64_t row = 0;  // flat row over dims 1..3
  FlatCursor(const loom_tensor_t* tensor, int64_t flat) : t(tensor) {
    i0 = flat % t->ne[0];
    row = flat / t->ne[0];
  }
  void next() {
    if (++i0 == t->ne[0]) {
      i0 = 0;
      ++row;
    }
  }
  const char* row_start() const {
    int64_t i1, i2, i3;
    unravel_row(t, row, &i1, &i2, &i3);
    return row_ptr(t, i1, i2, i3);
  }
};

void copy_bytes_row(const loom_tensor_t* src, const loom_tensor_t* dst, int64_t r) {
  const size_t esize = common::type_traits(dst->type).type_size;
  int64_t i1, i2, i3;
  unravel_row(dst, r, &i1, &i2, &i3);
  char* out = row_ptr(dst, i1, i2, i3);
  if (src->ne[0] == dst->ne[0]) {
    // Same row length: dst row r is src flat row r, copied element (block) wise.
    int64_t j1, j2, j3;
    unravel_row(src, r, &j1, &j2, &j3);
    const char* in = row_ptr(src, j1, j2, j3);
    const int64_t n = dst->ne[0] / common::type_traits(dst->type).block_size;
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(out + i * static_cast<int64_t>(dst->nb[0]), in + i * static_cast<int64_t>(src->nb[0]),
                  esize);
    }
    return;
  }
  FlatCursor c(src, r * dst->ne[0]);
  for (int64_t i = 0; i < dst->ne[0]; ++i, c.next()) {
    std::memcpy(out + i * static_cast<int64_t>(dst->nb[0]),
                c.row_start() + c.i0 * static_cast<int64_t>(src->nb[0]), esize);
  }
}

}  // namespace

void kernel_copy(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* src = dst->src[0];
  const bool raw = src->type == dst->type;
  int64_t r0, r1;
  common::split_range(nrows(dst), ith, nth, &r0, &r1);
  std::vector<float> out(raw ? 0 : static_cast<size_t>(dst->ne[0]));
  std::vector<float> in(raw ? 0 : static_cast<size_t>(src->ne[0]));
  int64_t cached = -1;  // flat src row currently in `in`
  for (int64_t r = r0; r < r1; ++r) {
    if (raw) {
      copy_bytes_row(src, dst, r);
      continue;
    }
    int64_t i1, i2, i3;
    unravel_row(dst, r, &i1, &i2, &i3);
    FlatCursor c(src, r * dst->ne[0]);
    for (int64_t i = 0; i < dst->ne[0]; ++i, c.next()) {
      if (c.row != cached) {
        int64_t j1, j2, j3;
        unravel_row(src, c.row, &j1, &j2, &j3);
        load_row(src, j1, j2, j3, in.data());
        cached = c.row;
      }
      out[i] = in[c.i0];
    }
    store_row(dst, i1, i2, i3, out.data());
  }
}

}  // namespace loom::cpu
