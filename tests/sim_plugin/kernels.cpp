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

void binary(const loom_tensor_t* d, bool mul) {
  const loom_tensor_t* a = d->src[0];
  const loom_tensor_t* b = d->src[1];
  each(d, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    float x = at(a, i0, i1, i2, i3);
    float y = at(b, i0 % b->ne[0], i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
    at(d, i0, i1, i2, i3) = mul ? x * y : x + y;
  });
}

// Rows stored contiguously (element stride 4 bytes): the fast paths below.
bool rows_contiguous(const loom_tensor_t* t) { return t->nb[0] == sizeof(float); }

const float* row_ptr(const loom_tensor_t* t, int64_t i1, int64_t i2, int64_t i3) {
  return reinterpret_cast<const float*>(data_ptr(t) + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]);
}

// Dot of n contiguous floats, accumulated in double (8 partial sums, so
// the compiler vectorizes it: a placement bench's simulated device should
// be no slower than it must).
double dot(const float* a, const float* b, int64_t n) {
  double s[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) s[j] += static_cast<double>(a[k + j]) * b[k + j];
  }
  for (; k < n; ++k) s[0] += static_cast<double>(a[k]) * b[k];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

void mul_mat(const loom_tensor_t* d) {
  const loom_tensor_t* a = d->src[0];
  const loom_tensor_t* b = d->src[1];
  const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  if (rows_contiguous(a) && rows_contiguous(b)) {
    each(d, [&](int64_t m, int64_t n, int64_t i2, int64_t i3) {
      at(d, m, n, i2, i3) =
          static_cast<float>(dot(row_ptr(a, m, i2 / r2, i3 / r3), row_ptr(b, n, i2, i3), a->ne[0]));
    });
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

// The ABI 1.3 sparse products (F32 only): rows: dst[m, n] = S[m, n] > t ?
// A[:, m] . B[:, n] : 0; cols: dst[m, n] = sum over k with S[k, n] > t of
// H[k, n] W[m, k]. Only the active rows (columns) are read.
void mul_mat_sparse(const loom_tensor_t* d) {
  const loom_tensor_t* a = d->src[0];
  const loom_tensor_t* b = d->src[1];
  const loom_tensor_t* sc = d->src[2];
  const float t = fparam(d, 0);
  if (d->op == LOOM_OP_MUL_MAT_SPARSE_ROWS) {
    const bool fast = rows_contiguous(a) && rows_contiguous(b);
    each(d, [&](int64_t m, int64_t n, int64_t, int64_t) {
      double s = 0;
      if (at(sc, m, n, 0, 0) > t) {
        if (fast) {
          s = dot(row_ptr(a, m, 0, 0), row_ptr(b, n, 0, 0), a->ne[0]);
        } else {
          for (int64_t k = 0; k < a->ne[0]; ++k) s += static_cast<double>(at(a, k, m, 0, 0)) * at(b, k, n, 0, 0);
        }
      }
      at(d, m, n, 0, 0) = static_cast<float>(s);
    });
    return;
  }
  std::vector<double> acc(static_cast<size_t>(d->ne[0]));
  for (int64_t n = 0; n < d->ne[1]; ++n) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t k = 0; k < a->ne[1]; ++k) {
      if (!(at(sc, k, n, 0, 0) > t)) continue;
      const double h = at(b, k, n, 0, 0);
      if (rows_contiguous(a)) {
        const float* w = row_ptr(a, k, 0, 0);
        for (int64_t m = 0; m < d->ne[0]; ++m) acc[static_cast<size_t>(m)] += h * w[m];
      } else {
        for (int64_t m = 0; m < d->ne[0]; ++m) acc[static_cast<size_t>(m)] += h * at(a, m, k, 0, 0);
      }
    }
    for (int64_t m = 0; m < d->ne[0]; ++m) at(d, m, n, 0, 0) = static_cast<float>(acc[static_cast<size_t>(m)]);
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
