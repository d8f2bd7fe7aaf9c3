// ATTENTION: dst[:, h, t] = sum_{j < visible[t]} softmax_j(scale * q . k_j) v_j
// (the ranges form: j over [first[t], end[t]); the same kernel over K and V
// from row first[t] on)
// with q = Q[:, h, t], k_j = K[:, j, g], v_j = V[:, j, g], g = h / (H / Hkv).
// Work is proportional to visible[t], not to n_kv. The kernels over blocks
// of rows are attention_kernels.h; this file cuts a node into them.
//
// When each kv head's rows are contiguous (the llama graph's head-major
// cache), two passes per kv head: every score (K read front to back), the
// softmax with the exact max, then the weighted V rows (V read front to
// back). Otherwise (a row holds every head) one pass with an online
// softmax: keys in blocks of kBlock; a block's scores first, then the
// running max m moves to the block's max (rescaling the running sum l and
// the accumulator by exp(m_old - m_new)) and the block's values are added
// with weights exp(s - m).
//
// Threads: a node of at most kSplitMaxQueries queries (decode) whose rows
// pass one chunk cuts each kv head's rows into fixed chunks, threads take (kv head, chunk) units
// and the partial softmaxes are combined in chunk order (the split path,
// below); larger nodes split the (h, t) pairs in equal shares of work
// (work_share). Either way each output is computed in an order fixed by
// the node alone, so results do not depend on the thread count.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "ops/attention_kernels.h"
#include "ops/ops.h"
#include "ops/simd.h"

namespace loom::cpu {
namespace {

// Queries of a head taken together (a prefill's consecutive tokens): each
// block of K and V rows comes from L2 once for all of them, then from L1.
constexpr int64_t kTile = 4;

// Each query's KV rows [first[t], first[t] + len[t]): from visible [T]
// (first 0) or, the ranges form, [2, T] pairs; a value outside [0, n_kv]
// or first > end fails the node.
struct QueryRows {
  std::vector<int64_t> first, len;
};
QueryRows load_rows(const loom_tensor_t* node, int64_t n_kv) {
  const loom_tensor_t* vis = node->src[3];
  const bool ranges = node->op_params[1] == LOOM_ATTENTION_RANGES;
  const int64_t n_q = ranges ? vis->ne[1] : vis->ne[0];
  QueryRows r;
  r.first.resize(static_cast<size_t>(n_q));
  r.len.resize(static_cast<size_t>(n_q));
  for (int64_t t = 0; t < n_q; ++t) {
    const int64_t a = ranges ? load_index(vis, 0, t, 0) : 0;
    const int64_t b = ranges ? load_index(vis, 1, t, 0) : load_index(vis, t, 0, 0);
    if (a < 0 || a > n_kv || b < a || b > n_kv) {
      const std::string what = ranges ? "rows [" + std::to_string(a) + ", " + std::to_string(b) + ") of query " +
                                            std::to_string(t)
                                      : "visible[" + std::to_string(t) + "] = " + std::to_string(b);
      throw KernelError(what + " outside [0, " + std::to_string(n_kv) + "] (n_kv " + std::to_string(n_kv) + ")");
    }
    r.first[static_cast<size_t>(t)] = a;
    r.len[static_cast<size_t>(t)] = b - a;
  }
  return r;
}

// Rows [first, n_kv) of K or V as a tensor of their own (row 0 = row first).
loom_tensor_t rows_from(const loom_tensor_t* t, int64_t first) {
  loom_tensor_t s = *t;
  s.data = static_cast<char*>(t->data) + first * static_cast<int64_t>(t->nb[1]);
  s.ne[1] -= first;
  return s;
}


// Queries (h, t) for h in [h0, h1) and t in [t0, t0 + nt), query t over
// its visible KV rows [0, ns[t - t0]) of k and v (the node's K and V, or
// their rows from a range's first on), in the order that reads the cache
// front to back. The llama graph's cache keeps each kv head's rows
// contiguous (K[:, j, g] at g * n_ctx + j): per kv head, two_pass reads its
// K rows, then its V rows, each one sequential stream the hardware
// prefetchers run ahead of (in a row-major order, a head's rows a whole
// cache row apart, decode attention waited on memory at a quarter of its
// bandwidth; alternating K and V blocks with the online softmax was 7%
// slower than the two streams); a head's queries side by side, so that
// two_pass pairs two queries of one head (a prefill's consecutive t) or
// two heads of one kv head. When a row's heads lie side by side instead
// (K's head stride below its row stride), blocks of rows outer and queries
// inner, with the online softmax, read each block of rows once.
// KT / VT: how K / V rows are read (float or F16 bits, reads_f16).
template <typename KT, typename VT>
void attend_heads(const loom_tensor_t* dst, const loom_tensor_t* k, const loom_tensor_t* v, int64_t t0, int64_t nt,
                  int64_t h0, int64_t h1, const int64_t* ns, float scale, int64_t group) {
  const loom_tensor_t* q = dst->src[0];
  const int64_t d = q->ne[0];
  const int64_t dv = v->ne[0];
  const int64_t nq = (h1 - h0) * nt;  // query i: head h0 + i / nt, t0 + i % nt
  thread_local std::vector<float> buf;
  // Per query: q (d), acc (dv); then kBlock K and kBlock V rows of scratch
  // (used when the cache rows need widening).
  buf.resize(static_cast<size_t>(nq * (d + dv) + kBlock * (d + dv)));  // each acc zeroed below
  const BlockStep<KT, VT> step{k, v, d, dv, scale, buf.data() + nq * (d + dv), buf.data() + nq * (d + dv) + kBlock * d};
  thread_local std::vector<HeadState> st;
  st.assign(static_cast<size_t>(nq), HeadState{});
  thread_local std::vector<int64_t> qn;  // rows of query i
  qn.resize(static_cast<size_t>(nq));
  int64_t n_max = 0;
  for (int64_t i = 0; i < nq; ++i) {
    float* qi = buf.data() + i * (d + dv);
    load_row(q, h0 + i / nt, t0 + i % nt, 0, qi);
    st[static_cast<size_t>(i)].q = qi;
    st[static_cast<size_t>(i)].acc = qi + d;
    std::fill(qi + d, qi + d + dv, 0.0f);
    qn[static_cast<size_t>(i)] = ns[i % nt];
    n_max = std::max(n_max, ns[i % nt]);
  }
  const bool rows_of_a_head_together = k->ne[2] == 1 || k->nb[2] > k->nb[1];
  if (rows_of_a_head_together) {
    thread_local std::vector<float> scores;
    scores.resize(static_cast<size_t>(std::min(group, h1 - h0) * nt * n_max) + 1);
    for (int64_t g = h0 / group; g <= (h1 - 1) / group; ++g) {
      const int64_t i0 = (std::max(h0, g * group) - h0) * nt, i1 = (std::min(h1, (g + 1) * group) - h0) * nt;
      // The next kv head's K rows are read next: as many as this head's.
      const int64_t n = *std::max_element(qn.begin() + i0, qn.begin() + i1);
      const Ahead next = g < (h1 - 1) / group ? Ahead(k, g + 1, n) : Ahead();
      two_pass(step, st.data() + i0, qn.data() + i0, i1 - i0, g, next, scores.data());
    }
  } else {
    for (int64_t j0 = 0; j0 < n_max; j0 += kBlock) {
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t n = qn[static_cast<size_t>(i)];
        if (j0 < n) step(st[static_cast<size_t>(i)], (h0 + i / nt) / group, j0, std::min(kBlock, n - j0));
      }
    }
  }
  thread_local std::vector<float> out;
  out.resize(static_cast<size_t>(dv));
  for (int64_t i = 0; i < nq; ++i) {
    const HeadState& hs = st[static_cast<size_t>(i)];
    if (qn[static_cast<size_t>(i)] == 0) {
      std::fill(out.begin(), out.end(), 0.0f);
    } else {
      simd_div(out.data(), hs.acc, hs.l, dv);
    }
    store_row(dst, h0 + i / nt, t0 + i % nt, 0, out.data());
  }
}

using AttendFn = void (*)(const loom_tensor_t*, const loom_tensor_t*, const loom_tensor_t*, int64_t, int64_t, int64_t,
                          int64_t, const int64_t*, float, int64_t);

// How a node's K or V rows are read: 0 as f32 (in place or widened), 1 as
// F16 bits (reads_f16), 2 as Q8_0 blocks (reads_q8); builds without F16C
// widen everything.
int read_kind(const loom_tensor_t* t) {
#if defined(__AVX2__) && defined(__F16C__)
  if (reads_f16(t)) return 1;
  if (reads_q8(t)) return 2;
#else
  (void)t;
#endif
  return 0;
}

// Fn<KT, VT> for the read kinds of K and V (read_kind), picked by Pick's
// template at<KT, VT>().
template <typename Pick, typename KT>
auto pick_v(int v) {
#if defined(__AVX2__) && defined(__F16C__)
  if (v == 1) return Pick::template at<KT, uint16_t>();
  if (v == 2) return Pick::template at<KT, Q8Row>();
#endif
  (void)v;
  return Pick::template at<KT, float>();
}
template <typename Pick>
auto pick_kv(const loom_tensor_t* k, const loom_tensor_t* v) {
#if defined(__AVX2__) && defined(__F16C__)
  if (read_kind(k) == 1) return pick_v<Pick, uint16_t>(read_kind(v));
  if (read_kind(k) == 2) return pick_v<Pick, Q8Row>(read_kind(v));
#else
  (void)k;
#endif
  return pick_v<Pick, float>(read_kind(v));
}

// attend_heads for this node's K and V layouts.
struct PickAttend {
  template <typename KT, typename VT>
  static AttendFn at() {
    return attend_heads<KT, VT>;
  }
};
AttendFn attend_for(const loom_tensor_t* k, const loom_tensor_t* v) { return pick_kv<PickAttend>(k, v); }

// Pairs [p0, p1) (p = t * n_head + h) of slot ith of nth: equal shares of
// the work, a pair's being its visible rows plus one (its fixed cost), not
// equal numbers of pairs: in a causal prefill the last queries see the
// most rows, and halving the pairs left one of 2 threads 3/4 of the work.
void work_share(const std::vector<int64_t>& visible, int64_t n_head, int ith, int nth, int64_t* p0, int64_t* p1) {
  int64_t total = 0;
  for (int64_t v : visible) total += (v + 1) * n_head;
  // The first pair at or past share i's start.
  auto boundary = [&](int i) -> int64_t {
    const auto n_q = static_cast<int64_t>(visible.size());
    if (i >= nth) return n_q * n_head;
    const int64_t target = total / nth * i + total % nth * i / nth;  // total * i / nth without overflow
    int64_t acc = 0;
    for (int64_t t = 0; t < n_q; ++t) {
      const int64_t w = visible[static_cast<size_t>(t)] + 1;
      if (acc + w * n_head > target) return t * n_head + (target - acc + w - 1) / w;
      acc += w * n_head;
    }
    return n_q * n_head;
  };
  *p0 = boundary(ith);
  *p1 = boundary(ith + 1);
}

// Threads over (head, query) pairs (work_share): prefill, and nodes whose
// pairs are many.
void attend_pairs(const loom_tensor_t* dst, int ith, int nth) {
  const loom_tensor_t* q = dst->src[0];
  const loom_tensor_t* k = dst->src[1];
  const loom_tensor_t* v = dst->src[2];
  float scale;
  std::memcpy(&scale, &dst->op_params[0], sizeof scale);
  const int64_t n_head = q->ne[1];
  const int64_t group = n_head / k->ne[2];
  const QueryRows rows = load_rows(dst, k->ne[1]);
  const AttendFn attend = attend_for(k, v);
  int64_t p0, p1;
  work_share(rows.len, n_head, ith, nth, &p0, &p1);
  // Pairs p = t * n_head + h: one run of heads per query t, or up to kTile
  // queries' every head when they all lie in this share and start at the
  // same row (two_pass pairs them).
  const int64_t n_tok = q->ne[2];
  for (int64_t p = p0; p < p1;) {
    const int64_t t = p / n_head;
    const int64_t h0 = p % n_head;
    const int64_t h1 = std::min(n_head, h0 + (p1 - p));
    const int64_t first = rows.first[static_cast<size_t>(t)];
    int64_t nt = 1;
    if (h0 == 0 && h1 == n_head) {
      while (nt < kTile && t + nt < n_tok && p + (nt + 1) * n_head <= p1 &&
             rows.first[static_cast<size_t>(t + nt)] == first) {
        ++nt;
      }
    }
    if (first == 0) {
      attend(dst, k, v, t, nt, h0, h1, rows.len.data() + t, scale, group);
    } else {
      const loom_tensor_t ks = rows_from(k, first), vs = rows_from(v, first);
      attend(dst, &ks, &vs, t, nt, h0, h1, rows.len.data() + t, scale, group);
    }
    p += nt * (h1 - h0);
  }
}


// ------------------------------------------------ split over the KV rows
//
// Decode has one query per sequence: its (head, query) pairs are as few as
// the heads, each pair one long stream, so threads over pairs leave a slow
// or late thread holding whole heads, and a kv head shared by query heads
// (GQA) that fall into two shares is read twice. The split path cuts each
// kv head's rows into chunks of kChunkRows and hands (kv head, chunk) units
// to the threads (Exec::claim_chunk); a unit takes every query head of its
// kv head (and every query of its run) over its rows, so each K and V row
// is read and converted once, and leaves a partial (max m_c, sum l_c,
// accumulator acc_c = sum_j e^(s_j - m_c) v_j: two_pass over the chunk).
// The thread that finishes a kv head's last chunk combines its partials in
// chunk order: m = max m_c, out = sum_c e^(m_c - m) acc_c / sum_c e^(m_c -
// m) l_c. Chunks are cut at fixed rows, never by the thread count, and the
// combine order is fixed, so results do not depend on the threads. A query
// whose rows fit one chunk gets exactly the pairs path's numbers.

// Rows per chunk: 256 F16 rows of 64 are 32 KiB of K and 32 KiB of V. A
// 768-dim decode step after 1,024 tokens is 12 heads x 4 chunks: 24 units a
// thread on 2 threads, so one that starts late gives its last ones away.
constexpr int64_t kChunkRows = 256;

// Nodes with at most this many queries, one of them over more than
// kChunkRows rows, take the split path (decode, a few tokens of one
// sequence, one token each of a few sequences). Fixed, not
// "pairs below some multiple of the threads": which path a node takes
// changes its bits, and those must not follow the thread count.
constexpr int64_t kSplitMaxQueries = 4;

// The units of a node: runs of consecutive queries that start at the same
// row (the prefix form: one run), each run's kv heads cut into chunks.
struct SplitPlan {
  struct Run {
    int64_t t0, nt;    // queries [t0, t0 + nt)
    int64_t first;     // their first row
    int64_t n_max;     // the most rows any of them reads
    int64_t chunks;    // ceil(n_max / kChunkRows), at least 1
    int64_t unit0;     // its first unit: unit0 + g * chunks + c
  };
  std::vector<Run> runs;
  int64_t units = 0;
  int64_t max_chunks = 0;
};

SplitPlan plan_split(const QueryRows& rows, int64_t n_head_kv) {
  SplitPlan p;
  const auto n_q = static_cast<int64_t>(rows.len.size());
  for (int64_t t = 0; t < n_q;) {
    SplitPlan::Run r{t, 0, rows.first[static_cast<size_t>(t)], 0, 0, p.units};
    for (; t < n_q && rows.first[static_cast<size_t>(t)] == r.first; ++t, ++r.nt) {
      r.n_max = std::max(r.n_max, rows.len[static_cast<size_t>(t)]);
    }
    r.chunks = std::max<int64_t>(1, (r.n_max + kChunkRows - 1) / kChunkRows);
    p.units += n_head_kv * r.chunks;
    p.max_chunks = std::max(p.max_chunks, r.chunks);
    p.runs.push_back(r);
  }
  return p;
}

// One kv head's chunks done so far, on its own line (threads finish them).
struct alignas(64) ChunkCount {
  std::atomic<int64_t> done{0};
};

// What every unit of one node reads and writes. Partial (h, t, c):
// `partial + ((t * n_head + h) * max_chunks + c) * stride`, dv floats of
// acc_c, then m_c and l_c.
struct SplitNode {
  const loom_tensor_t* dst;
  const loom_tensor_t* k;
  const loom_tensor_t* v;
  const QueryRows* rows;
  const SplitPlan* plan;
  float scale;
  int64_t n_head, n_head_kv, group, d, dv, stride;
  float* partial;
  ChunkCount* counts;  // runs x n_head_kv

  float* slot(int64_t h, int64_t t, int64_t c) const {
    return partial + ((t * n_head + h) * plan->max_chunks + c) * stride;
  }
};

// dst[:, h, t] from its partials, in chunk order. One chunk: acc / l, as
// the pairs path divides (e^0 = 1 would give the same bits, without the
// passes).
void combine(const SplitNode& sn, int64_t h, int64_t t) {
  const int64_t len = sn.rows->len[static_cast<size_t>(t)];
  const int64_t chunks = (len + kChunkRows - 1) / kChunkRows;  // those holding rows
  const int64_t dv = sn.dv;
  thread_local std::vector<float> out;
  out.assign(static_cast<size_t>(dv), 0.0f);
  if (chunks == 1) {
    const float* p = sn.slot(h, t, 0);
    simd_div(out.data(), p, p[dv + 1], dv);
  } else if (chunks > 1) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < chunks; ++c) m = std::max(m, sn.slot(h, t, c)[dv]);
    float l = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) {
      const float* p = sn.slot(h, t, c);
      const float w = std::exp(p[dv] - m);
      l += w * p[dv + 1];
      simd_axpy(out.data(), w, p, dv);
    }
    simd_div(out.data(), out.data(), l, dv);
  }
  store_row(sn.dst, h, t, 0, out.data());
}

// Unit u: chunk c of kv head g for run r's queries, then, if it was the
// head's last chunk to finish, the combine of the head's queries.
template <typename KT, typename VT>
void split_unit(const SplitNode& sn, int64_t u) {
  const SplitPlan& plan = *sn.plan;
  size_t ri = 0;
  while (ri + 1 < plan.runs.size() && plan.runs[ri + 1].unit0 <= u) ++ri;
  const SplitPlan::Run& run = plan.runs[ri];
  const int64_t g = (u - run.unit0) / run.chunks, c = (u - run.unit0) % run.chunks;
  const int64_t h0 = g * sn.group, nq = sn.group * run.nt;  // query i: head h0 + i / nt, t0 + i % nt
  const int64_t row0 = run.first + c * kChunkRows;
  const loom_tensor_t ks = rows_from(sn.k, row0), vs = rows_from(sn.v, row0);
  const int64_t d = sn.d, dv = sn.dv;
  thread_local std::vector<float> buf;  // per query q (d); then kBlock K and V rows of scratch
  buf.resize(static_cast<size_t>(nq * d + kBlock * (d + dv)));
  const BlockStep<KT, VT> step{&ks, &vs, d, dv, sn.scale, buf.data() + nq * d, buf.data() + nq * d + kBlock * d};
  thread_local std::vector<HeadState> st;
  st.assign(static_cast<size_t>(nq), HeadState{});
  thread_local std::vector<int64_t> ns;
  ns.resize(static_cast<size_t>(nq));
  int64_t n = 0;
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t h = h0 + i / run.nt, t = run.t0 + i % run.nt;
    float* qi = buf.data() + i * d;
    load_row(sn.dst->src[0], h, t, 0, qi);
    HeadState& s = st[static_cast<size_t>(i)];
    s.q = qi;
    s.acc = sn.slot(h, t, c);
    std::fill(s.acc, s.acc + dv, 0.0f);
    ns[static_cast<size_t>(i)] = std::clamp<int64_t>(sn.rows->len[static_cast<size_t>(t)] - c * kChunkRows, 0,
                                                     kChunkRows);
    n = std::max(n, ns[static_cast<size_t>(i)]);
  }
  if (n > 0) {
    // The K rows this thread most likely reads next (claim_chunk hands a
    // thread its own share in order): the next chunk, else the next head's
    // first.
    loom_tensor_t next_k{};
    Ahead next;
    if (c + 1 < run.chunks) {
      next_k = rows_from(sn.k, row0 + kChunkRows);
      next = Ahead(&next_k, g, std::min(kChunkRows, run.n_max - (c + 1) * kChunkRows));
    } else if (g + 1 < sn.n_head_kv) {
      next_k = rows_from(sn.k, run.first);
      next = Ahead(&next_k, g + 1, std::min(kChunkRows, run.n_max));
    }
    thread_local std::vector<float> scores;
    scores.resize(static_cast<size_t>(nq * kChunkRows));
    two_pass(step, st.data(), ns.data(), nq, g, next, scores.data());
  }
  for (int64_t i = 0; i < nq; ++i) {
    const HeadState& s = st[static_cast<size_t>(i)];
    s.acc[dv] = s.m;
    s.acc[dv + 1] = s.l;
  }
  // acq_rel: the last finisher sees every other chunk's partials.
  ChunkCount& count = sn.counts[static_cast<int64_t>(ri) * sn.n_head_kv + g];
  if (count.done.fetch_add(1, std::memory_order_acq_rel) + 1 < run.chunks) return;
  for (int64_t h = h0; h < h0 + sn.group; ++h) {
    for (int64_t t = run.t0; t < run.t0 + run.nt; ++t) combine(sn, h, t);
  }
}

using UnitFn = void (*)(const SplitNode&, int64_t);

// split_unit for this node's K and V layouts.
struct PickUnit {
  template <typename KT, typename VT>
  static UnitFn at() {
    return split_unit<KT, VT>;
  }
};
UnitFn unit_for(const loom_tensor_t* k, const loom_tensor_t* v) { return pick_kv<PickUnit>(k, v); }

}  // namespace

int64_t attention_work(const loom_tensor_t* node) {
  // Multiply-adds over the visible rows (the data is there at run time).
  const loom_tensor_t* vis = node->src[3];
  const bool ranges = node->op_params[1] == LOOM_ATTENTION_RANGES;
  const int64_t n_q = ranges ? vis->ne[1] : vis->ne[0];
  int64_t keys = 0;
  for (int64_t t = 0; t < n_q; ++t) {
    const int64_t n = ranges ? load_index(vis, 1, t, 0) - load_index(vis, 0, t, 0) : load_index(vis, t, 0, 0);
    keys += std::max<int64_t>(0, n);
  }
  return keys * node->src[0]->ne[1] * (node->src[0]->ne[0] + node->ne[0]);
}

void run_attention(const loom_tensor_t* dst, Exec& ex) {
  const loom_tensor_t* q = dst->src[0];
  const loom_tensor_t* k = dst->src[1];
  const loom_tensor_t* v = dst->src[2];
  QueryRows rows;
  if (q->ne[2] <= kSplitMaxQueries) rows = load_rows(dst, k->ne[1]);
  // Rows within one chunk: the pairs path gives the same bits with less
  // bookkeeping (a short decode step, e.g. stories260K's, is a few us).
  if (rows.len.empty() || *std::max_element(rows.len.begin(), rows.len.end()) <= kChunkRows) {
    ex.run([&](int ith, int nth) { attend_pairs(dst, ith, nth); });
    return;
  }
  const SplitPlan plan = plan_split(rows, k->ne[2]);
  SplitNode sn{};
  sn.dst = dst;
  sn.k = k;
  sn.v = v;
  sn.rows = &rows;
  sn.plan = &plan;
  std::memcpy(&sn.scale, &dst->op_params[0], sizeof sn.scale);
  sn.n_head = q->ne[1];
  sn.n_head_kv = k->ne[2];
  sn.group = sn.n_head / sn.n_head_kv;
  sn.d = q->ne[0];
  sn.dv = v->ne[0];
  sn.stride = (sn.dv + 2 + 15) / 16 * 16;  // whole lines per partial
  const auto n_counts = static_cast<int64_t>(plan.runs.size()) * sn.n_head_kv;
  const int64_t n_partial = q->ne[2] * sn.n_head * plan.max_chunks * sn.stride;
  char* mem = static_cast<char*>(
      ex.scratch(static_cast<size_t>(n_counts) * sizeof(ChunkCount) + static_cast<size_t>(n_partial) * sizeof(float)));
  sn.counts = reinterpret_cast<ChunkCount*>(mem);
  for (int64_t i = 0; i < n_counts; ++i) new (&sn.counts[i]) ChunkCount();
  sn.partial = reinterpret_cast<float*>(mem + n_counts * static_cast<int64_t>(sizeof(ChunkCount)));
  const UnitFn unit = unit_for(k, v);
  ex.run([&](int ith, int nth) {
    for (int64_t u = ex.claim_chunk(ith, nth, plan.units); u >= 0; u = ex.claim_chunk(ith, nth, plan.units)) {
      unit(sn, u);
    }
  });
}

}  // namespace loom::cpu
