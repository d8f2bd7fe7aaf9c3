// ATTENTION: softmax(scale * q . k_j) v_j over KV rows j < visible[t], against
// a double-precision reference written here. Head sizes 1..128, 1..7
// queries, padded KV views of a cache (visible < n_kv) laid out head-major (the
// llama cache) or with every head in a row, 2000 KV rows, GQA, F16/BF16 K/V,
// K and V of different types, F16 rows read in registers or widened (cpu
// variants), a non-contiguous Q, a zero-length row, out-of-range lengths (a status, not
// a crash), 1 vs 3 threads identical. The ranges form (ABI 1.4): queries of
// several sequences, each over its own [first, end) rows of one cache.
// Decode over 2000-5000 rows (a device may split each head's rows into
// chunks): MQA, GQA, F16 and F32, scores far apart, ranges. A Q8_0 cache
// (ABI 1.6): K and V rows of whole blocks, read as their dequantized values.
#include <cmath>
#include <string>
#include <vector>

#include "loom/runtime/ops.hpp"
#include "conformance/matmul_ref.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

struct AttnCase {
  int64_t d, dv, n_head, n_head_kv, n_tok, n_kv;
  loom_type_t kv_type;
  bool q_permuted;  // Q stored as [D, T, H] and permuted to [D, H, T]
  bool heads_in_rows = false;  // cache rows hold every kv head (else: the llama cache, head-major)
};

class AttentionTest : public OpTest {
 protected:
  // Devices that do not run the op (a plugin built before ABI 1.1, a third
  // party's) are skipped with the reason; the CPU and Vulkan plugins run it.
  void set_up() override { need_form(LOOM_TYPE_F32, 8, false, "ATTENTION"); }

  // The reference device must run a probe node of this form (K and V of
  // kv_type, head size d, prefix lengths or ranges); another device that
  // does not is skipped, naming `what`.
  void need_form(loom_type_t kv_type, int64_t d, bool ranges, const std::string& what) {
    Context probe;
    Tensor* q = unwrap(probe.new_tensor(LOOM_TYPE_F32, {d, 2, 1}, "q"));
    Tensor* k = unwrap(probe.new_tensor(kv_type, {d, 4, 2}, "k"));
    Tensor* vis = unwrap(ranges ? probe.new_tensor(LOOM_TYPE_I32, {2, 1}, "ranges")
                                : probe.new_tensor(LOOM_TYPE_I32, {1}, "vis"));
    Tensor* node = unwrap(op::attention(probe, q, k, k, vis, 1.0f), "attention");
    if (reference_device()) {
      LOOM_ASSERT_TRUE(dev_->supports_op(node));
    } else if (!dev_->supports_op(node)) {
      LOOM_SKIP() << dev_->name() << " does not run " << what << " (its plugin README says why)";
    }
  }

  // K or V of one layer: a view [dim, n_kv, Hkv] of a cache with n_ctx > n_kv
  // rows. The llama graph's cache is [dim, n_ctx, Hkv] (a head's rows
  // contiguous); heads_in_rows: [dim * Hkv, n_ctx] (a row holds every head,
  // head stride dim elements).
  Operand cache_view(loom_type_t t, int64_t dim, int64_t n_kv, int64_t n_head_kv, bool heads_in_rows = false) {
    const int64_t n_ctx = n_kv + 5;
    const size_t head = row_bytes(t, dim);  // one head's part of a row (whole blocks for Q8_0)
    if (!heads_in_rows) {
      Operand base = input(t, {dim, n_ctx, n_head_kv, 1}, -1.0f, 1.0f);
      return view(base, {dim, n_kv, n_head_kv, 1}, {head, head * n_ctx, head * n_ctx * n_head_kv}, 0);
    }
    Operand base = input(t, {dim * n_head_kv, n_ctx, 1, 1}, -1.0f, 1.0f);
    const size_t row = head * static_cast<size_t>(n_head_kv);
    return view(base, {dim, n_kv, n_head_kv, 1}, {row, head, row * n_ctx}, 0);
  }

  Operand make_q(const AttnCase& c) {
    if (!c.q_permuted) return input(LOOM_TYPE_F32, {c.d, c.n_head, c.n_tok, 1}, -2.0f, 2.0f);
    Operand q = input(LOOM_TYPE_F32, {c.d, c.n_tok, c.n_head, 1}, -2.0f, 2.0f);
    return permute(q, 0, 2, 1, 3);
  }

  // The reference and its tolerance. In f32 a score s_j is off by about
  // u * sqrt(D) * |scale| * sum|q k_j|, exp(s_j - m) by u * |s_j - m| more,
  // and the sums over j by u * sqrt(n); each relative error of p_j carries
  // p_j |v_j| into the output. f16: the F16-inputs rule (docs/plugin-abi.md,
  // more than 8 queries in the node): Q, K and V rounded to the nearest F16
  // before the products, and each weight exp(s_j - m) rounded to F16 in the
  // product with V (relative error 2^-11, or 2^-25 absolute below F16's
  // normal range) while the divisor sums them unrounded.
  void reference(const AttnCase& c, const Operand& q, const Operand& k, const Operand& v,
                 const std::vector<int64_t>& vis, float scale, std::vector<double>* ref,
                 std::vector<double>* tol, const std::vector<int64_t>& first = {}, bool f16 = false) {
    auto in = [f16](double x) { return f16 ? f16_rounded(x) : x; };
    const double u32 = unit_roundoff(LOOM_TYPE_F32), u16 = unit_roundoff(LOOM_TYPE_F16), floor16 = abs_floor(LOOM_TYPE_F16);
    const int64_t group = c.n_head / c.n_head_kv;
    ref->assign(static_cast<size_t>(c.dv * c.n_head * c.n_tok), 0.0);
    tol->assign(ref->size(), 0.0);
    for (int64_t t = 0; t < c.n_tok; ++t) {
      for (int64_t h = 0; h < c.n_head; ++h) {
        const int64_t g = h / group;
        // Rows [j0, j0 + n).
        const int64_t j0 = first.empty() ? 0 : first[static_cast<size_t>(t)];
        const int64_t n = vis[static_cast<size_t>(t)] - j0;
        std::vector<double> s(static_cast<size_t>(n)), err(static_cast<size_t>(n));
        double m = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0.0, absdot = 0.0;
          for (int64_t i = 0; i < c.d; ++i) {
            const double x = in(q.h.at(i, h, t)) * in(k.h.at(i, j0 + j, g));
            dot += x;
            absdot += std::fabs(x);
          }
          s[j] = scale * dot;
          err[j] = std::sqrt(static_cast<double>(c.d)) * std::fabs(scale) * absdot;
          m = std::max(m, s[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < n; ++j) sum += std::exp(s[j] - m);
        for (int64_t i = 0; i < c.dv; ++i) {
          double o = 0.0, mag = 0.0;
          for (int64_t j = 0; j < n; ++j) {
            const double p = std::exp(s[j] - m) / sum, vj = in(v.h.at(i, j0 + j, g));
            o += p * vj;
            mag += p * std::fabs(vj) * (2.0 + err[j] + std::fabs(s[j] - m) + std::sqrt(double(n)));
            // The F16 weight's rounding, in units of the f32 terms.
            if (f16) mag += std::fabs(vj) * (p * u16 + floor16 / sum) / u32;
          }
          const size_t at = static_cast<size_t>(flat({c.dv, c.n_head, c.n_tok, 1}, i, h, t, 0));
          (*ref)[at] = o;
          (*tol)[at] = n == 0 ? 0.0 : tol_for(LOOM_TYPE_F32, o, mag, 1);
        }
      }
    }
  }

  // Compares out with the reference: the exact one, or (a device's
  // result under `loom conformance`, more than 8 queries) the F16-inputs
  // rule's, whichever it matches (conformance/matmul_ref.hpp's rule for
  // products, here for ATTENTION).
  void expect_attention(const AttnCase& c, const Operand& q, const Operand& k, const Operand& v,
                        const std::vector<int64_t>& vis, float scale, Tensor* out, const std::string& what,
                        const std::vector<int64_t>& first = {}) {
    const std::vector<double> got = read(out);
    std::vector<MatRounding> modes{MatRounding::kNone};
    if (act_q8_ == ActQ8::kEither && c.n_tok > 8) modes.push_back(MatRounding::kF16);
    std::vector<double> ref, tol;
    pick_reference(modes, got, [&](MatRounding r, std::vector<double>* rf, std::vector<double>* tl) {
      reference(c, q, k, v, vis, scale, rf, tl, first, r == MatRounding::kF16);
    }, &ref, &tol);
    expect_close(got, ref, tol, {c.dv, c.n_head, c.n_tok, 1}, what);
  }

  // v_type: V's type when it differs from K's (LOOM_TYPE_COUNT: c.kv_type).
  void check(const AttnCase& c, const std::vector<int64_t>& vis, loom_type_t v_type = LOOM_TYPE_COUNT) {
    if (v_type == LOOM_TYPE_COUNT) v_type = c.kv_type;
    LOOM_TRACE("attention D " + std::to_string(c.d) + " Dv " + std::to_string(c.dv) + " H " +
                 std::to_string(c.n_head) + "/" + std::to_string(c.n_head_kv) + " T " + std::to_string(c.n_tok) +
                 " n_kv " + std::to_string(c.n_kv) + " K " + type_str(c.kv_type) + " V " + type_str(v_type) +
                 (c.q_permuted ? " q permuted" : "") + (c.heads_in_rows ? " heads in rows" : ""));
    Operand q = make_q(c);
    Operand k = cache_view(c.kv_type, c.d, c.n_kv, c.n_head_kv, c.heads_in_rows);
    Operand v = cache_view(v_type, c.dv, c.n_kv, c.n_head_kv, c.heads_in_rows);
    Operand visible = input_ints(LOOM_TYPE_I32, {c.n_tok, 1, 1, 1}, vis);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
    Tensor* out = unwrap(op::attention(ctx_, q.t, k.t, v.t, visible.t, scale), "attention");
    LOOM_ASSERT_OK(run_threads({out}));
    expect_attention(c, q, k, v, vis, scale, out, "attention result");
  }

  // Causal lengths of a batch at position n_past: n_past + t + 1.
  static std::vector<int64_t> causal(int64_t n_past, int64_t n_tok) {
    std::vector<int64_t> v;
    for (int64_t t = 0; t < n_tok; ++t) v.push_back(n_past + t + 1);
    return v;
  }
};

LOOM_CASE(AttentionTest, HeadSizesAndBatchesOverPaddedCache) {
  seed(1101);
  for (int64_t d : {1, 17, 64, 128}) {
    for (int64_t t : {1, 3, 7}) {
      const int64_t n_kv = d == 128 ? 300 : 64 + 7 * t;
      check({d, d, 4, 4, t, n_kv, LOOM_TYPE_F32, false}, causal(n_kv / 2 - t, t));
    }
  }
}

LOOM_CASE(AttentionTest, GroupedQueryHeads) {
  seed(1102);
  check({64, 64, 8, 2, 3, 300, LOOM_TYPE_F32, false}, causal(250, 3));
  check({16, 24, 8, 2, 7, 40, LOOM_TYPE_F32, false}, {1, 5, 9, 13, 17, 39, 40});
  check({8, 8, 8, 1, 1, 256, LOOM_TYPE_F32, false}, {100});
}

LOOM_CASE(AttentionTest, HalfAndBfloatCache) {
  seed(1103);
  check({64, 64, 8, 2, 3, 300, LOOM_TYPE_F16, false}, causal(200, 3));
  check({17, 17, 4, 4, 7, 50, LOOM_TYPE_F16, false}, causal(20, 7));
  check({128, 128, 4, 2, 1, 257, LOOM_TYPE_BF16, false}, {257});
}

// The F16 cache the llama graph uses by default (--kv-type f16): the cpu
// variants read its rows in registers (F16C) when a row is a multiple of 8
// wide and widen them otherwise; visible lengths off the 8- and 32-key
// blocks, heads of 8 (stories260K) and 64 (768-dim models), D != Dv, GQA,
// and K and V of different types.
LOOM_CASE(AttentionTest, HalfCacheShapes) {
  seed(1109);
  check({64, 64, 12, 12, 1, 320, LOOM_TYPE_F16, false}, {289});
  check({8, 8, 8, 4, 1, 64, LOOM_TYPE_F16, false}, {37});
  check({128, 64, 8, 2, 5, 100, LOOM_TYPE_F16, false}, causal(60, 5));
  check({24, 40, 4, 4, 3, 50, LOOM_TYPE_F16, false}, {1, 8, 50});
  check({20, 16, 4, 2, 2, 40, LOOM_TYPE_F16, false}, {33, 40});
  check({64, 64, 4, 2, 2, 70, LOOM_TYPE_F16, true}, {9, 70});
}

// A cache whose rows hold every kv head (ggml's layout): the cpu kernel
// walks it blocks of rows first; the results are the same.
LOOM_CASE(AttentionTest, CacheRowsHoldingEveryHead) {
  seed(1111);
  check({64, 64, 8, 2, 3, 300, LOOM_TYPE_F32, false, true}, causal(250, 3));
  check({64, 64, 12, 12, 1, 320, LOOM_TYPE_F16, false, true}, {289});
  check({17, 24, 4, 4, 2, 40, LOOM_TYPE_F16, true, true}, {40, 13});
  check({16, 16, 4, 2, 3, 20, LOOM_TYPE_BF16, false, true}, {0, 7, 20});
}

LOOM_CASE(AttentionTest, MixedKeyAndValueTypes) {
  seed(1110);
  check({64, 64, 4, 2, 2, 90, LOOM_TYPE_F16, false}, {90, 41}, LOOM_TYPE_F32);
  check({32, 48, 4, 4, 1, 77, LOOM_TYPE_F32, false}, {77}, LOOM_TYPE_F16);
  check({16, 16, 2, 1, 3, 40, LOOM_TYPE_BF16, false}, causal(30, 3), LOOM_TYPE_F16);
}

// Long KV rows: devices may change kernels with the length (vulkan on a
// CPU implementation: attention_rows for short rows, the workgroup kernel
// here, plugins/vulkan/README.md).
LOOM_CASE(AttentionTest, LongKvRows) {
  seed(1108);
  check({128, 128, 4, 2, 2, 2000, LOOM_TYPE_F16, false}, {2000, 1001});
}

// Decode-sized nodes over long rows: devices may cut each head's rows into
// chunks and combine partial softmaxes (the cpu plugin: up to 4 queries,
// 256-row chunks). MQA over an F32 cache; GQA, D != Dv, 4 queries of one
// sequence whose rows end inside, at and before a chunk's end, and one
// with none.
LOOM_CASE(AttentionTest, DecodeOverLongRows) {
  seed(1112);
  check({64, 64, 8, 1, 1, 3000, LOOM_TYPE_F32, false}, {2999});
  check({64, 48, 12, 4, 4, 5000, LOOM_TYPE_F16, false}, {5000, 4999, 512, 0});
  check({32, 32, 4, 2, 1, 2100, LOOM_TYPE_F16, true, true}, {2100});
}

// Chunks of one query whose maxima lie far apart: the combine rescales each
// by e^(m_c - m), most to 0, and must stay finite.
LOOM_CASE(AttentionTest, LargeScoresOverLongRows) {
  seed(1113);
  const AttnCase c{32, 32, 4, 2, 1, 2000, LOOM_TYPE_F16, false};
  Operand q = input(LOOM_TYPE_F32, {c.d, c.n_head, c.n_tok, 1}, -30.0f, 30.0f);
  Operand k = cache_view(c.kv_type, c.d, c.n_kv, c.n_head_kv);
  Operand v = cache_view(c.kv_type, c.dv, c.n_kv, c.n_head_kv);
  const std::vector<int64_t> vis = {1999};
  Operand visible = input_ints(LOOM_TYPE_I32, {c.n_tok, 1, 1, 1}, vis);
  Tensor* out = unwrap(op::attention(ctx_, q.t, k.t, v.t, visible.t, 4.0f), "attention");
  LOOM_ASSERT_OK(run_threads({out}));
  expect_attention(c, q, k, v, vis, 4.0f, out, "attention result");
}

// Two decode attentions over long rows in one graph (a GPU plugin that
// counts the blocks of a split attention in device memory must leave the
// counts as it found them for the next node; the suite computes the graph
// at two thread counts).
LOOM_CASE(AttentionTest, DecodeAttentionsInOneGraph) {
  seed(1114);
  const AttnCase c{64, 64, 4, 2, 1, 1500, LOOM_TYPE_F16, false};
  Operand q1 = input(LOOM_TYPE_F32, {c.d, c.n_head, c.n_tok, 1});
  Operand q2 = input(LOOM_TYPE_F32, {c.d, c.n_head, c.n_tok, 1});
  Operand k = cache_view(c.kv_type, c.d, c.n_kv, c.n_head_kv);
  Operand v = cache_view(c.kv_type, c.dv, c.n_kv, c.n_head_kv);
  const std::vector<int64_t> vis1 = {1400}, vis2 = {1500};
  Operand visible1 = input_ints(LOOM_TYPE_I32, {c.n_tok, 1, 1, 1}, vis1);
  Operand visible2 = input_ints(LOOM_TYPE_I32, {c.n_tok, 1, 1, 1}, vis2);
  Tensor* out1 = unwrap(op::attention(ctx_, q1.t, k.t, v.t, visible1.t, 0.125f), "attention");
  Tensor* out2 = unwrap(op::attention(ctx_, q2.t, k.t, v.t, visible2.t, 0.125f), "attention");
  LOOM_ASSERT_OK(run_threads({out1, out2}));
  expect_attention(c, q1, k, v, vis1, 0.125f, out1, "first attention");
  expect_attention(c, q2, k, v, vis2, 0.125f, out2, "second attention");
}

LOOM_CASE(AttentionTest, NonContiguousQuery) {
  seed(1104);
  check({64, 64, 8, 2, 7, 100, LOOM_TYPE_F32, true}, causal(40, 7));
  check({17, 17, 4, 4, 3, 33, LOOM_TYPE_F16, true}, causal(0, 3));
}

// Prefill batches (more than 8 queries per head: GPU plugins' tiled
// kernels, blocks of queries sharing each chunk of keys): causal and
// ragged lengths, a block only partly filled, zero-length rows inside a
// block, GQA, head sizes at and past 128, Dv != D, F32 / F16 / BF16 and
// mixed K / V types, a permuted Q, cache rows holding every head.
LOOM_CASE(AttentionTest, PrefillBlocksOfQueries) {
  seed(1109);
  check({64, 64, 8, 2, 37, 300, LOOM_TYPE_F16, false}, causal(250, 37));
  check({128, 128, 4, 4, 20, 60, LOOM_TYPE_F32, false}, causal(40, 20));
  check({17, 24, 4, 2, 9, 40, LOOM_TYPE_BF16, true}, {0, 1, 5, 40, 13, 0, 22, 40, 39});
  check({256, 256, 2, 1, 12, 30, LOOM_TYPE_F16, false}, causal(18, 12));
  check({32, 32, 4, 2, 16, 50, LOOM_TYPE_F16, false, true}, causal(34, 16));
  check({64, 40, 8, 8, 11, 70, LOOM_TYPE_F16, false}, {70, 3, 17, 64, 65, 1, 2, 69, 70, 33, 20}, LOOM_TYPE_F32);
}

// Prefill over F16 caches in the shapes a tensor-core kernel tiles (16
// queries by 16 elements, chunks of keys): head sizes off the tile (80, 40,
// 20) and Dv != D, rows of 16-byte multiples and not, MQA and GQA, blocks of queries over several chunks, a
// partly filled last block, ragged and zero lengths with a permuted Q, and
// scores far apart (a kernel taking each row's max over only some chunks
// overflows or loses the row). A device may round to F16 here (the
// F16-inputs rule, docs/plugin-abi.md).
LOOM_CASE(AttentionTest, PrefillOverHalfCaches) {
  seed(1115);
  check({80, 96, 4, 1, 45, 300, LOOM_TYPE_F16, false}, causal(250, 45));
  check({128, 128, 8, 2, 130, 200, LOOM_TYPE_F16, false}, causal(70, 130));
  check({40, 40, 2, 2, 20, 90, LOOM_TYPE_F16, true},
        {0, 90, 5, 33, 1, 64, 65, 2, 0, 17, 31, 32, 33, 89, 90, 40, 41, 7, 8, 9});
  check({20, 12, 4, 2, 12, 50, LOOM_TYPE_F16, false}, causal(38, 12));  // rows of 40 and 24 bytes
  check({64, 64, 8, 1, 40, 120, LOOM_TYPE_F16, false}, causal(80, 40));  // 8 heads on one kv head
  check({32, 32, 6, 2, 24, 60, LOOM_TYPE_F16, false}, causal(36, 24));   // groups of 3
  const AttnCase c{64, 64, 4, 2, 20, 150, LOOM_TYPE_F16, false};
  Operand q = input(LOOM_TYPE_F32, {c.d, c.n_head, c.n_tok, 1}, -30.0f, 30.0f);
  Operand k = cache_view(c.kv_type, c.d, c.n_kv, c.n_head_kv);
  Operand v = cache_view(c.kv_type, c.dv, c.n_kv, c.n_head_kv);
  const std::vector<int64_t> vis = causal(130, 20);
  Operand visible = input_ints(LOOM_TYPE_I32, {c.n_tok, 1, 1, 1}, vis);
  Tensor* out = unwrap(op::attention(ctx_, q.t, k.t, v.t, visible.t, 4.0f), "attention");
  LOOM_ASSERT_OK(run_threads({out}));
  expect_attention(c, q, k, v, vis, 4.0f, out, "attention result (large scores)");
}

LOOM_CASE(AttentionTest, ZeroLengthRowIsZero) {
  seed(1105);
  check({16, 16, 4, 2, 3, 20, LOOM_TYPE_F32, false}, {0, 7, 20});
}

// Scores far apart (large scale): the online softmax must not overflow.
LOOM_CASE(AttentionTest, LargeScoresStayFinite) {
  seed(1106);
  const AttnCase c{32, 32, 2, 2, 2, 70, LOOM_TYPE_F32, false};
  Operand q = input(LOOM_TYPE_F32, {c.d, c.n_head, c.n_tok, 1}, -30.0f, 30.0f);
  Operand k = cache_view(c.kv_type, c.d, c.n_kv, c.n_head_kv);
  Operand v = cache_view(c.kv_type, c.dv, c.n_kv, c.n_head_kv);
  const std::vector<int64_t> vis = {70, 33};
  Operand visible = input_ints(LOOM_TYPE_I32, {c.n_tok, 1, 1, 1}, vis);
  Tensor* out = unwrap(op::attention(ctx_, q.t, k.t, v.t, visible.t, 4.0f), "attention");
  LOOM_ASSERT_OK(run_threads({out}));
  expect_attention(c, q, k, v, vis, 4.0f, out, "attention result");
}

LOOM_CASE(AttentionTest, OutOfRangeLengthIsAnError) {
  seed(1107);
  for (int64_t bad : {int64_t{21}, int64_t{-1}}) {
    Operand q = input(LOOM_TYPE_F32, {8, 2, 2, 1});
    Operand k = cache_view(LOOM_TYPE_F32, 8, 20, 2);
    Operand v = cache_view(LOOM_TYPE_F32, 8, 20, 2);
    Operand visible = input_ints(LOOM_TYPE_I32, {2, 1, 1, 1}, {3, bad});
    Tensor* out = unwrap(op::attention(ctx_, q.t, k.t, v.t, visible.t, 1.0f), "attention");
    const Status st = run({out});
    LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
    LOOM_EXPECT_NE(st.message().find("visible[1] = " + std::to_string(bad)), std::string::npos) << st.to_string();
  }
  // The same inside a prefill batch (query 10 of 12), over F32 and F16
  // caches (GPU plugins may take another kernel for each).
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16}) {
    Operand q = input(LOOM_TYPE_F32, {8, 2, 12, 1});
    Operand k = cache_view(t, 8, 20, 2);
    Operand v = cache_view(t, 8, 20, 2);
    Operand visible = input_ints(LOOM_TYPE_I32, {12, 1, 1, 1}, {9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 21, 20});
    Tensor* out = unwrap(op::attention(ctx_, q.t, k.t, v.t, visible.t, 1.0f), "attention");
    const Status st = run({out});
    LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << type_str(t) << ": " << st.to_string();
    LOOM_EXPECT_NE(st.message().find("visible[10] = 21"), std::string::npos) << type_str(t) << ": " << st.to_string();
  }
}

// The ranges form (ABI 1.4): visible I32 [2, T], query t over rows
// [first[t], end[t]) — a batch of several sequences, each in its own rows of
// one cache (the llama session's slots). Devices without the form are
// skipped with the reason; the cpu plugin runs it.
class AttentionRangesTest : public AttentionTest {
 protected:
  void set_up() override { need_form(LOOM_TYPE_F32, 8, true, "ATTENTION's ranges form (ABI 1.4)"); }

  void check_ranges(const AttnCase& c, const std::vector<int64_t>& first, const std::vector<int64_t>& end) {
    LOOM_TRACE("attention ranges D " + std::to_string(c.d) + " H " + std::to_string(c.n_head) + "/" +
               std::to_string(c.n_head_kv) + " T " + std::to_string(c.n_tok) + " n_kv " + std::to_string(c.n_kv) +
               " K/V " + type_str(c.kv_type));
    Operand q = make_q(c);
    Operand k = cache_view(c.kv_type, c.d, c.n_kv, c.n_head_kv, c.heads_in_rows);
    Operand v = cache_view(c.kv_type, c.dv, c.n_kv, c.n_head_kv, c.heads_in_rows);
    std::vector<int64_t> pairs;
    for (size_t t = 0; t < first.size(); ++t) {
      pairs.push_back(first[t]);
      pairs.push_back(end[t]);
    }
    Operand ranges = input_ints(LOOM_TYPE_I32, {2, c.n_tok, 1, 1}, pairs);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
    Tensor* out = unwrap(op::attention(ctx_, q.t, k.t, v.t, ranges.t, scale), "attention");
    LOOM_ASSERT_OK(run_threads({out}));
    expect_attention(c, q, k, v, end, scale, out, "attention result", first);
  }
};

// Decode of 4 sequences in slots of 64 rows (one token each), a prefill
// chunk of one sequence beside two decodes, an empty range, F16 and F32,
// GQA, a cache whose rows hold every head.
LOOM_CASE(AttentionRangesTest, SequencesInSlotsOfOneCache) {
  seed(1121);
  check_ranges({64, 64, 8, 2, 4, 256, LOOM_TYPE_F16, false}, {0, 64, 128, 192}, {17, 64 + 40, 128 + 1, 192 + 64});
  check_ranges({16, 16, 4, 4, 5, 96, LOOM_TYPE_F32, false}, {32, 32, 32, 0, 64}, {32 + 10, 32 + 11, 32 + 12, 5, 64 + 32});
  check_ranges({8, 8, 8, 4, 3, 40, LOOM_TYPE_F16, true}, {10, 20, 20}, {10, 23, 40});
  check_ranges({32, 32, 4, 2, 2, 70, LOOM_TYPE_F16, false, true}, {0, 35}, {35, 70});
}

// A prefill chunk of 16 tokens of one sequence beside 4 decodes in other
// slots (one with an empty range), and a chunk of 10 queries whose ranges
// start apart: blocks of queries whose rows differ.
LOOM_CASE(AttentionRangesTest, PrefillChunkBesideDecodes) {
  seed(1124);
  std::vector<int64_t> first, end;
  for (int64_t t = 0; t < 16; ++t) {
    first.push_back(64);
    end.push_back(64 + 20 + t + 1);
  }
  for (int64_t s : {0, 128, 192, 224}) {
    first.push_back(s);
    end.push_back(s == 192 ? s : s + 30);
  }
  check_ranges({64, 64, 8, 2, 20, 256, LOOM_TYPE_F16, false}, first, end);
  check_ranges({16, 16, 4, 4, 10, 96, LOOM_TYPE_F32, false}, {0, 3, 6, 9, 12, 40, 41, 42, 90, 0},
               {10, 13, 16, 19, 22, 50, 51, 52, 96, 0});
}

// Decode of three sequences over long rows of one cache (two sharing their
// first row, one with an empty range), F32 and F16.
LOOM_CASE(AttentionRangesTest, LongRangesOfDecode) {
  seed(1123);
  check_ranges({64, 64, 8, 2, 4, 4096, LOOM_TYPE_F16, false}, {0, 1000, 1000, 3000}, {900, 3100, 3101, 3000});
  check_ranges({32, 32, 4, 4, 2, 2600, LOOM_TYPE_F32, false}, {0, 1300}, {1300, 2600});
}

LOOM_CASE(AttentionRangesTest, RangeOutsideTheRowsIsAnError) {
  seed(1122);
  const std::vector<std::vector<int64_t>> bad = {{3, 21}, {-1, 4}, {9, 5}};
  for (const auto& pair : bad) {
    Operand q = input(LOOM_TYPE_F32, {8, 2, 2, 1});
    Operand k = cache_view(LOOM_TYPE_F32, 8, 20, 2);
    Operand v = cache_view(LOOM_TYPE_F32, 8, 20, 2);
    Operand ranges = input_ints(LOOM_TYPE_I32, {2, 2, 1, 1}, {0, 3, pair[0], pair[1]});
    Tensor* out = unwrap(op::attention(ctx_, q.t, k.t, v.t, ranges.t, 1.0f), "attention");
    const Status st = run({out});
    LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
    LOOM_EXPECT_NE(st.message().find("of query 1"), std::string::npos) << st.to_string();
  }
}

// An 8-bit cache (ABI 1.6): K and V of Q8_0 rows (whole blocks of 32), the
// reference reading their dequantized values d * q. Devices without the
// form are skipped with the reason; the cpu plugin runs it.
class AttentionQ8CacheTest : public AttentionRangesTest {
 protected:
  void set_up() override { need_form(LOOM_TYPE_Q8_0, 32, true, "ATTENTION over a Q8_0 cache (ABI 1.6)"); }
};

// Decode and prefill over a head-major Q8_0 cache: heads of 32, 64 and
// 128 (one to four blocks), GQA, lengths off the 8- and 32-key blocks, a
// zero-length row, a permuted Q, Q8_0 K beside F16 or F32 V and the other
// way round, rows holding every head, long rows a device may cut into
// chunks, and sequences in slots (the ranges form).
LOOM_CASE(AttentionQ8CacheTest, EightBitCache) {
  seed(1131);
  check({64, 64, 12, 12, 1, 320, LOOM_TYPE_Q8_0, false}, {289});
  check({32, 32, 8, 2, 5, 100, LOOM_TYPE_Q8_0, false}, causal(60, 5));
  check({128, 128, 4, 2, 3, 90, LOOM_TYPE_Q8_0, true}, {0, 41, 90});
  check({64, 64, 8, 2, 37, 300, LOOM_TYPE_Q8_0, false}, causal(250, 37));
  check({64, 64, 4, 2, 2, 90, LOOM_TYPE_Q8_0, false}, {90, 41}, LOOM_TYPE_F16);
  check({64, 32, 4, 4, 1, 77, LOOM_TYPE_F32, false}, {77}, LOOM_TYPE_Q8_0);
  check({64, 64, 8, 2, 3, 70, LOOM_TYPE_Q8_0, false, true}, {9, 70, 33});
  check({64, 64, 8, 2, 2, 3000, LOOM_TYPE_Q8_0, false}, {2999, 1500});
  check_ranges({64, 64, 8, 2, 4, 256, LOOM_TYPE_Q8_0, false}, {0, 64, 128, 192}, {17, 64 + 40, 128 + 1, 192 + 64});
  check_ranges({32, 32, 4, 4, 3, 96, LOOM_TYPE_Q8_0, false, true}, {0, 32, 64}, {31, 32, 96});
}

}  // namespace
}  // namespace loom::conformance
