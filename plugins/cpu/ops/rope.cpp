// ROPE, normal (pairs 2i, 2i+1) and neox (pairs i, i + n_dims/2) modes.
// theta_i = pos * freq_scale * freq_base^(-2i/n_dims) / factor_i, evaluated
// in double (factor_i from the optional src2, else 1); dims >= n_dims pass
// through.
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/ops.h"

namespace loom::cpu {

namespace {

// cos / sin of theta_i per position, kept per thread: the Q and K of every
// layer share the positions and parameters (a decode step: one position; a
// prefill: each of its positions, 12 layers x 2 nodes that computed the
// same table again, two thirds of a prefill's ROPE time), so a position's
// row is computed once for the parameters and then read (same values).
// Positions 0 .. while the rows fit kCacheBytes are kept; others in one
// scratch row.
struct RopeTable {
  static constexpr size_t kCacheBytes = size_t{4} << 20;
  int64_t n_dims = -1;
  float freq_base = 0.0f, freq_scale = 0.0f;
  std::vector<double> pw;      // freq_base^(-2i/n_dims)
  std::vector<double> rows;    // row p: cos theta_i for i < n_dims / 2, then sin theta_i
  std::vector<uint8_t> ready;  // whether row p is computed
  std::vector<double> one;     // a position past the kept rows
  std::vector<float> factors;  // the factors the rows were made with (empty: none)

  // ff: the frequency factors (src2) or nullptr. Compared by value: a
  // buffer may hold other factors at the same address later.
  const double* get(int32_t pos, int64_t dims, float base, float scale, const loom_tensor_t* ff) {
    const int64_t half = dims / 2;
    const bool same_ff = same_factors(ff, half);  // always: it also records ff's values
    if (dims != n_dims || base != freq_base || scale != freq_scale || !same_ff) {
      pw.resize(static_cast<size_t>(half));
      for (int64_t i = 0; i < half; ++i) {
        pw[static_cast<size_t>(i)] = std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / dims);
      }
      rows.clear();
      ready.clear();
      n_dims = dims;
      freq_base = base;
      freq_scale = scale;
    }
    const auto row_len = static_cast<size_t>(2 * half);
    const size_t kept = row_len == 0 ? 0 : kCacheBytes / (row_len * sizeof(double));
    if (pos < 0 || static_cast<size_t>(pos) >= kept) {
      one.resize(row_len);
      fill(pos, scale, one.data());
      return one.data();
    }
    const auto at = static_cast<size_t>(pos);
    if (at >= ready.size()) {
      ready.resize(at + 1, 0);
      rows.resize((at + 1) * row_len);
    }
    if (!ready[at]) {
      fill(pos, scale, rows.data() + at * row_len);
      ready[at] = 1;
    }
    return rows.data() + at * row_len;
  }

 private:
  void fill(int32_t pos, float scale, double* cs) const {
    const size_t half = pw.size();
    for (size_t i = 0; i < half; ++i) {
      const double f = factors.empty() ? 1.0 : static_cast<double>(factors[i]);
      const double theta = static_cast<double>(pos) * scale * pw[i] / f;
      cs[i] = std::cos(theta);
      cs[half + i] = std::sin(theta);
    }
  }

  // Whether ff holds `factors`; when not, copies them in (the caller rebuilds).
  bool same_factors(const loom_tensor_t* ff, int64_t half) {
    if (ff == nullptr) {
      const bool same = factors.empty();
      factors.clear();
      return same;
    }
    bool same = factors.size() == static_cast<size_t>(half);
    factors.resize(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i) {
      float v;
      std::memcpy(&v, elem_ptr(ff, i, 0, 0, 0), 4);
      if (!same || v != factors[static_cast<size_t>(i)]) same = false;
      factors[static_cast<size_t>(i)] = v;
    }
    return same;
  }
};

}  // namespace

void kernel_rope(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* pos = dst->src[1];
  const int64_t n_dims = dst->op_params[0];
  const bool neox = dst->op_params[1] == LOOM_ROPE_MODE_NEOX;
  float freq_base, freq_scale;
  std::memcpy(&freq_base, &dst->op_params[2], 4);
  std::memcpy(&freq_scale, &dst->op_params[3], 4);
  const int64_t half = n_dims / 2;
  const int64_t n = a->ne[0];
  int64_t r0, r1;
  common::split_range(nrows(dst), ith, nth, &r0, &r1);
  // F32 rows (the llama graph's Q and K) are read from a and written to
  // dst directly (in place too); other layouts, and rows that overlap
  // without being the same row, go through a widened row. BM_rope/16 (a
  // 16-token step's 192 rows of 64): 5.4 -> 3.2 us on a Zen 5.
  const auto f32_rows = [](const loom_tensor_t* t) { return t->type == LOOM_TYPE_F32 && t->nb[0] == sizeof(float); };
  const bool direct = f32_rows(a) && f32_rows(dst);
  thread_local std::vector<float> x;
  x.resize(static_cast<size_t>(n));
  thread_local RopeTable table;
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i1, i2, i3;
    unravel_row(dst, r, &i1, &i2, &i3);
    const auto* src_row = reinterpret_cast<const float*>(row_ptr(a, i1, i2, i3));
    auto* dst_row = reinterpret_cast<float*>(row_ptr(dst, i1, i2, i3));
    const bool apart = src_row + n <= dst_row || dst_row + n <= src_row;
    const float* in = x.data();
    float* out = x.data();
    if (direct && (apart || src_row == dst_row)) {
      in = src_row;
      out = dst_row;
      // the dims past the rotated pairs pass through (in place: already there)
      if (apart) std::memcpy(out + 2 * half, in + 2 * half, static_cast<size_t>(n - 2 * half) * sizeof(float));
    } else {
      load_row(a, i1, i2, i3, x.data());
    }
    int32_t p;
    std::memcpy(&p, elem_ptr(pos, i2, 0, 0, 0), 4);
    const double* c = table.get(p, n_dims, freq_base, freq_scale, dst->src[2]);
    const double* s = c + half;
    // Each pair is read before it is written (out may be in); a loop per
    // mode, so the compiler vectorizes it.
    if (neox) {
      for (int64_t i = 0; i < half; ++i) {
        const double x0 = in[i], x1 = in[i + half];
        out[i] = static_cast<float>(x0 * c[i] - x1 * s[i]);
        out[i + half] = static_cast<float>(x0 * s[i] + x1 * c[i]);
      }
    } else {
      for (int64_t i = 0; i < half; ++i) {
        const double x0 = in[2 * i], x1 = in[2 * i + 1];
        out[2 * i] = static_cast<float>(x0 * c[i] - x1 * s[i]);
        out[2 * i + 1] = static_cast<float>(x0 * s[i] + x1 * c[i]);
      }
    }
    if (out == x.data()) store_row(dst, i1, i2, i3, x.data());
  }
}

}  // namespace loom::cpu
