#include "kernels.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <vector>

#include "sim.h"

namespace loom::sim {
namespace {

// Element (i0..i3) of an F32 tensor through its strides.
float& at(const loom_tensor_t* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  char* p = data_ptr(t) + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
  return *reinterpret_cast<float*>(p);
}

float fparam(const loom_tensor_t* t, int i) {
  float v;
  std::memcpy(&v, &t->op_params[i], 4);
  return v;
}

template <typename F>
void each(const loom_tensor_t* t, F&& f) {
  for (int64_t i3 = 0; i3 < t->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < t->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < t->ne[1]; ++i1)
        for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) f(i0, i1, i2, i3);
}

// Rows stored contiguously (element stride 4 bytes): the fast paths below.
bool rows_contiguous(const loom_tensor_t* t) { return t->nb[0] == sizeof(float); }

const float* row_ptr(const loom_tensor_t* t, int64_t i1, int64_t i2, int64_t i3) {
  return reinterpret_cast<const float*>(data_ptr(t) + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]);
}
float* row_ptr_w(const loom_tensor_t* t, int64_t i1, int64_t i2, int64_t i3) {
  return reinterpret_cast<float*>(data_ptr(t) + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]);
}

// A hint that the row at p is read soon (scattered active rows: the
// hardware prefetcher cannot guess the next one), into L2 (locality 1: a
// core has more L2 than L1 misses in flight). GCC/Clang builtin, no ISA
// intrinsic; nothing elsewhere.
inline void prefetch_row(const float* p, int64_t n) {
#if defined(__GNUC__)
  const char* c = reinterpret_cast<const char*>(p);
  const int64_t bytes = std::min<int64_t>(n * static_cast<int64_t>(sizeof(float)), 4096);
  for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 0, 1);
#else
  (void)p;
  (void)n;
#endif
}

// ADD / MUL with b broadcast over a; rows of a, b and d contiguous and b
// a whole row per row of a (the common case) take the per-row loop the
// compiler vectorizes.
void binary(const loom_tensor_t* d, bool mul) {
  const loom_tensor_t* a = d->src[0];
  const loom_tensor_t* b = d->src[1];
  if (rows_contiguous(a) && rows_contiguous(b) && rows_contiguous(d) && b->ne[0] == a->ne[0]) {
    const int64_t n = d->ne[0];
    for (int64_t i3 = 0; i3 < d->ne[3]; ++i3)
      for (int64_t i2 = 0; i2 < d->ne[2]; ++i2)
        for (int64_t i1 = 0; i1 < d->ne[1]; ++i1) {
          const float* __restrict x = row_ptr(a, i1, i2, i3);
          const float* __restrict y = row_ptr(b, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
          float* __restrict z = row_ptr_w(d, i1, i2, i3);
          if (mul) {
            for (int64_t i = 0; i < n; ++i) z[i] = x[i] * y[i];
          } else {
            for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
          }
        }
    return;
  }
  each(d, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    float x = at(a, i0, i1, i2, i3);
    float y = at(b, i0 % b->ne[0], i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
    at(d, i0, i1, i2, i3) = mul ? x * y : x + y;
  });
}

// Dot of n contiguous floats: Lanes independent f32 partial sums (the
// compiler vectorizes them at -O2/-O3 on any x86-64, SSE2 up), added
// pairwise. A placement bench's simulated device should be no slower than
// it must; f32 sums as the cpu plugin's kernels use.
template <int Lanes>
float dot_lanes(const float* __restrict a, const float* __restrict b, int64_t n) {
  float s[Lanes] = {};
  int64_t k = 0;
  for (; k + Lanes <= n; k += Lanes) {
    for (int j = 0; j < Lanes; ++j) s[j] += a[k + j] * b[k + j];
  }
  for (; k < n; ++k) s[k % Lanes] += a[k] * b[k];
  for (int w = Lanes / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) s[j] += s[j + w];
  }
  return s[0];
}
// 16 sums for long rows, 8 for short ones (a predictor's rank-32 rows).
float dot(const float* a, const float* b, int64_t n) { return n >= 128 ? dot_lanes<16>(a, b, n) : dot_lanes<8>(a, b, n); }

void mul_mat(const loom_tensor_t* d) {
  const loom_tensor_t* a = d->src[0];
  const loom_tensor_t* b = d->src[1];
  const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  if (rows_contiguous(a) && rows_contiguous(b)) {
    // Weight rows outermost: each is read once for all columns of b.
    for (int64_t i3 = 0; i3 < d->ne[3]; ++i3)
      for (int64_t i2 = 0; i2 < d->ne[2]; ++i2)
        for (int64_t m = 0; m < d->ne[0]; ++m) {
          const float* w = row_ptr(a, m, i2 / r2, i3 / r3);
          for (int64_t n = 0; n < d->ne[1]; ++n) at(d, m, n, i2, i3) = dot(w, row_ptr(b, n, i2, i3), a->ne[0]);
        }
    return;
  }
  each(d, [&](int64_t m, int64_t n, int64_t i2, int64_t i3) {
    double s = 0;
    for (int64_t k = 0; k < a->ne[0]; ++k) {
      s += static_cast<double>(at(a, k, m, i2 / r2, i3 / r3)) * at(b, k, n, i2, i3);
    }
    at(d, m, n, i2, i3) = static_cast<float>(s);
  });
}

// The rows k < rows whose score S[k, n] > t, ascending.
void active_rows(const loom_tensor_t* sc, int64_t n, int64_t rows, float t, std::vector<int64_t>* out) {
  out->clear();
  if (rows_contiguous(sc)) {
    const float* s = row_ptr(sc, n, 0, 0);
    for (int64_t k = 0; k < rows; ++k) {
      if (s[k] > t) out->push_back(k);
    }
    return;
  }
  for (int64_t k = 0; k < rows; ++k) {
    if (at(sc, k, n, 0, 0) > t) out->push_back(k);
  }
}

// The ABI 1.3 sparse products (F32 only): rows: dst[m, n] = S[m, n] > t ?
// A[:, m] . B[:, n] : 0; cols: dst[m, n] = sum over k with S[k, n] > t of
// H[k, n] W[m, k]. Only the active rows (columns) are read: their indices
// are listed first, so the next rows can be prefetched while one is read.
void mul_mat_sparse(const loom_tensor_t* d) {
  const loom_tensor_t* a = d->src[0];
  const loom_tensor_t* b = d->src[1];
  const loom_tensor_t* sc = d->src[2];
  const float t = fparam(d, 0);
  const int64_t K = a->ne[0];
  constexpr size_t kAhead = 8;  // rows prefetched ahead (in flight)
  std::vector<int64_t> act;
  if (d->op == LOOM_OP_MUL_MAT_SPARSE_ROWS) {
    const bool fast = rows_contiguous(a) && rows_contiguous(b);
    for (int64_t n = 0; n < d->ne[1]; ++n) {
      for (int64_t m = 0; m < d->ne[0]; ++m) at(d, m, n, 0, 0) = 0.0f;
      active_rows(sc, n, d->ne[0], t, &act);
      if (fast) {
        for (size_t i = 0; i < std::min(kAhead, act.size()); ++i) prefetch_row(row_ptr(a, act[i], 0, 0), K);
      }
      for (size_t i = 0; i < act.size(); ++i) {
        const int64_t m = act[i];
        float s = 0.0f;
        if (fast) {
          if (i + kAhead < act.size()) prefetch_row(row_ptr(a, act[i + kAhead], 0, 0), K);
          s = dot(row_ptr(a, m, 0, 0), row_ptr(b, n, 0, 0), K);
        } else {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(at(a, k, m, 0, 0)) * at(b, k, n, 0, 0);
          s = static_cast<float>(acc);
        }
        at(d, m, n, 0, 0) = s;
      }
    }
    return;
  }
  const int64_t M = d->ne[0];
  std::vector<float> acc_v(static_cast<size_t>(M));
  float* __restrict acc = acc_v.data();
  for (int64_t n = 0; n < d->ne[1]; ++n) {
    std::fill(acc_v.begin(), acc_v.end(), 0.0f);
    active_rows(sc, n, a->ne[1], t, &act);
    if (rows_contiguous(a)) {
      // Four active rows per pass over the accumulator (AXPY, vectorized).
      for (size_t i = 0; i < std::min(kAhead, act.size()); ++i) prefetch_row(row_ptr(a, act[i], 0, 0), M);
      size_t i = 0;
      for (; i + 4 <= act.size(); i += 4) {
        for (size_t j = i + kAhead; j < std::min(i + kAhead + 4, act.size()); ++j) prefetch_row(row_ptr(a, act[j], 0, 0), M);
        const float* __restrict w0 = row_ptr(a, act[i], 0, 0);
        const float* __restrict w1 = row_ptr(a, act[i + 1], 0, 0);
        const float* __restrict w2 = row_ptr(a, act[i + 2], 0, 0);
        const float* __restrict w3 = row_ptr(a, act[i + 3], 0, 0);
        const float h0 = at(b, act[i], n, 0, 0), h1 = at(b, act[i + 1], n, 0, 0);
        const float h2 = at(b, act[i + 2], n, 0, 0), h3 = at(b, act[i + 3], n, 0, 0);
        for (int64_t m = 0; m < M; ++m) acc[m] += (h0 * w0[m] + h1 * w1[m]) + (h2 * w2[m] + h3 * w3[m]);
      }
      for (; i < act.size(); ++i) {
        const float* __restrict w = row_ptr(a, act[i], 0, 0);
        const float h = at(b, act[i], n, 0, 0);
        for (int64_t m = 0; m < M; ++m) acc[m] += h * w[m];
      }
    } else {
      for (const int64_t k : act) {
        const float h = at(b, k, n, 0, 0);
        for (int64_t m = 0; m < M; ++m) acc[m] += h * at(a, m, k, 0, 0);
      }
    }
    for (int64_t m = 0; m < M; ++m) at(d, m, n, 0, 0) = acc[m];
  }
}

// Active entries of a sparse product's score tensor: S[:rows, n] > t.
int64_t active(const loom_tensor_t* d) {
  const loom_tensor_t* sc = d->src[2];
  const float t = fparam(d, 0);
  int64_t n_active = 0;
  for (int64_t n = 0; n < sc->ne[1]; ++n)
    for (int64_t k = 0; k < sc->ne[0]; ++k) n_active += at(sc, k, n, 0, 0) > t;
  return n_active;
}

int64_t elements(const loom_tensor_t* t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

// All elements contiguous (no gaps between rows or planes).
bool dense_rows(const loom_tensor_t* t) {
  return t->nb[0] == sizeof(float) && t->nb[1] == t->nb[0] * t->ne[0] && t->nb[2] == t->nb[1] * t->ne[1] &&
         t->nb[3] == t->nb[2] * t->ne[2];
}

// Row-wise ops: f(row index tuple) over rows of d.
template <typename F>
void rows(const loom_tensor_t* d, F&& f) {
  for (int64_t i3 = 0; i3 < d->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < d->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < d->ne[1]; ++i1) f(i1, i2, i3);
}

void rms_norm(const loom_tensor_t* d) {
  const loom_tensor_t* a = d->src[0];
  const float eps = fparam(d, 0);
  rows(d, [&](int64_t i1, int64_t i2, int64_t i3) {
    double s = 0;
    for (int64_t i = 0; i < a->ne[0]; ++i)
      s += static_cast<double>(at(a, i, i1, i2, i3)) * at(a, i, i1, i2, i3);
    const float k = static_cast<float>(1.0 / std::sqrt(s / static_cast<double>(a->ne[0]) + eps));
    for (int64_t i = 0; i < a->ne[0]; ++i) at(d, i, i1, i2, i3) = at(a, i, i1, i2, i3) * k;
  });
}

void soft_max(const loom_tensor_t* d) {
  const loom_tensor_t* a = d->src[0];
  const loom_tensor_t* m = d->src[1];
  const float scale = fparam(d, 0);
  rows(d, [&](int64_t i1, int64_t i2, int64_t i3) {
    double mx = -INFINITY;
    for (int64_t i = 0; i < a->ne[0]; ++i) {
      float v = at(a, i, i1, i2, i3) * scale;
      if (m) v += at(m, i, i1, i2 % m->ne[2], i3 % m->ne[3]);
      at(d, i, i1, i2, i3) = v;
      if (v > mx) mx = v;
    }
    double sum = 0;
    for (int64_t i = 0; i < a->ne[0]; ++i) {
      double e = std::exp(at(d, i, i1, i2, i3) - mx);
      at(d, i, i1, i2, i3) = static_cast<float>(e);
      sum += e;
    }
    for (int64_t i = 0; i < a->ne[0]; ++i)
      at(d, i, i1, i2, i3) = static_cast<float>(at(d, i, i1, i2, i3) / sum);
  });
}

void get_rows(const loom_tensor_t* d) {
  const loom_tensor_t* a = d->src[0];
  const loom_tensor_t* idx = d->src[1];
  each(d, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const char* p = data_ptr(idx) + i1 * idx->nb[0] + i2 * idx->nb[1] + i3 * idx->nb[2];
    int32_t r;
    std::memcpy(&r, p, 4);
    at(d, i0, i1, i2, i3) = at(a, i0, r, i2, i3);
  });
}

// Element i (row-major logical order) of t.
float& logical(const loom_tensor_t* t, int64_t i) {
  int64_t i0 = i % t->ne[0];
  i /= t->ne[0];
  int64_t i1 = i % t->ne[1];
  i /= t->ne[1];
  int64_t i2 = i % t->ne[2];
  return at(t, i0, i1, i2, i / t->ne[2]);
}

bool all_f32(const loom_tensor_t* n, int first, int last) {
  if (n->type != LOOM_TYPE_F32) return false;
  for (int i = first; i <= last; ++i) {
    if (n->src[i] && n->src[i]->type != LOOM_TYPE_F32) return false;
  }
  return true;
}

}  // namespace

bool kernel_exists(const loom_tensor_t* n) {
  switch (n->op) {
    case LOOM_OP_NONE:
    case LOOM_OP_RESHAPE:
    case LOOM_OP_VIEW:
    case LOOM_OP_PERMUTE:
    case LOOM_OP_TRANSPOSE:
      return true;
    case LOOM_OP_ADD:
    case LOOM_OP_MUL:
    case LOOM_OP_MUL_MAT:
    case LOOM_OP_SOFT_MAX:
    case LOOM_OP_CPY:
      return all_f32(n, 0, 1);
    case LOOM_OP_SCALE:
    case LOOM_OP_RMS_NORM:
    case LOOM_OP_SILU:
    case LOOM_OP_RELU:
    case LOOM_OP_CONT:
      return all_f32(n, 0, 0);
    case LOOM_OP_MUL_MAT_SPARSE_ROWS:
    case LOOM_OP_MUL_MAT_SPARSE_COLS:
      return all_f32(n, 0, 2);
    case LOOM_OP_GET_ROWS:
      return all_f32(n, 0, 0) && n->src[1] && n->src[1]->type == LOOM_TYPE_I32;
    default:
      return false;
  }
}

std::string run_kernel(const loom_tensor_t* d) {
  const loom_tensor_t* a = d->src[0];
  switch (d->op) {
    case LOOM_OP_ADD:
      binary(d, false);
      break;
    case LOOM_OP_MUL:
      binary(d, true);
      break;
    case LOOM_OP_MUL_MAT:
      mul_mat(d);
      break;
    case LOOM_OP_RMS_NORM:
      rms_norm(d);
      break;
    case LOOM_OP_SOFT_MAX:
      soft_max(d);
      break;
    case LOOM_OP_GET_ROWS:
      get_rows(d);
      break;
    case LOOM_OP_SCALE: {
      const float s = fparam(d, 0), b = fparam(d, 1);
      each(d, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        at(d, i0, i1, i2, i3) = at(a, i0, i1, i2, i3) * s + b;
      });
      break;
    }
    case LOOM_OP_SILU:
      each(d, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        float x = at(a, i0, i1, i2, i3);
        at(d, i0, i1, i2, i3) = x / (1.0f + std::exp(-x));
      });
      break;
    case LOOM_OP_RELU:
      if (dense_rows(a) && dense_rows(d)) {
        const float* __restrict x = row_ptr(a, 0, 0, 0);
        float* __restrict y = row_ptr_w(d, 0, 0, 0);
        for (int64_t i = 0, n = elements(d); i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
      }
      each(d, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const float x = at(a, i0, i1, i2, i3);
        at(d, i0, i1, i2, i3) = x > 0.0f ? x : 0.0f;
      });
      break;
    case LOOM_OP_MUL_MAT_SPARSE_ROWS:
    case LOOM_OP_MUL_MAT_SPARSE_COLS:
      mul_mat_sparse(d);
      break;
    case LOOM_OP_CONT:
    case LOOM_OP_CPY: {
      const int64_t n = a->ne[0] * a->ne[1] * a->ne[2] * a->ne[3];
      for (int64_t i = 0; i < n; ++i) logical(d, i) = logical(a, i);
      break;
    }
    default:
      return std::string("no kernel for op ") + op_name(d->op);
  }
  return "";
}

size_t node_bytes(const loom_tensor_t* d, double active_share) {
  int64_t n = elements(d);  // written
  switch (d->op) {
    case LOOM_OP_MUL_MAT_SPARSE_ROWS:
    case LOOM_OP_MUL_MAT_SPARSE_COLS: {
      // Only the active rows of the weight (neuron-major for both: a row of
      // gate/up, a row of down_t), plus the input and the scores.
      const double rows = active_share >= 0 ? active_share * static_cast<double>(elements(d->src[2]))
                                            : static_cast<double>(active(d));
      n += static_cast<int64_t>(rows) * d->src[0]->ne[0] + elements(d->src[1]) + elements(d->src[2]);
      break;
    }
    case LOOM_OP_GET_ROWS:
      n += elements(d) + elements(d->src[1]);  // the rows gathered and the indices
      break;
    default:
      for (int k = 0; k < LOOM_MAX_SRC; ++k) {
        if (d->src[k]) n += elements(d->src[k]);
      }
  }
  return static_cast<size_t>(n) * sizeof(float);
}

}  // namespace loom::sim
