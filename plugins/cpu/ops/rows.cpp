// GET_ROWS (gather rows of any type into float rows) and SET_ROWS (scatter
// F32 rows into a float or quantized destination). Indices are checked
// against the row count; a bad one fails the node with the value.
#include <string>
#include <vector>

#include "common/type_traits.h"
#include "ops/ops.h"

namespace loom::cpu {

namespace {

void check_index(int64_t idx, int64_t n_rows, int64_t i, int64_t j, int64_t l) {
  if (idx < 0 || idx >= n_rows) {
    throw KernelError("row index " + std::to_string(idx) + " at [" + std::to_string(i) + ", " +
                      std::to_string(j) + ", " + std::to_string(l) + "] out of range [0, " +
                      std::to_string(n_rows) + ")");
  }
}

}  // namespace

void kernel_get_rows(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* idx = dst->src[1];
  int64_t r0, r1;
  common::split_range(nrows(dst), ith, nth, &r0, &r1);
  thread_local std::vector<float> x;
  x.resize(static_cast<size_t>(a->ne[0]));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i, j, l;
    unravel_row(dst, r, &i, &j, &l);
    const int64_t row = load_index(idx, i, j, l);
    check_index(row, a->ne[1], i, j, l);
    load_row(a, row, j, l, x.data());
    store_row(dst, i, j, l, x.data());
  }
}

void kernel_set_rows(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* rows = dst->src[1];
  const loom_tensor_t* idx = dst->src[2];
  int64_t r0, r1;
  common::split_range(nrows(rows), ith, nth, &r0, &r1);
  // Every destination row asked for first: a decode step writes one new
  // row per KV head, each in its own cold cache line(s), and waiting for
  // them one after another made SET_ROWS the slowest small node of a step.
  // (Contiguous rows only: a strided row's span may be anything; and at
  // most kPrefetchRows rows, a decode step's: a prefill's many rows would
  // not all stay in cache until written, and lie side by side per head.)
  constexpr int64_t kPrefetchRows = 64;
  const common::TypeTraits& tr = common::type_traits(dst->type);
  const int64_t row_bytes = dst->nb[0] == tr.type_size && r1 - r0 <= kPrefetchRows
                                ? static_cast<int64_t>(tr.type_size) * (dst->ne[0] / tr.block_size)
                                : 0;
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i, j, l;
    unravel_row(rows, r, &i, &j, &l);
    const int64_t row = load_index(idx, i, j, l);
    check_index(row, dst->ne[1], i, j, l);
    const char* p = row_ptr(dst, row, j, l);
    for (int64_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(p + off, 1);
  }
  thread_local std::vector<float> x;
  x.resize(static_cast<size_t>(rows->ne[0]));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i, j, l;
    unravel_row(rows, r, &i, &j, &l);
    const int64_t row = load_index(idx, i, j, l);
    load_row(rows, i, j, l, x.data());
    store_row(dst, row, j, l, x.data());
  }
}

}  // namespace loom::cpu
