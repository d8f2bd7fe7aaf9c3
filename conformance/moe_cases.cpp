// The mixture-of-experts ops of ABI 1.5: MUL_MAT_ID against one dense
// product per (token, slot) for every weight type MUL_MAT takes — repeated
// ids, experts nobody picked, B shared by a token's slots (Nb = 1) or one
// column per slot (Nb = U), strided weights, activations and ids, decode (1
// token) and prefill (many tokens grouped by expert), 1 vs 3 threads — and
// an id outside the experts as an error; TOP_K against a stable sort (ties,
// NaN, -inf, strided rows).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "loom/runtime/ops.hpp"
#include "conformance/matmul_ref.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

struct IdCase {
  int64_t k, m, n_expert, n_used, n_tok;
  bool shared_b;  // B [K, 1, T] (every slot reads the token's column) or [K, U, T]
};

class MulMatIdTest : public OpTest {
 protected:
  // Ids drawn from `pool` (so the other experts are never picked), repeats
  // allowed within a token.
  std::vector<int64_t> draw_ids(const IdCase& c, const std::vector<int64_t>& pool) {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < c.n_used * c.n_tok; ++i) {
      ids.push_back(pool[static_cast<size_t>(rand_int(0, static_cast<int64_t>(pool.size()) - 1))]);
    }
    return ids;
  }

  void check(loom_type_t ta, const IdCase& c, Layout la, Layout lb, bool strided_ids,
             const std::vector<int64_t>& pool) {
    LOOM_TRACE("mul_mat_id " + type_str(ta) + " A " + shape_str({c.k, c.m, c.n_expert, 1}) + " " + layout_name(la) +
               ", U " + std::to_string(c.n_used) + " T " + std::to_string(c.n_tok) +
               (c.shared_b ? " shared B " : " B per slot ") + layout_name(lb) + (strided_ids ? ", strided ids" : ""));
    Operand a = make(ta, {c.k, c.m, c.n_expert, 1}, la);
    const int64_t nb = c.shared_b ? 1 : c.n_used;
    Operand b = make(LOOM_TYPE_F32, {c.k, nb, c.n_tok, 1}, lb);
    const std::vector<int64_t> id_vals = draw_ids(c, pool);
    Operand ids = input_ints(LOOM_TYPE_I32, {c.n_used, c.n_tok, 1, 1}, id_vals);
    if (strided_ids) {
      // The same ids as the transpose of a [T, U] leaf.
      std::vector<int64_t> tr;
      for (int64_t u = 0; u < c.n_used; ++u) {
        for (int64_t t = 0; t < c.n_tok; ++t) tr.push_back(id_vals[static_cast<size_t>(t * c.n_used + u)]);
      }
      ids = transpose(input_ints(LOOM_TYPE_I32, {c.n_tok, c.n_used, 1, 1}, tr));
    }
    Tensor* out = unwrap(op::mul_mat_id(ctx_, a.t, b.t, ids.t), "mul_mat_id");
    LOOM_ASSERT_OK(run_threads({out}));
    auto reference = [&](MatRounding r, std::vector<double>* ref, std::vector<double>* tol) {
      ref->clear();
      tol->clear();
      for (int64_t t = 0; t < c.n_tok; ++t) {
        for (int64_t u = 0; u < c.n_used; ++u) {
          const int64_t e = id_vals[static_cast<size_t>(t * c.n_used + u)];
          const int64_t col = c.shared_b ? 0 : u;
          const std::vector<double> bc = b_column(b.h, col, t, 0, r, act_block(ta));
          for (int64_t m = 0; m < c.m; ++m) {
            double sum = 0.0, mag = 0.0;
            for (int64_t k = 0; k < c.k; ++k) {
              const double p = a_value(a.h.at(k, m, e), r) * bc[static_cast<size_t>(k)];
              sum += p;
              mag += std::fabs(p);
            }
            ref->push_back(sum);
            tol->push_back(tol_for(LOOM_TYPE_F32, sum, mag, c.k));
          }
        }
      }
    };
    std::vector<double> ref, tol;
    // B may be rounded whatever its layout: a plugin gathers each expert's
    // columns into dense rows before MUL_MAT's int8 path. With more than 8
    // tokens, MUL_MAT's F16-inputs rule too (tensor-core prefill).
    const std::vector<double> got = read(out);
    pick_reference(mat_roundings(act_q8_, block_elems(ta) > 1, c.n_tok), got, reference, &ref, &tol);
    expect_close(got, ref, tol, {c.m, c.n_used, c.n_tok, 1}, "mul_mat_id result");
  }
};

LOOM_CASE(MulMatIdTest, EveryWeightType) {
  seed(2801);
  int i = 0;
  for (loom_type_t t : kMulMatWeightTypes) {
    const int64_t kb = block_elems(t) > 1 ? block_elems(t) : 40;
    const std::vector<Layout> la = layouts_for(t);
    const std::vector<Layout> lb = layouts_for(LOOM_TYPE_F32);
    // Decode: one token, two of four experts (3 never picked).
    check(t, {kb, 19, 4, 2, 1, true}, Layout::kDense, Layout::kDense, false, {0, 1, 2});
    // A few tokens, a slot column each, the same expert twice in a token.
    check(t, {2 * kb, 11, 5, 3, 4, false}, la[1 % la.size()], lb[1 + i % 3], i % 2 == 1, {1, 3, 4});
    // One expert only.
    check(t, {kb, 7, 3, 2, 3, true}, la[(i + 2) % la.size()], Layout::kDense, false, {2});
    // Decode with more chosen experts than threads (a plugin may give each
    // thread whole experts): one token, top-4 of 8.
    check(t, {kb, 16, 8, 4, 1, true}, Layout::kDense, Layout::kDense, false, {0, 1, 2, 3, 4, 5, 6, 7});
    ++i;
  }
}

LOOM_CASE(MulMatIdTest, PrefillGroupsTokensByExpert) {
  // 37 tokens over 8 experts, top-2, at a size where the kernels tile:
  // every expert gets a different number of tokens, two none.
  seed(2802);
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_K}) {
    check(t, {256, 96, 8, 2, 37, true}, Layout::kDense, Layout::kDense, false, {0, 1, 1, 1, 2, 4, 4, 5, 7});
    check(t, {256, 64, 8, 2, 37, false}, Layout::kDense, Layout::kDense, false, {0, 2, 3, 3, 3, 3, 6, 7});
  }
  // Every slot of 40 tokens on one expert (ids repeated within a token):
  // 160 pairs, more than two tiles of 64 for that expert, a ragged M.
  check(LOOM_TYPE_Q4_0, {256, 70, 4, 4, 40, false}, Layout::kDense, Layout::kDense, false, {3});
  check(LOOM_TYPE_F32, {256, 70, 4, 4, 40, true}, Layout::kDense, Layout::kDense, true, {3});
}

LOOM_CASE(MulMatIdTest, IdOutsideTheExpertsIsAnError) {
  seed(2803);
  for (int64_t bad : {4, -1, 1000}) {
    Operand a = input(LOOM_TYPE_F32, {32, 8, 4, 1});
    Operand b = input(LOOM_TYPE_F32, {32, 1, 2, 1});
    Operand ids = input_ints(LOOM_TYPE_I32, {2, 2, 1, 1}, {0, 3, 1, bad});
    Tensor* out = unwrap(op::mul_mat_id(ctx_, a.t, b.t, ids.t), "mul_mat_id");
    const Status st = run({out});
    LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
    LOOM_EXPECT_NE(st.message().find("of token 1"), std::string::npos) << st.to_string();
  }
  // The same inside a prefill batch (12 tokens: a plugin may group them by
  // expert before any product runs).
  for (int64_t bad : {4, -1}) {
    Operand a = input(LOOM_TYPE_F32, {256, 8, 4, 1});
    Operand b = input(LOOM_TYPE_F32, {256, 1, 12, 1});
    std::vector<int64_t> id_vals(24, 2);
    id_vals[3] = bad;  // slot 1 of token 1
    Operand ids = input_ints(LOOM_TYPE_I32, {2, 12, 1, 1}, id_vals);
    Tensor* out = unwrap(op::mul_mat_id(ctx_, a.t, b.t, ids.t), "mul_mat_id");
    const Status st = run({out});
    LOOM_EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
    LOOM_EXPECT_NE(st.message().find("of token 1"), std::string::npos) << st.to_string();
  }
}

class TopKTest : public OpTest {
 protected:
  void check(const Shape& ne, int k, Layout layout, bool ties) {
    LOOM_TRACE("top_k " + shape_str(ne) + " k " + std::to_string(k) + " " + layout_name(layout) +
               (ties ? " with ties" : ""));
    std::vector<float> vals;
    if (ties) {
      // Few distinct values: many ties, plus NaN and -inf in each row.
      for_each_index(ne, [&](int64_t, int64_t, int64_t, int64_t) {
        const int64_t r = rand_int(0, 9);
        vals.push_back(r == 0 ? NAN : r == 1 ? -INFINITY : static_cast<float>(r % 4) * 0.5f);
      });
    }
    Operand a = ties ? input_values(LOOM_TYPE_F32, ne, vals) : make(LOOM_TYPE_F32, ne, layout, -4.0f, 4.0f);
    Tensor* out = unwrap(op::top_k(ctx_, a.t, k), "top_k");
    LOOM_ASSERT_OK(run_threads({out}));
    std::vector<double> ref;
    for (int64_t i3 = 0; i3 < ne[3]; ++i3) {
      for (int64_t i2 = 0; i2 < ne[2]; ++i2) {
        for (int64_t i1 = 0; i1 < ne[1]; ++i1) {
          std::vector<int64_t> idx(static_cast<size_t>(ne[0]));
          std::iota(idx.begin(), idx.end(), 0);
          // x before y: NaN after every number; equal values keep index order.
          std::stable_sort(idx.begin(), idx.end(), [&](int64_t x, int64_t y) {
            const double vx = a.h.at(x, i1, i2, i3), vy = a.h.at(y, i1, i2, i3);
            if (std::isnan(vx)) return false;
            return std::isnan(vy) || vx > vy;
          });
          for (int j = 0; j < k; ++j) ref.push_back(static_cast<double>(idx[static_cast<size_t>(j)]));
        }
      }
    }
    expect_equal(read(out), ref, {k, ne[1], ne[2], ne[3]}, "top_k indices");
  }
};

LOOM_CASE(TopKTest, RowsOfEveryLength) {
  seed(2901);
  int i = 0;
  const Shape shapes[] = {{1, 3, 1, 1}, {7, 2, 2, 1}, {8, 5, 1, 1}, {33, 3, 1, 2}, {128, 4, 1, 1}, {300, 2, 1, 1}};
  for (const Shape& ne : shapes) {
    for (int k : {1, 2, 8, 64}) {
      if (k > ne[0]) continue;
      const std::vector<Layout> l = layouts_for(LOOM_TYPE_F32);
      check(ne, k, l[static_cast<size_t>(i++) % l.size()], false);
      check(ne, k, Layout::kDense, true);
    }
  }
  check({300, 2, 1, 1}, 300, Layout::kDense, true);
}

}  // namespace
}  // namespace loom::conformance
