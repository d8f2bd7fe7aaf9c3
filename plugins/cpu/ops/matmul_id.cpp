// MUL_MAT_ID (ABI 1.5): dst[:, u, t] = A[:, :, ids[u, t]]^T B[:, u or 0, t].
// The (slot, token) pairs are grouped by expert; each chosen expert runs as
// one MUL_MAT (run_mul_mat: every weight type's fast path, the pool) over
// its tokens' columns of B gathered into a dense block, and the results are
// scattered back. Experts no token picked are never read; a decode step
// reads exactly its U experts. The ids are checked before any work: one
// outside [0, E) fails the node naming the token, slot and value.
#include <cstring>
#include <string>
#include <vector>

#include "ops/ops.h"

namespace loom::cpu {

namespace {

struct Pick {
  int32_t u, t;
};

const float* column(const loom_tensor_t* b, int64_t col, int64_t t, std::vector<float>& tmp) {
  const char* p = static_cast<const char*>(b->data) + col * static_cast<int64_t>(b->nb[1]) +
                  t * static_cast<int64_t>(b->nb[2]);
  if (b->nb[0] == sizeof(float)) return reinterpret_cast<const float*>(p);
  tmp.resize(static_cast<size_t>(b->ne[0]));
  for (int64_t k = 0; k < b->ne[0]; ++k) std::memcpy(&tmp[static_cast<size_t>(k)], p + k * b->nb[0], 4);
  return tmp.data();
}

// A dense F32 [ne0, ne1] at data, with t's other fields (a leaf).
loom_tensor_t dense_f32(const loom_tensor_t& t, float* data, int64_t ne0, int64_t ne1) {
  loom_tensor_t d = t;
  d.op = LOOM_OP_NONE;
  d.ne[0] = ne0;
  d.ne[1] = ne1;
  d.ne[2] = d.ne[3] = 1;
  d.nb[0] = sizeof(float);
  d.nb[1] = static_cast<size_t>(ne0) * sizeof(float);
  d.nb[2] = d.nb[3] = d.nb[1] * static_cast<size_t>(ne1);
  d.data = data;
  d.view_src = nullptr;
  d.view_offset = 0;
  d.buffer = nullptr;
  d.extra = nullptr;
  for (loom_tensor_t*& s : d.src) s = nullptr;
  return d;
}

}  // namespace

void run_mul_mat_id(const loom_tensor_t* dst, Exec& ex) {
  const loom_tensor_t* a = dst->src[0];
  const loom_tensor_t* b = dst->src[1];
  const loom_tensor_t* ids = dst->src[2];
  const int64_t k = a->ne[0], m = a->ne[1], n_expert = a->ne[2];
  const int64_t n_used = ids->ne[0], n_tok = ids->ne[1];
  const bool shared_b = b->ne[1] == 1;

  std::vector<std::vector<Pick>> by_expert(static_cast<size_t>(n_expert));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t u = 0; u < n_used; ++u) {
      const int64_t e = load_index(ids, u, t, 0);
      if (e < 0 || e >= n_expert) {
        throw KernelError("id " + std::to_string(e) + " of token " + std::to_string(t) + ", slot " +
                          std::to_string(u) + " outside [0, " + std::to_string(n_expert) + ")");
      }
      by_expert[static_cast<size_t>(e)].push_back({static_cast<int32_t>(u), static_cast<int32_t>(t)});
    }
  }

  // Gathered columns and results: per call (the matmul paths use the
  // node's scratch themselves).
  std::vector<float> bg, out, tmp;
  for (int64_t e = 0; e < n_expert; ++e) {
    const std::vector<Pick>& picks = by_expert[static_cast<size_t>(e)];
    if (picks.empty()) continue;
    const int64_t n = static_cast<int64_t>(picks.size());
    bg.resize(static_cast<size_t>(k * n));
    out.resize(static_cast<size_t>(m * n));
    for (int64_t j = 0; j < n; ++j) {
      const Pick& p = picks[static_cast<size_t>(j)];
      std::memcpy(&bg[static_cast<size_t>(j * k)], column(b, shared_b ? 0 : p.u, p.t, tmp),
                  static_cast<size_t>(k) * sizeof(float));
    }
    // Expert e's matrix as a 2-D A; B and the result dense.
    loom_tensor_t ae = *a;
    ae.ne[2] = 1;
    ae.data = static_cast<char*>(a->data) + e * static_cast<int64_t>(a->nb[2]);
    ae.view_src = nullptr;
    ae.view_offset = 0;
    loom_tensor_t be = dense_f32(*b, bg.data(), k, n);
    loom_tensor_t de = dense_f32(*dst, out.data(), m, n);
    de.op = LOOM_OP_MUL_MAT;
    de.src[0] = &ae;
    de.src[1] = &be;
    run_mul_mat(&de, ex);
    for (int64_t j = 0; j < n; ++j) {
      const Pick& p = picks[static_cast<size_t>(j)];
      char* row = elem_ptr(dst, 0, p.u, p.t, 0);
      const float* src = &out[static_cast<size_t>(j * m)];
      if (dst->nb[0] == sizeof(float)) {
        std::memcpy(row, src, static_cast<size_t>(m) * sizeof(float));
      } else {
        for (int64_t i = 0; i < m; ++i) std::memcpy(row + i * dst->nb[0], &src[i], sizeof(float));
      }
    }
  }
}

}  // namespace loom::cpu
