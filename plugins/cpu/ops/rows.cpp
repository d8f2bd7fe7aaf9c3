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
  // Destination rows asked for ahead of their writes: a decode step writes
  // one new row per KV head, each in its own cold cache line(s), and
  // waiting for them one after another made SET_ROWS the slowest small node
  // of a step (a 16-sequence step's 192 rows: ~30 us a node when only
  // shares of at most 64 rows were asked for, all at once). Every index is
  // checked before any row is written; the first kAheadRows rows are asked
  // for then, and each write asks for the row kAheadRows further on, so a
  // prefill's many rows are never all in flight. (Contiguous rows only: a
  // strided row's span may be anything.)
  constexpr int64_t kAheadRows = 16;
  const common::TypeTraits& tr = common::type_traits(dst->type);
  const int64_t row_bytes =
      dst->nb[0] == tr.type_size ? static_cast<int64_t>(tr.type_size) * (dst->ne[0] / tr.block_size) : 0;
  const auto dest = [&](int64_t r) {
    int64_t i, j, l;
    unravel_row(rows, r, &i, &j, &l);
    return row_ptr(dst, load_index(idx, i, j, l), j, l);
  };
  const auto ask = [&](int64_t r) {
    const char* p = dest(r);
    for (int64_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(p + off, 1);
  };
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i, j, l;
    unravel_row(rows, r, &i, &j, &l);
    check_index(load_index(idx, i, j, l), dst->ne[1], i, j, l);
    if (r < r0 + kAheadRows) ask(r);
  }
  thread_local std::vector<float> x;
  x.resize(static_cast<size_t>(rows->ne[0]));
  for (int64_t r = r0; r < r1; ++r) {
    if (row_bytes > 0 && r + kAheadRows < r1) ask(r + kAheadRows);
    int64_t i, j, l;
    unravel_row(rows, r, &i, &j, &l);
    const int64_t row = load_index(idx, i, j, l);
    load_row(rows, i, j, l, x.data());
    store_row(dst, row, j, l, x.data());
  }
}

}  // namespace loom::cpu
