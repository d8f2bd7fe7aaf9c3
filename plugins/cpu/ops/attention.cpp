// ATTENTION: dst[:, h, t] = sum_{j < visible[t]} softmax_j(scale * q . k_j) v_j
// with q = Q[:, h, t], k_j = K[:, j, g], v_j = V[:, j, g], g = h / (H / Hkv).
//
// One pass over the visible KV rows with an online softmax: keys are taken in
// blocks of kBlock; a block's scores are computed first, then the running
// max m moves to the block's max (rescaling the running sum l and the output
// accumulator by exp(m_old - m_new)) and the block's values are added with
// weights exp(s - m). Work is proportional to visible[t], not to n_kv.
// Threads split the (h, t) pairs; each pair is computed by one thread in a
// fixed order, so results do not depend on the thread count.
//
// Precision: dots, exp, the running sum and the accumulator are f32 (the
// dots in vector lanes); F16/BF16 K/V rows are widened exactly to f32 first.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "ops/simd.h"

namespace loom::cpu {
namespace {

constexpr int64_t kBlock = 32;  // keys scored before the accumulator is touched

// Row (i1, i2) of a float tensor as contiguous f32: the row itself when it
// already is, else widened into scratch.
inline const float* f32_row(const loom_tensor_t* t, int64_t i1, int64_t i2, float* scratch) {
  if (t->type == LOOM_TYPE_F32 && t->nb[0] == sizeof(float)) {
    return reinterpret_cast<const float*>(row_ptr(t, i1, i2, 0));
  }
  load_row(t, i1, i2, 0, scratch);
  return scratch;
}

// visible[t] for every query; a value outside [0, n_kv] fails the node.
std::vector<int64_t> load_visible(const loom_tensor_t* vis, int64_t n_kv) {
  std::vector<int64_t> out(static_cast<size_t>(vis->ne[0]));
  for (int64_t t = 0; t < vis->ne[0]; ++t) {
    const int64_t v = load_index(vis, t, 0, 0);
    if (v < 0 || v > n_kv) {
      throw KernelError("visible[" + std::to_string(t) + "] = " + std::to_string(v) + " outside [0, " +
                        std::to_string(n_kv) + "] (n_kv " + std::to_string(n_kv) + ")");
    }
    out[static_cast<size_t>(t)] = v;
  }
  return out;
}

// Per-thread buffers for one (h, t) pair.
struct Scratch {
  std::vector<float> q, k, v, acc;
  float s[kBlock];
  Scratch(int64_t d, int64_t dv)
      : q(static_cast<size_t>(d)), k(static_cast<size_t>(d)), v(static_cast<size_t>(dv)), acc(static_cast<size_t>(dv)) {}
};

// out[0, Dv) = attention of query (h, t) over KV rows [0, n) of head g.
void attend_one(const loom_tensor_t* dst, int64_t h, int64_t t, int64_t g, int64_t n, float scale, Scratch& sc,
                float* out) {
  const loom_tensor_t* q = dst->src[0];
  const loom_tensor_t* k = dst->src[1];
  const loom_tensor_t* v = dst->src[2];
  const int64_t d = q->ne[0];
  const int64_t dv = v->ne[0];
  std::fill(sc.acc.begin(), sc.acc.end(), 0.0f);
  if (n == 0) {
    std::copy(sc.acc.begin(), sc.acc.end(), out);
    return;
  }
  load_row(q, h, t, 0, sc.q.data());
  float m = -std::numeric_limits<float>::infinity();
  float l = 0.0f;
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t nb = std::min(kBlock, n - j0);
    float bm = -std::numeric_limits<float>::infinity();
    for (int64_t jj = 0; jj < nb; ++jj) {
      sc.s[jj] = scale * simd_dot(sc.q.data(), f32_row(k, j0 + jj, g, sc.k.data()), d);
      bm = std::max(bm, sc.s[jj]);
    }
    if (bm > m) {
      const float c = std::exp(m - bm);  // 0 on the first block
      l *= c;
      simd_scale(sc.acc.data(), c, dv);
      m = bm;
    }
    for (int64_t jj = 0; jj < nb; ++jj) {
      const float p = std::exp(sc.s[jj] - m);
      l += p;
      simd_axpy(sc.acc.data(), p, f32_row(v, j0 + jj, g, sc.v.data()), dv);
    }
  }
  for (int64_t i = 0; i < dv; ++i) out[i] = sc.acc[static_cast<size_t>(i)] / l;
}

}  // namespace

void kernel_attention(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* q = dst->src[0];
  const loom_tensor_t* k = dst->src[1];
  float scale;
  std::memcpy(&scale, &dst->op_params[0], sizeof scale);
  const int64_t n_head = q->ne[1];
  const int64_t group = n_head / k->ne[2];
  const std::vector<int64_t> visible = load_visible(dst->src[3], k->ne[1]);
  int64_t p0, p1;
  common::split_range(n_head * q->ne[2], ith, nth, &p0, &p1);
  if (p0 >= p1) return;
  Scratch sc(q->ne[0], dst->ne[0]);
  std::vector<float> out(static_cast<size_t>(dst->ne[0]));
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t h = p % n_head;
    const int64_t t = p / n_head;
    attend_one(dst, h, t, h / group, visible[static_cast<size_t>(t)], scale, sc, out.data());
    store_row(dst, h, t, 0, out.data());
  }
}

}  // namespace loom::cpu
